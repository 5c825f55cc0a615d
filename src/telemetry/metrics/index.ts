// Prometheus metrics (prom-client, text exposition format) at GET /metrics: decisions by method and disposition,
// reason codes, JSON-RPC errors, message latency per method, latency per pipeline stage, telemetry queue depth
// and drops, the active policy revision as an info metric, and the process metrics prom-client collects.
// With GUARDIAN_METRICS_TOKEN set the endpoint wants `Authorization: Bearer <token>`, like /admin.
import { Hono } from 'hono';
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';
import { bearerTokenMatches } from '../../crypto/bearer-token.ts';
import { STEP_METHODS } from '../../acs/methods.ts';
import type { RequestObservation } from '../observation.ts';

export interface GuardianMetricsOptions {
  /** The policy revision in force now (the engine's, which the lifecycle swaps). */
  policyRevision(): string;
  /** Telemetry items waiting per exporter (`otlp`, `ocsf_file`, …). */
  queueDepths(): Record<string, number>;
  /** Adds prom-client's process and Node.js runtime metrics. Default true. */
  processMetrics?: boolean;
}

/** Latency buckets in seconds: a decision is sub-millisecond to tens of milliseconds; the tail reaches seconds. */
const LATENCY_BUCKETS = [0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5];

export interface GuardianMetrics {
  readonly registry: Registry;
  observe(observation: RequestObservation): void;
  dropped(exporter: string, count: number): void;
  /** The text exposition. */
  render(): Promise<string>;
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
  const requestSeconds = new Histogram({
    name: 'acs_guardian_request_duration_seconds',
    help: 'Time from a message arriving to its answer, by method.',
    labelNames: ['method'] as const,
    buckets: LATENCY_BUCKETS,
    registers: [registry],
  });
  const stageSeconds = new Histogram({
    name: 'acs_guardian_stage_duration_seconds',
    help: 'Time spent per pipeline stage (validate, authenticate, admit, handshake, evaluate, sign, commit).',
    labelNames: ['stage'] as const,
    buckets: LATENCY_BUCKETS,
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
    help: 'The active policy bundle revision (value 1).',
    labelNames: ['revision'] as const,
    registers: [registry],
    collect() {
      this.reset();
      this.set({ revision: options.policyRevision() }, 1);
    },
  });
  // Known label values only: a method is client-chosen text, and an unbounded label set would let a client
  // grow the registry without limit.
  const methodLabel = (m: string | undefined): string => {
    if (m === undefined) return 'invalid';
    if (STEP_METHODS.has(m) || m === 'handshake/hello' || m === 'system/ping') return m;
    return m.startsWith('protocols/MCP/') || m.startsWith('wrapped:') ? 'protocols/MCP' : 'other';
  };
  return {
    registry,
    observe(observation) {
      const method = methodLabel(observation.request?.method);
      const envelope = observation.envelope;
      requestSeconds.observe({ method }, (observation.endMs - observation.startMs) / 1000);
      for (const s of observation.stages) stageSeconds.observe({ stage: s.stage }, (s.endMs - s.startMs) / 1000);
      if (!envelope) return;
      if ('error' in envelope) errors.inc({ method, code: String(envelope.error.code) });
      else if ('decision' in envelope.result) {
        decisions.inc({ method, disposition: envelope.result.decision });
        for (const code of envelope.result.reason_codes ?? []) reasonCodes.inc({ reason_code: code });
      }
    },
    dropped: (exporter, count) => drops.inc({ exporter }, count),
    render: () => registry.metrics(),
  };
}

/** GET /metrics; a configured token is required as a Bearer token (compared in constant time). */
export function metricsApp(metrics: GuardianMetrics, token: string | undefined): Hono {
  const app = new Hono();
  app.get('/', async (c) => {
    if (token) {
      const presented = /^Bearer\s+(.+)$/i.exec(c.req.header('authorization') ?? '')?.[1];
      if (!presented || !bearerTokenMatches(presented, token))
        return c.json({ error: 'unauthorized' }, 401, { 'www-authenticate': 'Bearer realm="guardian-metrics"' });
    }
    return c.body(await metrics.render(), 200, { 'content-type': metrics.registry.contentType });
  });
  return app;
}
