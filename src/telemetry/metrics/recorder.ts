// The metrics as the rest of telemetry sees them, without prom-client: recordings made before the registry exists
// are kept, in order, and applied when it is created. prom-client is imported on the first recording, the first
// scrape or `load()` (the server calls it once it is listening), so start-up does not pay for it and no count made
// meanwhile is lost.
import type { GuardianMetrics, GuardianMetricsOptions } from './index.ts';

type Recording = (metrics: GuardianMetrics) => void;

/** Recordings kept while prom-client loads; past it they are dropped and counted (the load is stuck). */
const MAX_PENDING = 65_536;

export class MetricsRecorder {
  readonly #options: GuardianMetricsOptions;
  readonly #onLoadError: (err: unknown) => void;
  #metrics: GuardianMetrics | undefined;
  #loading: Promise<GuardianMetrics | undefined> | undefined;
  #pending: Recording[] = [];
  #lost = 0;

  constructor(options: GuardianMetricsOptions, onLoadError: (err: unknown) => void) {
    this.#options = options;
    this.#onLoadError = onLoadError;
  }

  /** Applies `recording` now, or once the registry exists. Never throws, never waits. */
  record(recording: Recording): void {
    if (this.#metrics) return recording(this.#metrics);
    if (this.#pending.length < MAX_PENDING) this.#pending.push(recording);
    else this.#lost++;
    void this.load();
  }

  /** The registry, created on the first call (undefined when prom-client could not be loaded). */
  load(): Promise<GuardianMetrics | undefined> {
    this.#loading ??= import('./index.ts').then(
      ({ createGuardianMetrics }) => {
        const metrics = createGuardianMetrics(this.#options);
        for (const recording of this.#pending) recording(metrics);
        if (this.#lost > 0) metrics.dropped('metrics', this.#lost);
        this.#pending = [];
        this.#metrics = metrics;
        return metrics;
      },
      (err: unknown) => {
        this.#pending = [];
        this.#onLoadError(err);
        return undefined;
      },
    );
    return this.#loading;
  }
}
