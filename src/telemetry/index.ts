// Operations telemetry of the Guardian (docs/telemetry.md): OpenTelemetry spans (traces/), OCSF events
// (events/), Prometheus metrics (metrics/) and structured logs (logging/), configured from the environment.
//
// The request path only records an observation per message (observation.ts); metrics are counted when the
// answer is ready. Between requests each observation is read once into a compact record of plain data
// (facts.ts), and the records go in batches to the export thread (worker.ts), which builds the spans with the
// OTel SDK, encodes and exports OTLP, and serialises and sends the OCSF events: none of that runs on the event
// loop that answers requests. What waits is bounded (the backlog here, the records sent and not yet answered, the
// exporters' own queues); past a bound telemetry is dropped (counted, warned) and never delays or changes a
// decision (ACS §Trace "Failure isolation"). The OTel SDK is imported only when an OTLP exporter is configured
// (by the export thread), prom-client on the first recording or scrape (metrics/recorder.ts).
import { setImmediate as nextTurn } from 'node:timers';
import { WorkerThread } from '../worker-thread/index.ts';
import { sinkOf, type EventSink, type SinkSettings } from './events/index.ts';
import { openExporters, type ExporterDepths, type ExporterHooks, type ExporterSettings } from './exporters.ts';
import { stepRecordOf, type StepRecord } from './facts.ts';
import type { Logger } from './logging/index.ts';
import { metricsApp } from './metrics/endpoint.ts';
import type { CommitKind, GuardianMetrics, ReplayJobStatus, ShadowCounts } from './metrics/index.ts';
import { MetricsRecorder } from './metrics/recorder.ts';
import { RequestObservation, type PipelineTelemetry, type TraceCarrier, type TraceEmission } from './observation.ts';
import { BoundedQueue } from './queue.ts';
import type { OtlpProtocol } from './traces/index.ts';
import type { ExportNotice, ExportProtocol } from './worker.ts';
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

export class TelemetryConfigError extends Error {}

type Env = Readonly<Record<string, string | undefined>>;

function positive(env: Env, name: string, fallback: number): number {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  const n = Number(raw);
  if (!Number.isInteger(n) || n <= 0)
    throw new TelemetryConfigError(`${name} must be a positive integer, got ${JSON.stringify(raw)}`);
  return n;
}

/** OTEL_EXPORTER_OTLP_HEADERS form: `k1=v1,k2=v2`, values URL-encoded (OTel SDK environment specification). */
function otlpHeaders(raw: string | undefined): Record<string, string> | undefined {
  if (!raw) return undefined;
  const out: Record<string, string> = {};
  for (const pair of raw.split(',')) {
    const at = pair.indexOf('=');
    if (at <= 0) continue;
    out[decodeURIComponent(pair.slice(0, at).trim())] = decodeURIComponent(pair.slice(at + 1).trim());
  }
  return out;
}

export interface OtlpSettings {
  url: string;
  protocol: OtlpProtocol;
  headers?: Record<string, string>;
  serviceName: string;
  maxQueueSize: number;
  scheduledDelayMillis: number;
  exportTimeoutMillis: number;
}

/** The OTLP/HTTP traces exporter the standard OTEL_* variables ask for, or null when tracing is off. */
export function otlpSettingsFrom(env: Env): OtlpSettings | null {
  if (env.OTEL_SDK_DISABLED === 'true') return null;
  const exporter = env.OTEL_TRACES_EXPORTER ?? 'otlp';
  if (exporter === 'none') return null;
  if (exporter !== 'otlp')
    throw new TelemetryConfigError(`OTEL_TRACES_EXPORTER=${exporter}: only otlp and none are supported`);
  // The OTel SDK environment specification's default is http/protobuf; grpc is not offered.
  const protocol = env.OTEL_EXPORTER_OTLP_TRACES_PROTOCOL || env.OTEL_EXPORTER_OTLP_PROTOCOL || 'http/protobuf';
  if (protocol !== 'http/protobuf' && protocol !== 'http/json')
    throw new TelemetryConfigError(
      `OTEL_EXPORTER_OTLP_PROTOCOL=${protocol}: this Guardian exports OTLP over HTTP, http/protobuf or http/json`,
    );
  const base = env.OTEL_EXPORTER_OTLP_ENDPOINT;
  const url = env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT || (base ? `${base.replace(/\/+$/, '')}/v1/traces` : undefined);
  if (!url) return null;
  try {
    new URL(url);
  } catch {
    throw new TelemetryConfigError(`OTLP traces endpoint is not a URL: ${JSON.stringify(url)}`);
  }
  const headers = otlpHeaders(env.OTEL_EXPORTER_OTLP_TRACES_HEADERS ?? env.OTEL_EXPORTER_OTLP_HEADERS);
  return {
    url,
    protocol,
    ...(headers ? { headers } : {}),
    serviceName: env.OTEL_SERVICE_NAME || 'acs-guardian',
    maxQueueSize: positive(env, 'OTEL_BSP_MAX_QUEUE_SIZE', 2048),
    scheduledDelayMillis: positive(env, 'OTEL_BSP_SCHEDULE_DELAY', 1000),
    exportTimeoutMillis: positive(
      env,
      'OTEL_EXPORTER_OTLP_TRACES_TIMEOUT',
      positive(env, 'OTEL_EXPORTER_OTLP_TIMEOUT', 10_000),
    ),
  };
}

/** The OCSF sinks the GUARDIAN_OCSF_* variables ask for, as plain data (none: OCSF off). */
export function ocsfSinkSettingsFrom(env: Env, stdoutIsProtocol: boolean): SinkSettings[] {
  const sinks: SinkSettings[] = [];
  if (env.GUARDIAN_OCSF_FILE)
    sinks.push({
      kind: 'file',
      path: env.GUARDIAN_OCSF_FILE,
      maxBytes: positive(env, 'GUARDIAN_OCSF_FILE_MAX_BYTES', 64 * 1024 * 1024),
      keep: positive(env, 'GUARDIAN_OCSF_FILE_KEEP', 5),
    });
  if (env.GUARDIAN_OCSF_STDOUT === '1') {
    if (stdoutIsProtocol)
      throw new TelemetryConfigError('GUARDIAN_OCSF_STDOUT=1: stdout carries the ACS protocol in --stdio mode');
    sinks.push({ kind: 'stdout' });
  }
  if (env.GUARDIAN_OCSF_HTTP_URL) {
    try {
      new URL(env.GUARDIAN_OCSF_HTTP_URL);
    } catch {
      throw new TelemetryConfigError('GUARDIAN_OCSF_HTTP_URL is not a URL');
    }
    sinks.push({
      kind: 'http',
      url: env.GUARDIAN_OCSF_HTTP_URL,
      ...(env.GUARDIAN_OCSF_HTTP_TOKEN ? { token: env.GUARDIAN_OCSF_HTTP_TOKEN } : {}),
      timeoutMs: positive(env, 'GUARDIAN_OCSF_HTTP_TIMEOUT_MS', 5000),
      maxAttempts: positive(env, 'GUARDIAN_OCSF_HTTP_MAX_ATTEMPTS', 5),
      backoffMs: positive(env, 'GUARDIAN_OCSF_HTTP_BACKOFF_MS', 200),
    });
  }
  return sinks;
}

/** The OCSF sinks the GUARDIAN_OCSF_* variables ask for (none: OCSF off). */
export function ocsfSinksFrom(env: Env, stdoutIsProtocol: boolean): EventSink[] {
  return ocsfSinkSettingsFrom(env, stdoutIsProtocol).map(sinkOf);
}

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
 * Observations read into records per batch to the export thread, at most: a slice's spans (a handful per step) stay
 * within the batch span processor's default queue (OTEL_BSP_MAX_QUEUE_SIZE 2048), which a larger burst would overflow.
 */
const DRAIN_SLICE = 128;
/**
 * A batch waits this long (ms) to fill, unless a whole slice is waiting. Each message to the export thread and its
 * answer wake a thread, so fewer, larger batches cost the event loop less per step.
 */
const BATCH_WAIT_MS = 25;
/** At most one drop warning per this many ms (with the count since the last). */
const DROP_WARNING_EVERY_MS = 10_000;
/** Export threads started again after a crash, at most, before the exporters are given up (everything dropped). */
const MAX_RESTARTS = 3;

/** Where records go: the export thread, or exporters on this thread (sinks given as objects). */
interface ExportChannel {
  /** Records can be sent now (false while the export thread holds its window of unanswered records). */
  ready(): boolean;
  send(records: StepRecord[]): void;
  /** Items waiting per exporter, and the records sent and not yet answered. */
  depths(): ExporterDepths;
  inFlight(): number;
  /** Exports what is queued (the caller bounds the wait), then stops. */
  close(): Promise<void>;
  /** Stops at once, whatever is left. */
  kill(): Promise<void>;
}

async function inProcessChannel(
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
    close: () => exporters.shutdown(),
    kill: async () => {},
  };
}

/**
 * The export thread (worker.ts). At most `window` records are sent and not yet answered; beyond, they wait in the
 * backlog (and past its bound are dropped). A crashed thread loses what it held (counted) and is started again.
 */
async function threadChannel(
  settings: ExporterSettings,
  hooks: ExporterHooks,
  window: number,
  logger: Logger,
  onReady: () => void,
): Promise<ExportChannel> {
  let depths: ExporterDepths = {};
  if (settings.otlp) depths.otlp = 0;
  for (const sink of settings.ocsf?.sinks ?? []) depths[`ocsf_${sink.kind}`] = 0;
  let inFlight = 0;
  let thread: WorkerThread<ExportProtocol> | null = null;
  let closing = false;
  let restarts = 0;
  const onNotice = (_: string, body: unknown): void => {
    const n = body as ExportNotice;
    if (n.kind === 'dropped') hooks.dropped(n.exporter, n.count, n.why);
    else hooks.failed(n.message);
  };
  async function start(): Promise<void> {
    const t = new WorkerThread<ExportProtocol>(new URL('./worker.ts', import.meta.url), {
      name: 'telemetry export thread',
      // Held open only while a batch is unanswered, like the exporters' own timers (unref'd) before it.
      unrefWhenIdle: true,
      onNotice,
      onCrash(err) {
        // A thread that never opened fails its `open` request instead (openTelemetry reports it).
        if (thread !== t) return;
        thread = null;
        if (closing) return;
        logger.error({ err: err.message }, 'telemetry: the export thread died');
        if (restarts++ >= MAX_RESTARTS) {
          logger.error('telemetry: export thread given up; spans and OCSF events are dropped from now on');
          return;
        }
        start().then(onReady, (e: unknown) =>
          logger.error({ err: e instanceof Error ? e.message : String(e) }, 'telemetry: export thread restart failed'),
        );
      },
    });
    try {
      await t.request('open', settings);
    } catch (err) {
      await t.terminate().catch(() => {});
      throw err;
    }
    thread = t;
  }
  await start();
  return {
    ready: () => thread !== null && inFlight < window,
    send(records) {
      const t = thread;
      if (!t) return hooks.dropped('pipeline', records.length, 'telemetry export thread unavailable');
      inFlight += records.length;
      t.request('records', records).then(
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
    async close() {
      closing = true;
      const t = thread;
      if (!t) return;
      try {
        await t.request('shutdown', null);
      } finally {
        await t.terminate().catch(() => {});
      }
    },
    async kill() {
      closing = true;
      await thread?.terminate().catch(() => {});
    },
  };
}

export async function openTelemetry(options: TelemetryOptions): Promise<GuardianTelemetry> {
  const { env, logger } = options;
  const otlp = otlpSettingsFrom(env);
  const sinkSettings = options.sinks ? [] : ocsfSinkSettingsFrom(env, options.stdoutIsProtocol ?? false);
  const ocsfOn = options.sinks ? options.sinks.length > 0 : sinkSettings.length > 0;
  const metricsOn = env.GUARDIAN_METRICS !== 'off';
  const queueSize = positive(env, 'GUARDIAN_TELEMETRY_QUEUE_SIZE', 4096);
  const settings: ExporterSettings = {
    product: { name: 'acs-guardian', vendor_name: 'ACS Guardian', version: options.serviceVersion },
    ...(otlp ? { otlp: { ...otlp, serviceVersion: options.serviceVersion } } : {}),
    ...(ocsfOn
      ? {
          ocsf: {
            sinks: sinkSettings,
            queueSize: positive(env, 'GUARDIAN_OCSF_QUEUE_SIZE', 4096),
            batchSize: positive(env, 'GUARDIAN_OCSF_BATCH_SIZE', 100),
            flushIntervalMs: positive(env, 'GUARDIAN_OCSF_FLUSH_MS', 1000),
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

  /** Reads up to `n` observations into records and sends them as one batch. */
  function sendSlice(n: number): void {
    const records: StepRecord[] = [];
    for (const observation of backlog.take(n)) {
      try {
        records.push(stepRecordOf(observation));
      } catch (err) {
        hooks.failed(err instanceof Error ? err.message : String(err));
      }
    }
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
        if (channel && backlog.push(observation)) schedule();
      } catch {
        // Telemetry never fails a request.
      }
    },
    async close() {
      // What is left goes to the exporters whatever their window: the backlog is bounded already.
      if (batchTimer) clearTimeout(batchTimer);
      while (backlog.size > 0) sendSlice(DRAIN_SLICE);
      // Bounded: a collector that never answers must not hold up the shutdown (what is left is lost, and said).
      const deadline = positive(env, 'GUARDIAN_TELEMETRY_SHUTDOWN_MS', 5000);
      let timer: NodeJS.Timeout | undefined;
      const exported = (channel?.close() ?? Promise.resolve()).then(
        () => true,
        (err: unknown) => {
          logger.warn({ err: err instanceof Error ? err.message : String(err) }, 'telemetry: the last export failed');
          return true;
        },
      );
      const inTime = await Promise.race([
        exported,
        new Promise<boolean>((resolve) => {
          timer = setTimeout(() => resolve(false), deadline);
        }),
      ]);
      clearTimeout(timer);
      if (!inTime) {
        logger.warn({ deadline_ms: deadline }, 'telemetry: exporters did not finish before the shutdown deadline');
        await channel?.kill();
      }
      if (warningTimer) {
        clearTimeout(warningTimer);
        warnDrops();
      }
    },
  };
}
