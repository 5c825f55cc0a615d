// Prometheus metrics (prom-client, text exposition format): decisions by method and disposition, reason codes,
// JSON-RPC errors, message latency per method, latency per pipeline stage, store commits (transaction time and
// batch size per writer), replay jobs, shadow evaluations, telemetry queue depth and drops, the active policy
// bundle as an info metric, and the process metrics prom-client collects. Loaded on first use (recorder.ts), so a
// start-up does not pay for prom-client before the Guardian serves.
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';
import { STEP_METHODS } from '../../acs/methods.ts';
import { PIPELINE_STAGES, type RequestObservation } from '../observation.ts';

/** What a shadow candidate has done so far (the lifecycle's counts, reset when the shadow target changes). */
export interface ShadowCounts {
  revision: string | null;
  evaluated: number;
  differences: number;
  errors: number;
  skipped: number;
}

export type CommitKind = 'step' | 'append' | 'decision';
export type ReplayJobStatus = 'running' | 'done' | 'failed' | 'cancelled';

export interface GuardianMetricsOptions {
  /** The policy revision in force now (the engine's, which the lifecycle swaps). */
  policyRevision(): string;
  /** The SHA-256 of the bundle in force, when a bundle registry serves it. */
  policySha256?(): string | undefined;
  /** Telemetry items waiting per exporter (`otlp`, `ocsf_file`, …). */
  queueDepths(): Record<string, number>;
  /** The shadow candidate's counts, when one is set. */
  shadow?(): ShadowCounts | undefined;
  /** Adds prom-client's process and Node.js runtime metrics. Default true. */
  processMetrics?: boolean;
}

/** Latency buckets in seconds: a decision is sub-millisecond to tens of milliseconds; the tail reaches seconds. */
const LATENCY_BUCKETS = [0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5];
/** Group-commit batch sizes: one under light load, up to the store's maximum batch (256 by default). */
const BATCH_BUCKETS = [1, 2, 4, 8, 16, 32, 64, 128, 256, 512];

export interface GuardianMetrics {
  readonly registry: Registry;
  observe(observation: RequestObservation): void;
  dropped(exporter: string, count: number): void;
  commit(kind: CommitKind, size: number, seconds: number): void;
  replayJob(status: ReplayJobStatus): void;
  /** The text exposition. */
  render(): Promise<string>;
}

interface Series {
  value: string;
  /** Observations per bucket (not cumulative); the last is +Inf. */
  counts: Float64Array;
  sum: number;
  count: number;
}

/**
 * A histogram with one label, for the observations made per decision (request and stage latencies): counts in a
 * typed array per label value, exposed in the Prometheus text format through the registry like prom-client's own
 * (a metric is any object with a name, a type and get()). prom-client's Histogram looks each bucket up by a
 * property key made from the bound on every observation, a cost the event loop pays on every decision.
 */
class OneLabelHistogram {
  readonly type = 'histogram';
  readonly aggregator = 'sum';
  readonly #bounds: readonly number[];
  readonly #series = new Map<string, Series>();
  constructor(
    registry: Registry,
    readonly name: string,
    readonly help: string,
    readonly labelName: string,
    bounds: readonly number[],
  ) {
    this.#bounds = bounds;
    registry.registerMetric(this as unknown as Parameters<Registry['registerMetric']>[0]);
  }

  /** The series of a label value (callers with a fixed set keep them). */
  series(value: string): Series {
    let s = this.#series.get(value);
    if (!s)
      this.#series.set(value, (s = { value, counts: new Float64Array(this.#bounds.length + 1), sum: 0, count: 0 }));
    return s;
  }

  observe(series: Series, seconds: number): void {
    const bounds = this.#bounds;
    let i = 0;
    while (i < bounds.length && seconds > bounds[i]) i++;
    series.counts[i]++;
    series.sum += seconds;
    series.count++;
  }

  reset(): void {
    this.#series.clear();
  }

  get() {
    const values: { labels: Record<string, string | number>; value: number; metricName: string }[] = [];
    for (const s of this.#series.values()) {
      if (s.count === 0) continue;
      let cumulative = 0;
      for (let i = 0; i <= this.#bounds.length; i++) {
        cumulative += s.counts[i];
        values.push({
          labels: { le: i < this.#bounds.length ? this.#bounds[i] : '+Inf', [this.labelName]: s.value },
          value: cumulative,
          metricName: `${this.name}_bucket`,
        });
      }
      values.push({ labels: { [this.labelName]: s.value }, value: s.sum, metricName: `${this.name}_sum` });
      values.push({ labels: { [this.labelName]: s.value }, value: s.count, metricName: `${this.name}_count` });
    }
    return { name: this.name, help: this.help, type: this.type, values, aggregator: this.aggregator };
  }
}

export function createGuardianMetrics(options: GuardianMetricsOptions): GuardianMetrics {
  const registry = new Registry();
  if (options.processMetrics !== false) collectDefaultMetrics({ register: registry });
  const decisions = new Counter({
    name: 'acs_guardian_decisions_total',
    help: 'Decisions answered, by ACS method and disposition.',
    labelNames: ['method', 'disposition'] as const,
    registers: [registry],
  });
  const reasonCodes = new Counter({
    name: 'acs_guardian_reason_codes_total',
    help: 'Reason codes carried by answered decisions.',
    labelNames: ['reason_code'] as const,
    registers: [registry],
  });
  const errors = new Counter({
    name: 'acs_guardian_errors_total',
    help: 'JSON-RPC error answers, by method (invalid when the envelope did not decode) and error code.',
    labelNames: ['method', 'code'] as const,
    registers: [registry],
  });
  const requestSeconds = new OneLabelHistogram(
    registry,
    'acs_guardian_request_duration_seconds',
    'Time from a message arriving to its answer, by method.',
    'method',
    LATENCY_BUCKETS,
  );
  const stageSeconds = new OneLabelHistogram(
    registry,
    'acs_guardian_stage_duration_seconds',
    'Time spent per pipeline stage (validate, authenticate, admit, handshake, evaluate, sign, commit).',
    'stage',
    LATENCY_BUCKETS,
  );
  const commitSeconds = new Histogram({
    name: 'acs_guardian_store_commit_duration_seconds',
    help: 'Store transaction time per group-committed batch, by writer (step, append, decision).',
    labelNames: ['kind'] as const,
    buckets: LATENCY_BUCKETS,
    registers: [registry],
  });
  const commitBatch = new Histogram({
    name: 'acs_guardian_store_commit_batch_size',
    help: 'Items per group-committed store batch, by writer (step, append, decision).',
    labelNames: ['kind'] as const,
    buckets: BATCH_BUCKETS,
    registers: [registry],
  });
  const replayStarted = new Counter({
    name: 'acs_guardian_replay_jobs_started_total',
    help: 'Replay jobs started through the admin API.',
    registers: [registry],
  });
  const replayFinished = new Counter({
    name: 'acs_guardian_replay_jobs_finished_total',
    help: 'Replay jobs finished, by outcome (done, failed, cancelled).',
    labelNames: ['status'] as const,
    registers: [registry],
  });
  const drops = new Counter({
    name: 'acs_guardian_telemetry_dropped_total',
    help: 'Spans and OCSF events dropped because an exporter queue was full or a sink failed.',
    labelNames: ['exporter'] as const,
    registers: [registry],
  });
  new Gauge({
    name: 'acs_guardian_telemetry_queue_depth',
    help: 'Spans and OCSF events waiting for an exporter.',
    labelNames: ['exporter'] as const,
    registers: [registry],
    collect() {
      this.reset();
      for (const [exporter, depth] of Object.entries(options.queueDepths())) this.set({ exporter }, depth);
    },
  });
  new Gauge({
    name: 'acs_guardian_policy_info',
    help: 'The active policy bundle: its revision and, from a bundle registry, its SHA-256 (value 1).',
    labelNames: ['revision', 'sha256'] as const,
    registers: [registry],
    collect() {
      this.reset();
      const sha256 = options.policySha256?.();
      this.set({ revision: options.policyRevision(), ...(sha256 ? { sha256 } : {}) }, 1);
    },
  });
  // The lifecycle counts shadow evaluations itself (per shadow target); read at scrape time, labelled by the
  // candidate's revision so each target's series only grows.
  const shadowCounter = (name: string, help: string, pick: (s: ShadowCounts) => number) =>
    new Counter({
      name,
      help,
      labelNames: ['revision'] as const,
      registers: [registry],
      collect() {
        this.reset();
        const s = options.shadow?.();
        if (s?.revision) this.inc({ revision: s.revision }, pick(s));
      },
    });
  shadowCounter(
    'acs_guardian_shadow_evaluations_total',
    'Decisions the shadow candidate evaluated beside the enforcing policy, by candidate revision.',
    (s) => s.evaluated,
  );
  shadowCounter(
    'acs_guardian_shadow_differences_total',
    'Shadow evaluations whose decision differed from the enforced one (or failed), by candidate revision.',
    (s) => s.differences,
  );
  shadowCounter(
    'acs_guardian_shadow_errors_total',
    'Shadow evaluations that failed, by candidate revision.',
    (s) => s.errors,
  );
  shadowCounter(
    'acs_guardian_shadow_skipped_total',
    'Shadow evaluations skipped because too many were pending, by candidate revision.',
    (s) => s.skipped,
  );
  // Known label values only: a method is client-chosen text, and an unbounded label set would let a client
  // grow the registry without limit.
  const methodLabel = (m: string | undefined): string => {
    if (m === undefined) return 'invalid';
    if (STEP_METHODS.has(m) || m === 'handshake/hello' || m === 'system/ping') return m;
    return m.startsWith('protocols/MCP/') || m.startsWith('wrapped:') ? 'protocols/MCP' : 'other';
  };
  const stageSeries = PIPELINE_STAGES.map((stage) => stageSeconds.series(stage));
  return {
    registry,
    observe(observation) {
      const method = methodLabel(observation.request?.method);
      const envelope = observation.envelope;
      requestSeconds.observe(requestSeconds.series(method), (observation.endMs - observation.startMs) / 1000);
      const marks = observation.marks;
      let began = observation.startMs;
      for (let i = 0; i < marks.length; i += 2) {
        stageSeconds.observe(stageSeries[marks[i]], (marks[i + 1] - began) / 1000);
        began = marks[i + 1];
      }
      if (!envelope) return;
      if ('error' in envelope) errors.inc({ method, code: String(envelope.error.code) });
      else if ('decision' in envelope.result) {
        decisions.inc({ method, disposition: envelope.result.decision });
        for (const code of envelope.result.reason_codes ?? []) reasonCodes.inc({ reason_code: code });
      }
    },
    dropped: (exporter, count) => drops.inc({ exporter }, count),
    commit(kind, size, seconds) {
      commitSeconds.observe({ kind }, seconds);
      commitBatch.observe({ kind }, size);
    },
    replayJob(status) {
      if (status === 'running') replayStarted.inc();
      else replayFinished.inc({ status });
    },
    render: () => registry.metrics(),
  };
}
