// Where the telemetry records go once read off the request path: the export thread (worker.ts), or exporters on
// this thread when sinks are handed over as objects, which cannot cross threads. Either way `send` never blocks:
// what the thread cannot take waits in the caller's backlog, and a crashed thread is started again.
import { WorkerThread } from '../worker-thread/index.ts';
import type { EventSink } from './events/index.ts';
import { openExporters, type ExporterDepths, type ExporterHooks, type ExporterSettings } from './exporters.ts';
import type { StepRecord } from './facts.ts';
import type { Logger } from './logging/index.ts';
import type { ExportNotice, ExportProtocol } from './worker.ts';

/** Export threads started again after a crash, at most, before the exporters are given up (everything dropped). */
const MAX_RESTARTS = 3;

/** Where records go: the export thread, or exporters on this thread (sinks given as objects). */
export interface ExportChannel {
  /** Records can be sent now (false while the export thread holds its window of unanswered records). */
  ready(): boolean;
  send(records: StepRecord[]): void;
  /** Items waiting per exporter, and the records sent and not yet answered. */
  depths(): ExporterDepths;
  inFlight(): number;
  /**
   * Exports what is queued and `last` (the caller's backlog), then stops; gives up at `until` (epoch ms), counting
   * what is left as dropped. The caller also bounds the wait (kill).
   */
  close(last: StepRecord[], until: number): Promise<void>;
  /**
   * Stops at once, without waiting for the thread to end, whatever is left (what the exporters last reported
   * holding, and the records handed at close, are counted as dropped).
   */
  kill(): Promise<void>;
}

export async function inProcessChannel(
  settings: ExporterSettings,
  hooks: ExporterHooks,
  sinks: EventSink[],
): Promise<ExportChannel> {
  const exporters = await openExporters(settings, hooks, sinks);
  return {
    ready: () => true,
    send: (records) => exporters.record(records),
    depths: () => exporters.depths(),
    inFlight: () => 0,
    close: (last, until) => exporters.shutdown(last, until),
    kill: async () => {},
  };
}

/** An export thread and whether what it held is accounted for: after that, nothing it says is counted again. */
interface RunningThread {
  readonly t: WorkerThread<ExportProtocol>;
  /** Its holdings were counted as lost (it died, or was stopped at the deadline), or it answered the shutdown. */
  settled: boolean;
}

/**
 * Stops a thread without waiting for it: a thread held in a system call (a file on a hung mount) stops only once
 * that call returns, and close() must not wait for that.
 */
function stop(t: WorkerThread<ExportProtocol>): void {
  t.terminate().catch(() => {});
}

/**
 * The export thread (worker.ts). At most `window` records are sent and not yet answered; beyond, they wait in the
 * backlog (and past its bound are dropped). A crashed thread loses what it held (counted) and is started again.
 *
 * Every record handed over is counted once if it is lost: a batch not answered when the thread dies or is stopped
 * is counted as the records it was; what the thread's exporters hold is known from its last answer (less what it
 * has said it dropped since), and counted when the thread dies or is stopped at the shutdown deadline; what it
 * drops during the shutdown comes with its answer, so either that answer or the deadline counts it.
 */
export async function threadChannel(
  settings: ExporterSettings,
  hooks: ExporterHooks,
  window: number,
  logger: Logger,
  onReady: () => void,
): Promise<ExportChannel> {
  /** Nothing held, per exporter the settings open. */
  const nothingHeld = (): ExporterDepths => {
    const none: ExporterDepths = {};
    if (settings.otlp) none.otlp = 0;
    for (const sink of settings.ocsf?.sinks ?? []) none[`ocsf_${sink.kind}`] = 0;
    return none;
  };
  /** What the export thread's exporters hold, as its last answer said, less what it has said it dropped since. */
  let depths = nothingHeld();
  let inFlight = 0;
  let thread: RunningThread | null = null;
  let closing = false;
  /** Records handed over with the shutdown (the backlog), which the exporters' depths do not include yet. */
  let handedAtClose = 0;
  let restarts = 0;

  /** Counts what the export thread held as lost: its exporters' items and the records handed at close. */
  function lose(why: string): void {
    for (const [exporter, depth] of Object.entries(depths)) if (depth > 0) hooks.dropped(exporter, depth, why);
    if (handedAtClose > 0) hooks.dropped('pipeline', handedAtClose, why);
    depths = nothingHeld();
    handedAtClose = 0;
  }
  function heard(n: ExportNotice): void {
    if (n.kind === 'failed') return hooks.failed(n.message);
    // No longer held: not counted a second time should the thread be lost before its next answer.
    if (n.exporter in depths) depths[n.exporter] = Math.max(0, depths[n.exporter] - n.count);
    hooks.dropped(n.exporter, n.count, n.why);
  }
  function crashed(running: RunningThread, err: Error): void {
    // A thread that never opened fails its `open` request instead (openTelemetry reports it).
    if (thread !== running) return;
    thread = null;
    if (!running.settled) {
      running.settled = true;
      lose(err.message);
    }
    if (closing) return;
    logger.error({ err: err.message }, 'telemetry: the export thread died');
    if (restarts++ >= MAX_RESTARTS) {
      logger.error('telemetry: export thread given up; spans and OCSF events are dropped from now on');
      return;
    }
    start().then(onReady, (e: unknown) =>
      logger.error({ err: e instanceof Error ? e.message : String(e) }, 'telemetry: export thread restart failed'),
    );
  }
  async function start(): Promise<void> {
    const running: RunningThread = {
      settled: false,
      t: new WorkerThread<ExportProtocol>(new URL('./worker.ts', import.meta.url), {
        name: 'telemetry export thread',
        // Held open only while a batch is unanswered, like the exporters' own timers (unref'd) before it.
        unrefWhenIdle: true,
        onNotice: (_, body) => {
          if (!running.settled) heard(body as ExportNotice);
        },
        onCrash: (err) => crashed(running, err),
      }),
    };
    try {
      await running.t.request('open', settings);
    } catch (err) {
      await running.t.terminate().catch(() => {});
      throw err;
    }
    // Closed while this thread was starting again: nothing was sent to it, and close() counted the backlog.
    if (closing) return stop(running.t);
    thread = running;
  }
  await start();
  return {
    ready: () => thread !== null && !closing && inFlight < window,
    send(records) {
      const running = thread;
      if (!running) return hooks.dropped('pipeline', records.length, 'telemetry export thread unavailable');
      inFlight += records.length;
      running.t.request('records', records).then(
        (answer) => {
          depths = answer;
          inFlight -= records.length;
          onReady();
        },
        (err: unknown) => {
          inFlight -= records.length;
          hooks.dropped('pipeline', records.length, err instanceof Error ? err.message : String(err));
          onReady();
        },
      );
    },
    depths: () => depths,
    inFlight: () => inFlight,
    async close(last, until) {
      closing = true;
      const running = thread;
      if (!running) return hooks.dropped('pipeline', last.length, 'telemetry export thread unavailable');
      handedAtClose = last.length;
      try {
        const drops = await running.t.request('shutdown', { records: last, until });
        // Answered: everything it held was exported, or is among these drops.
        running.settled = true;
        depths = nothingHeld();
        handedAtClose = 0;
        for (const n of drops) hooks.dropped(n.exporter, n.count, n.why);
      } finally {
        stop(running.t);
      }
    },
    async kill() {
      closing = true;
      const running = thread;
      if (!running) return;
      stop(running.t);
      if (running.settled) return;
      // No answer by the caller's deadline (the exporters give up before it, so this thread is stuck or busy past
      // it): what it last said it held is lost, as are the records it was handed at close.
      running.settled = true;
      lose('export thread stopped at the shutdown deadline');
    },
  };
}
