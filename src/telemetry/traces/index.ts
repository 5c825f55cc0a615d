// OpenTelemetry traces: one span per answered message, named and attributed per the ACS OTel mapping, the
// decision as its `acs.decision` span event, a child span per pipeline stage, exported over OTLP/HTTP (protobuf or
// JSON encoding) by the official SDK's batch processor. This module (and so the SDK) is imported only when an
// exporter is configured, and only the exporter of the configured encoding is loaded.
//
// Parenting (ACS §Trace "Span hierarchy"): a W3C `traceparent` on the request makes the step span its child (the
// agent's own session or turn span). Without one the Guardian builds the session's tree itself from ids derived
// from the session and turn ids, so every replica of a fleet derives the same ones: one trace per session, the
// sessionStart span (`acs.session`) its root, each turnStart span (`acs.turn`) a child of the session span (or of
// its parent turn's), a step that names a turn (metadata.turn_id) a child of that turn's span, session-level steps
// (agentTrigger, sessionEnd, the handshake, steps outside a turn) children of the session span.
import { createHash, randomBytes } from 'node:crypto';
import {
  defaultTextMapGetter,
  ROOT_CONTEXT,
  SpanKind,
  SpanStatusCode,
  TraceFlags,
  trace,
  type Context,
} from '@opentelemetry/api';
import { ExportResultCode, W3CTraceContextPropagator, type ExportResult } from '@opentelemetry/core';
import { resourceFromAttributes } from '@opentelemetry/resources';
import {
  BasicTracerProvider,
  BatchSpanProcessor,
  type IdGenerator,
  type ReadableSpan,
  type SpanExporter,
} from '@opentelemetry/sdk-trace-base';
import { ATTR_SERVICE_NAME, ATTR_SERVICE_VERSION } from '@opentelemetry/semantic-conventions';
import type { StepFacts } from '../facts.ts';
import type { RequestObservation } from '../observation.ts';
import { decisionAttributes, spanNameOf, stepAttributes } from './mapping.ts';

/** OTLP/HTTP encodings (OTEL_EXPORTER_OTLP_PROTOCOL); gRPC is not offered. */
export type OtlpProtocol = 'http/protobuf' | 'http/json';

export interface StepTracerOptions {
  /** The OTLP/HTTP traces URL (…/v1/traces). */
  url: string;
  protocol: OtlpProtocol;
  headers?: Record<string, string>;
  serviceName: string;
  serviceVersion: string;
  /** Spans held for export at most; beyond it they are dropped and counted. */
  maxQueueSize: number;
  scheduledDelayMillis?: number;
  exportTimeoutMillis?: number;
  /** Told how many spans an export lost (collector down, refused, timed out). */
  onDropped(count: number): void;
}

export interface StepTracer {
  record(observation: RequestObservation, facts: StepFacts): void;
  /** Spans queued or in an export that has not answered yet. */
  pending(): number;
  flush(): Promise<void>;
  shutdown(): Promise<void>;
}

/** Random ids, except the trace id and span id of the next span when set (session-derived trees). */
class SessionTraceIds implements IdGenerator {
  nextTraceId: string | undefined;
  nextSpanId: string | undefined;
  generateTraceId(): string {
    const id = this.nextTraceId ?? randomBytes(16).toString('hex');
    this.nextTraceId = undefined;
    return id;
  }
  generateSpanId(): string {
    const id = this.nextSpanId ?? randomBytes(8).toString('hex');
    this.nextSpanId = undefined;
    return id;
  }
}

/** `bytes` hex digits of SHA-256 over the parts: a trace or span id every replica derives alike. */
function derivedId(bytes: number, ...parts: string[]): string {
  return createHash('sha256')
    .update(parts.join('\u0000'))
    .digest('hex')
    .slice(0, bytes * 2);
}
const sessionTraceId = (sessionId: string): string => derivedId(16, sessionId);
const sessionSpanId = (sessionId: string): string => derivedId(8, 'acs.session', sessionId);
const turnSpanId = (sessionId: string, turnId: string): string => derivedId(8, 'acs.turn', sessionId, turnId);

/** Steps that belong to the session, not to a turn, even when they name one (request-envelope metadata.turn_id). */
const SESSION_LEVEL = new Set(['steps/sessionStart', 'steps/sessionEnd', 'steps/agentTrigger', 'handshake/hello']);

const text = (v: unknown): string | undefined => (typeof v === 'string' && v.length > 0 ? v : undefined);

/**
 * Where a step sits in its session's tree: its parent's span id (none for the session span) and, for the
 * sessionStart and turnStart spans answered with a decision, the derived span id the rest of the tree points at.
 */
export function sessionTreeOf(facts: StepFacts): { traceId: string; parentSpanId?: string; spanId?: string } | null {
  const session = facts.sessionId;
  if (!session) return null;
  const traceId = sessionTraceId(session);
  const decided = facts.decision !== undefined;
  if (facts.method === 'steps/sessionStart')
    return decided ? { traceId, spanId: sessionSpanId(session) } : { traceId, parentSpanId: sessionSpanId(session) };
  if (facts.method === 'steps/turnStart') {
    const turn = text(facts.payload.turn_id) ?? facts.turnId;
    const parentTurn = text(facts.payload.parent_turn_id) ?? facts.parentTurnId;
    const parentSpanId = parentTurn ? turnSpanId(session, parentTurn) : sessionSpanId(session);
    return decided && turn ? { traceId, parentSpanId, spanId: turnSpanId(session, turn) } : { traceId, parentSpanId };
  }
  const turn = facts.method === 'steps/turnEnd' ? (text(facts.payload.turn_id) ?? facts.turnId) : facts.turnId;
  if (turn && !SESSION_LEVEL.has(facts.method)) return { traceId, parentSpanId: turnSpanId(session, turn) };
  return { traceId, parentSpanId: sessionSpanId(session) };
}

/** Counts what an export could not deliver; the batch processor itself only logs. */
class CountingExporter implements SpanExporter {
  readonly #inner: SpanExporter;
  readonly #onDropped: (count: number) => void;
  inFlight = 0;
  /** Spans ever handed to export (the batch processor's queue holds the ended spans not handed yet). */
  handed = 0;
  constructor(inner: SpanExporter, onDropped: (count: number) => void) {
    this.#inner = inner;
    this.#onDropped = onDropped;
  }
  export(spans: ReadableSpan[], done: (result: ExportResult) => void): void {
    this.inFlight += spans.length;
    this.handed += spans.length;
    this.#inner.export(spans, (result) => {
      this.inFlight -= spans.length;
      if (result.code !== ExportResultCode.SUCCESS) this.#onDropped(spans.length);
      done(result);
    });
  }
  shutdown(): Promise<void> {
    return this.#inner.shutdown();
  }
  forceFlush(): Promise<void> {
    return this.#inner.forceFlush?.() ?? Promise.resolve();
  }
}

export async function openStepTracer(options: StepTracerOptions): Promise<StepTracer> {
  const ids = new SessionTraceIds();
  const { OTLPTraceExporter } =
    options.protocol === 'http/protobuf'
      ? await import('@opentelemetry/exporter-trace-otlp-proto')
      : await import('@opentelemetry/exporter-trace-otlp-http');
  const exporter = new CountingExporter(
    new OTLPTraceExporter({
      url: options.url,
      ...(options.headers ? { headers: options.headers } : {}),
      timeoutMillis: options.exportTimeoutMillis ?? 10_000,
    }),
    options.onDropped,
  );
  let ended = 0;
  const processor = new BatchSpanProcessor(exporter, {
    maxQueueSize: options.maxQueueSize,
    maxExportBatchSize: Math.min(512, options.maxQueueSize),
    scheduledDelayMillis: options.scheduledDelayMillis ?? 1000,
    exportTimeoutMillis: options.exportTimeoutMillis ?? 10_000,
  });
  const provider = new BasicTracerProvider({
    resource: resourceFromAttributes({
      [ATTR_SERVICE_NAME]: options.serviceName,
      [ATTR_SERVICE_VERSION]: options.serviceVersion,
    }),
    idGenerator: ids,
    spanProcessors: [
      {
        onStart: (span, ctx) => processor.onStart(span, ctx),
        // The batch processor drops silently past its queue: drop here instead, counted.
        onEnd(span) {
          if (ended - exporter.handed >= options.maxQueueSize) return options.onDropped(1);
          ended++;
          processor.onEnd(span);
        },
        forceFlush: () => processor.forceFlush(),
        shutdown: () => processor.shutdown(),
      },
    ],
  });
  const tracer = provider.getTracer('acs-guardian', options.serviceVersion);
  const propagator = new W3CTraceContextPropagator();

  function parentOf(observation: RequestObservation, facts: StepFacts): Context {
    const carrier = observation.carrier;
    if (carrier?.traceparent) {
      const ctx = propagator.extract(ROOT_CONTEXT, carrier, defaultTextMapGetter);
      if (trace.getSpanContext(ctx)) return ctx;
    }
    const tree = sessionTreeOf(facts);
    if (!tree) return ROOT_CONTEXT;
    ids.nextSpanId = tree.spanId;
    if (!tree.parentSpanId) {
      ids.nextTraceId = tree.traceId;
      return ROOT_CONTEXT;
    }
    return trace.setSpanContext(ROOT_CONTEXT, {
      traceId: tree.traceId,
      spanId: tree.parentSpanId,
      traceFlags: TraceFlags.SAMPLED,
      isRemote: true,
    });
  }

  return {
    record(observation, facts) {
      const parent = parentOf(observation, facts);
      const endMs = observation.epochMsOf(observation.endMs);
      const span = tracer.startSpan(
        spanNameOf(facts.method),
        { kind: SpanKind.SERVER, startTime: observation.startedAtEpochMs, attributes: stepAttributes(facts) },
        parent,
      );
      ids.nextTraceId = undefined;
      ids.nextSpanId = undefined;
      span.setAttribute('acs.transport', observation.transport);
      const inStep = trace.setSpan(parent, span);
      for (const mark of observation.stages) {
        tracer
          .startSpan(
            `acs.pipeline.${mark.stage}`,
            {
              kind: SpanKind.INTERNAL,
              startTime: observation.epochMsOf(mark.startMs),
              attributes: { 'acs.stage': mark.stage },
            },
            inStep,
          )
          .end(observation.epochMsOf(mark.endMs));
      }
      if (facts.decision) span.addEvent('acs.decision', decisionAttributes(facts.decision), endMs);
      if (facts.error) {
        span.setAttribute('rpc.jsonrpc.error_code', facts.error.code);
        span.setStatus({ code: SpanStatusCode.ERROR, message: facts.error.reason ?? `JSON-RPC ${facts.error.code}` });
      }
      span.end(endMs);
    },
    pending: () => ended - exporter.handed + exporter.inFlight,
    flush: () => provider.forceFlush(),
    shutdown: () => provider.shutdown(),
  };
}
