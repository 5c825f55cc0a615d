// Telemetry settings from the environment: the standard OTEL_* variables for OTLP traces (OTel SDK environment
// specification) and the GUARDIAN_OCSF_* variables for OCSF sinks (docs/telemetry.md). A malformed value is a
// TelemetryConfigError naming the variable, raised at start-up, never on the request path.
import { sinkOf, type EventSink, type SinkSettings } from './events/index.ts';
import type { OtlpProtocol, TraceSampler } from './traces/index.ts';

export class TelemetryConfigError extends Error {}

export type Env = Readonly<Record<string, string | undefined>>;

export function positiveInteger(env: Env, name: string, fallback: number): number {
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
  sampler: TraceSampler;
  /** OTEL_SPAN_ATTRIBUTE_VALUE_LENGTH_LIMIT, else OTEL_ATTRIBUTE_VALUE_LENGTH_LIMIT (MAX_SAFE_INTEGER: none). */
  attributeValueLengthLimit: number;
  maxQueueSize: number;
  maxExportBatchSize: number;
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
  // Every step is traced: the SDK's default sampler (parentbased_always_on, which honours a caller's unsampled
  // traceparent) or always_on. A sampler that would leave steps out is refused rather than ignored.
  const sampler = env.OTEL_TRACES_SAMPLER || 'parentbased_always_on';
  if (sampler !== 'parentbased_always_on' && sampler !== 'always_on')
    throw new TelemetryConfigError(
      `OTEL_TRACES_SAMPLER=${sampler}: this Guardian traces every step (parentbased_always_on or always_on); OTEL_TRACES_EXPORTER=none turns tracing off`,
    );
  return {
    url,
    protocol,
    ...(headers ? { headers } : {}),
    serviceName: env.OTEL_SERVICE_NAME || 'acs-guardian',
    sampler,
    attributeValueLengthLimit: positiveInteger(
      env,
      'OTEL_SPAN_ATTRIBUTE_VALUE_LENGTH_LIMIT',
      positiveInteger(env, 'OTEL_ATTRIBUTE_VALUE_LENGTH_LIMIT', Number.MAX_SAFE_INTEGER),
    ),
    maxQueueSize: positiveInteger(env, 'OTEL_BSP_MAX_QUEUE_SIZE', 2048),
    // The OTel SDK environment specification's default; fewer, larger exports cost less CPU per span.
    maxExportBatchSize: positiveInteger(env, 'OTEL_BSP_MAX_EXPORT_BATCH_SIZE', 512),
    scheduledDelayMillis: positiveInteger(env, 'OTEL_BSP_SCHEDULE_DELAY', 1000),
    exportTimeoutMillis: positiveInteger(
      env,
      'OTEL_EXPORTER_OTLP_TRACES_TIMEOUT',
      positiveInteger(env, 'OTEL_EXPORTER_OTLP_TIMEOUT', 10_000),
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
      maxBytes: positiveInteger(env, 'GUARDIAN_OCSF_FILE_MAX_BYTES', 64 * 1024 * 1024),
      keep: positiveInteger(env, 'GUARDIAN_OCSF_FILE_KEEP', 5),
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
      timeoutMs: positiveInteger(env, 'GUARDIAN_OCSF_HTTP_TIMEOUT_MS', 5000),
      maxAttempts: positiveInteger(env, 'GUARDIAN_OCSF_HTTP_MAX_ATTEMPTS', 5),
      backoffMs: positiveInteger(env, 'GUARDIAN_OCSF_HTTP_BACKOFF_MS', 200),
    });
  }
  return sinks;
}

/** The OCSF sinks the GUARDIAN_OCSF_* variables ask for (none: OCSF off). */
export function ocsfSinksFrom(env: Env, stdoutIsProtocol: boolean): EventSink[] {
  return ocsfSinkSettingsFrom(env, stdoutIsProtocol).map(sinkOf);
}
