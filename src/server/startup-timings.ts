// Start-up phases of `guardian serve`, as the process itself saw them. With GUARDIAN_STARTUP_TIMINGS=1 the server
// writes one JSON line on stderr once it can answer (`{"startup":{…}}`), which bench/startup.ts reads: the figures
// come from inside the process, so a slow client or a loaded machine cannot be mistaken for a slow phase.
import { performance } from 'node:perf_hooks';

export type StartupPhase = 'modules' | 'keys' | 'store' | 'bundle' | 'guardian' | 'listen' | 'first_answer';

/** Wall-clock bounds of a phase in ms since the process started, and the CPU time the process spent meanwhile. */
export interface PhaseTiming {
  startMs: number;
  endMs: number;
  /** Every thread of the process: wall time far above it means the phase waited (I/O, a busy machine). */
  cpuMs: number;
}

export interface StartupReport {
  /** ms since the process started at which the server could answer (listening, or the first stdio answer). */
  readyMs: number;
  /** CPU time of the whole process until then. */
  cpuMs: number;
  phases: Partial<Record<StartupPhase, PhaseTiming>>;
}

const round = (ms: number): number => Math.round(ms * 10) / 10;
const cpuNow = (): number => {
  const { user, system } = process.cpuUsage();
  return (user + system) / 1000;
};

export class StartupTimings {
  readonly #phases: StartupReport['phases'] = {};

  /** Whether the environment asks for the report. */
  static enabled(env: Readonly<Record<string, string | undefined>>): boolean {
    return env.GUARDIAN_STARTUP_TIMINGS === '1';
  }

  /** Starts `phase` now; call the returned function when it ends. */
  begin(phase: StartupPhase): () => void {
    const startMs = performance.now();
    const cpuStart = cpuNow();
    return () => {
      this.#phases[phase] = {
        startMs: round(startMs),
        endMs: round(performance.now()),
        cpuMs: round(cpuNow() - cpuStart),
      };
    };
  }

  /** Records `phase` as running from the process start until now. */
  sinceProcessStart(phase: StartupPhase): void {
    this.#phases[phase] = { startMs: 0, endMs: round(performance.now()), cpuMs: round(cpuNow()) };
  }

  report(): StartupReport {
    return { readyMs: round(performance.now()), cpuMs: round(cpuNow()), phases: { ...this.#phases } };
  }
}
