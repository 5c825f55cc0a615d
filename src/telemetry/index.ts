// Operations telemetry of the Guardian (docs/telemetry.md): OpenTelemetry spans (traces/), OCSF events
// (events/), Prometheus metrics (metrics/) and structured logs (logging/), configured from the environment.
//
// The request path only records an observation per message (observation.ts); metrics are counted when the
// answer is ready. Between requests each observation is read once into a compact record of plain data
// (facts.ts), and the records go in batches to the export thread (worker.ts), which encodes the spans and exports
// OTLP, and serialises and sends the OCSF events: none of that runs on the event loop that answers requests.
// What waits is bounded (the backlog here, the records sent and not yet answered, the exporters' own queues);
// past a bound telemetry is dropped (counted, warned) and never delays or changes a decision (ACS §Trace "Failure
// isolation"). The OTLP export code is imported only when an exporter is configured (by the export thread),
// prom-client on the first recording or scrape (metrics/recorder.ts). Settings from the
// environment are read in config.ts, the route to the export thread is export-channel.ts.
import { setImmediate as nextTurn } from 'node:timers';
import { settlesBy } from './deadline.ts';
import { type Env, ocsfSinkSettingsFrom, otlpSettingsFrom, positiveInteger } from './config.ts';
import type { EventSink } from './events/index.ts';
import { inProcessChannel, threadChannel, type ExportChannel } from './export-channel.ts';
import type { ExporterHooks, ExporterSettings } from './exporters.ts';
import { stepRecordOf, type StepRecord } from './facts.ts';
import type { Logger } from './logging/index.ts';
import { metricsApp } from './metrics/endpoint.ts';
import type { CommitKind, GuardianMetrics, ReplayJobStatus, ShadowCounts } from './metrics/index.ts';
import { MetricsRecorder } from './metrics/recorder.ts';
import { RequestObservation, type PipelineTelemetry, type TraceCarrier, type TraceEmission } from './observation.ts';
import { BoundedQueue } from './queue.ts';
import type { Hono } from 'hono';
import type { ResponseEnvelope, TransportKind } from '../acs/types.ts';

export {
  RequestObservation,
  type PipelineStage,
  type PipelineTelemetry,
  type TraceCarrier,
  type TraceEmission,
} from './observation.ts';
export { createLogger, isLogLevel, openLogger, type Logger, type LogLevel } from './logging/index.ts';
export type { CommitKind, GuardianMetrics, ReplayJobStatus, ShadowCounts } from './metrics/index.ts';
export {
  ocsfSinkSettingsFrom,
  ocsfSinksFrom,
  otlpSettingsFrom,
  TelemetryConfigError,
  type OtlpSettings,
} from './config.ts';

export interface TelemetryOptions {
  env: Env;
  logger: Logger;
  /** The policy revision in force (for the info metric). */
  policyRevision(): string;
  /** The SHA-256 of the bundle in force, when a bundle registry serves it (the info metric's `sha256`). */
  policySha256?(): string | undefined;
  /** The shadow candidate's counts, when the lifecycle runs one. */
  shadow?(): ShadowCounts | undefined;
  serviceVersion: string;
  /** --stdio: stdout is the protocol, so no OCSF there. */
  stdoutIsProtocol?: boolean;
  /**
   * Overrides the sinks from the environment (tests, embedding). Objects cannot cross to the export thread, so
   * with these the exporters run on this thread.
   */
  sinks?: EventSink[];
}

export interface GuardianTelemetry extends PipelineTelemetry {
  readonly logger: Logger;
  /** The Prometheus registry, created on first use (undefined with GUARDIAN_METRICS=off). */
  metrics(): Promise<GuardianMetrics | undefined>;
  /** Mount at /metrics (undefined with GUARDIAN_METRICS=off). */
  readonly metricsApp: Hono | undefined;
  /** Store group commits (GuardianStore.observeCommits). */
  recordCommit(kind: CommitKind, size: number, seconds: number): void;
  /** Replay jobs started and finished (the admin API's replay routes). */
  recordReplayJob(status: ReplayJobStatus): void;
  /** Loads what start-up left for later (prom-client), between requests once the Guardian serves. */
  warm(): Promise<void>;
  /** Profiles this telemetry lets the Guardian claim: acs-trace once spans or OCSF events are emitted. */
  readonly profiles: string[];
  /** Exports what is queued (bounded by the exporters' timeouts), then stops the exporters. */
  close(): Promise<void>;
}

/**
 * Observations read into records per batch to the export thread, at most (one structured clone, one message each
 * way). Steps whose spans cannot be exported at once wait there as records (traces/index.ts).
 */
const DRAIN_SLICE = 128;
/**
 * A batch waits this long (ms) to fill, unless a whole slice is waiting. Each message to the export thread and its
 * answer wake a thread, so fewer, larger batches cost the event loop less per step.
 */
const BATCH_WAIT_MS = 25;
/** The exporters give up this long (ms, at most a quarter of it) before GUARDIAN_TELEMETRY_SHUTDOWN_MS passes. */
const SHUTDOWN_MARGIN_MS = 500;
/** At most one drop warning per this many ms (with the count since the last). */
const DROP_WARNING_EVERY_MS = 10_000;
export async function openTelemetry(options: TelemetryOptions): Promise<GuardianTelemetry> {
  const { env, logger } = options;
  const otlp = otlpSettingsFrom(env);
  const sinkSettings = options.sinks ? [] : ocsfSinkSettingsFrom(env, options.stdoutIsProtocol ?? false);
  const ocsfOn = options.sinks ? options.sinks.length > 0 : sinkSettings.length > 0;
  const metricsOn = env.GUARDIAN_METRICS !== 'off';
  const queueSize = positiveInteger(env, 'GUARDIAN_TELEMETRY_QUEUE_SIZE', 4096);
  /** The whole of close(), from its call (ms). */
  const shutdownMs = positiveInteger(env, 'GUARDIAN_TELEMETRY_SHUTDOWN_MS', 5000);
  const settings: ExporterSettings = {
    product: { name: 'acs-guardian', vendor_name: 'ACS Guardian', version: options.serviceVersion },
    ...(otlp ? { otlp: { ...otlp, serviceVersion: options.serviceVersion, maxWaitingSteps: queueSize } } : {}),
    ...(ocsfOn
      ? {
          ocsf: {
            sinks: sinkSettings,
            queueSize: positiveInteger(env, 'GUARDIAN_OCSF_QUEUE_SIZE', 4096),
            batchSize: positiveInteger(env, 'GUARDIAN_OCSF_BATCH_SIZE', 100),
            flushIntervalMs: positiveInteger(env, 'GUARDIAN_OCSF_FLUSH_MS', 1000),
          },
        }
      : {}),
  };
  const hooks: ExporterHooks = {
    dropped: (exporter, count, why) => dropped(exporter, count, why),
    failed: (message) => logger.error({ err: message }, 'telemetry: could not build a span or event'),
  };
  const emits = otlp !== null || ocsfOn;
  let channel: ExportChannel | undefined;
  const backlog = new BoundedQueue<RequestObservation>(queueSize, (n) =>
    dropped('pipeline', n, 'telemetry backlog full'),
  );
  const metrics = metricsOn
    ? new MetricsRecorder(
        {
          policyRevision: options.policyRevision,
          ...(options.policySha256 ? { policySha256: options.policySha256 } : {}),
          ...(options.shadow ? { shadow: options.shadow } : {}),
          queueDepths: () => ({
            pipeline: backlog.size + (channel?.inFlight() ?? 0),
            ...channel?.depths(),
          }),
        },
        (err) =>
          logger.error({ err: err instanceof Error ? err.message : String(err) }, 'telemetry: metrics unavailable'),
      )
    : undefined;

  const unwarned = new Map<string, { count: number; why: string }>();
  let lastWarning = 0;
  let warningTimer: NodeJS.Timeout | null = null;
  function warnDrops(): void {
    warningTimer = null;
    lastWarning = Date.now();
    for (const [exporter, { count, why }] of unwarned)
      logger.warn(
        { exporter, dropped: count, reason: why },
        `telemetry dropped ${count} item(s) for ${exporter}: ${why}`,
      );
    unwarned.clear();
  }
  function dropped(exporter: string, count: number, why: string): void {
    metrics?.record((m) => m.dropped(exporter, count));
    const seen = unwarned.get(exporter);
    unwarned.set(exporter, { count: (seen?.count ?? 0) + count, why });
    if (warningTimer) return;
    const wait = Math.max(0, lastWarning + DROP_WARNING_EVERY_MS - Date.now());
    warningTimer = setTimeout(warnDrops, wait);
    warningTimer.unref();
  }

  if (emits)
    channel = options.sinks
      ? await inProcessChannel(settings, hooks, options.sinks)
      : await threadChannel(settings, hooks, queueSize, logger, () => schedule());

  /** Reads up to `n` observations off the backlog into records. */
  function takeRecords(n: number): StepRecord[] {
    const records: StepRecord[] = [];
    for (const observation of backlog.take(n)) {
      try {
        records.push(stepRecordOf(observation));
      } catch (err) {
        hooks.failed(err instanceof Error ? err.message : String(err));
      }
    }
    return records;
  }
  /** Reads up to `n` observations into records and sends them as one batch. */
  function sendSlice(n: number): void {
    const records = takeRecords(n);
    if (records.length > 0) channel?.send(records);
  }
  let draining = false;
  let batchTimer: NodeJS.Timeout | null = null;
  function drain(): void {
    draining = false;
    if (batchTimer) clearTimeout(batchTimer);
    batchTimer = null;
    if (!channel?.ready()) return; // resumed by the channel once it has room (schedule)
    sendSlice(DRAIN_SLICE);
    schedule();
  }
  function schedule(): void {
    if (draining || backlog.size === 0) return;
    if (backlog.size >= DRAIN_SLICE) {
      draining = true;
      nextTurn(drain);
    } else if (!batchTimer) {
      batchTimer = setTimeout(drain, BATCH_WAIT_MS);
      batchTimer.unref();
    }
  }

  /** Once, however often close() is called (the runtime's close and an embedder's may both ask). */
  let closed: Promise<void> | undefined;
  async function closeExporters(): Promise<void> {
    // The deadline counts from here: reading the backlog into records and handing them over take time too.
    const deadline = Date.now() + shutdownMs;
    if (batchTimer) clearTimeout(batchTimer);
    batchTimer = null;
    // What is left goes with the shutdown, past the exporters' own queue bounds: the backlog is bounded already,
    // and what it accepted must not be dropped a second time for room while the collector takes it.
    const last = takeRecords(backlog.size);
    // Bounded: a collector that never answers must not hold up the shutdown (what is left is lost, counted and
    // said). The exporters give up a little before the deadline, so that what they count as lost is counted
    // before close returns; the deadline itself stops an export thread that did not answer even then.
    const until = deadline - Math.min(SHUTDOWN_MARGIN_MS, shutdownMs / 4);
    let stopped = false;
    const exported = (channel?.close(last, until) ?? Promise.resolve()).then(
      () => true,
      (err: unknown) => {
        // Stopped at the deadline: its pending shutdown fails with it, and kill() counted what was lost.
        if (!stopped)
          logger.warn({ err: err instanceof Error ? err.message : String(err) }, 'telemetry: the last export failed');
        return true;
      },
    );
    const inTime = await settlesBy(exported, deadline);
    if (!inTime) {
      stopped = true;
      logger.warn({ deadline_ms: shutdownMs }, 'telemetry: exporters did not finish before the shutdown deadline');
      await channel?.kill();
    }
    if (warningTimer) {
      clearTimeout(warningTimer);
      warnDrops();
    }
  }

  const emission: TraceEmission | undefined = emits
    ? {
        otel_enabled: otlp !== null,
        ocsf_enabled: ocsfOn,
        ...(env.GUARDIAN_OTEL_ADVERTISED_ENDPOINT
          ? { otel_collector_endpoint: env.GUARDIAN_OTEL_ADVERTISED_ENDPOINT }
          : {}),
      }
    : undefined;

  return {
    logger,
    metrics: async () => metrics?.load(),
    metricsApp: metrics ? metricsApp(metrics, env.GUARDIAN_METRICS_TOKEN || undefined) : undefined,
    recordCommit: (kind, size, seconds) => metrics?.record((m) => m.commit(kind, size, seconds)),
    recordReplayJob: (status) => metrics?.record((m) => m.replayJob(status)),
    async warm() {
      await metrics?.load();
    },
    profiles: emits ? ['acs-trace'] : [],
    emission,
    begin: (transport: TransportKind, carrier?: TraceCarrier) => new RequestObservation(transport, carrier),
    end(observation: RequestObservation, envelope: ResponseEnvelope) {
      try {
        observation.endMs = performance.now();
        observation.envelope = envelope;
        metrics?.record((m) => m.observe(observation));
        if (!channel) return;
        // Answered after close() began: the export thread takes nothing more (counted, not lost unsaid).
        if (closed) return dropped('pipeline', 1, 'telemetry closed');
        if (backlog.push(observation)) schedule();
      } catch {
        // Telemetry never fails a request.
      }
    },
    close: () => (closed ??= closeExporters()),
  };
}
