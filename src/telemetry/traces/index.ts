// OpenTelemetry traces: one span per answered message, named and attributed per the ACS OTel mapping, the
// decision as its `acs.decision` span event, a child span per pipeline stage, exported over OTLP/HTTP (protobuf or
// JSON encoding) by the official OTLP export delegate (@opentelemetry/otlp-exporter-base: HTTP agent, retries with
// backoff, timeouts, the concurrency bound, the OTEL_EXPORTER_OTLP_* settings). The request bodies are encoded
// straight from the step records (encoding.ts), batched here as the SDK's batch span processor batches
// (OTEL_BSP_*): building SDK span objects and encoding them again was most of the export thread's time per step
// (docs/telemetry.md "Spans", docs/performance.md). This module is imported only when an exporter is configured.
//
// Parenting (ACS §Trace "Span hierarchy"): a W3C `traceparent` on the request makes the step span its child (the
// agent's own session or turn span), and its sampled flag is honoured (parentbased_always_on, the OTel default).
// Without one the Guardian builds the session's tree itself from ids derived from the session and turn ids, so
// every replica of a fleet derives the same ones: one trace per session, the sessionStart span (`acs.session`) its
// root, each turnStart span (`acs.turn`) a child of the session span (or of its parent turn's), a step that names
// a turn (metadata.turn_id) a child of that turn's span, session-level steps (agentTrigger, sessionEnd, the
// handshake, steps outside a turn) children of the session span.
import { createHash } from 'node:crypto';
import { defaultTextMapGetter, ROOT_CONTEXT, TraceFlags, trace } from '@opentelemetry/api';
import { ExportResultCode, W3CTraceContextPropagator } from '@opentelemetry/core';
import { OTLPExporterBase } from '@opentelemetry/otlp-exporter-base';
import { convertLegacyHttpOptions, createOtlpHttpExportDelegate } from '@opentelemetry/otlp-exporter-base/node-http';
import { JsonTraceSerializer, ProtobufTraceSerializer } from '@opentelemetry/otlp-transformer';
import { BoundedQueue } from '../queue.ts';
import type { StepRecord } from '../record.ts';
import {
  jsonEncoding,
  protobufEncoding,
  randomHex,
  type StepContext,
  type TraceEncoding,
  type TracedStep,
} from './encoding.ts';

/** OTLP/HTTP encodings (OTEL_EXPORTER_OTLP_PROTOCOL); gRPC is not offered. */
export type OtlpProtocol = 'http/protobuf' | 'http/json';

/** OTEL_TRACES_SAMPLER values a Guardian honours: every step is traced, or every step the caller samples. */
export type TraceSampler = 'parentbased_always_on' | 'always_on';

export interface StepTracerOptions {
  /** The OTLP/HTTP traces URL (…/v1/traces). */
  url: string;
  protocol: OtlpProtocol;
  headers?: Record<string, string>;
  serviceName: string;
  serviceVersion: string;
  sampler: TraceSampler;
  /** Strings in attributes are cut to this many characters (OTEL_SPAN_ATTRIBUTE_VALUE_LENGTH_LIMIT). */
  attributeValueLengthLimit: number;
  /** Spans in exports not answered yet, at most (OTEL_BSP_MAX_QUEUE_SIZE); past it steps wait. */
  maxQueueSize: number;
  /** Spans per export at most (OTEL_BSP_MAX_EXPORT_BATCH_SIZE); a step's spans are never split. */
  maxExportBatchSize: number;
  /** Steps waiting to be exported, at most; beyond it a step's spans are dropped and counted. */
  maxWaitingSteps: number;
  scheduledDelayMillis?: number;
  exportTimeoutMillis?: number;
  /** Told how many spans were lost and why (queue full, collector down, refused, timed out, shutdown deadline). */
  onDropped(count: number, why: string): void;
  /** Told of a record no span could be built from (a bug, reported rather than thrown). */
  onFailed(message: string): void;
}

export interface StepTracer {
  /** Queues the step's spans for export; never waits. */
  record(record: StepRecord): void;
  /** Spans of waiting steps, or in an export that has not answered yet. */
  pending(): number;
  /**
   * Exports everything held, then `last` (what the caller still held, past the waiting bound: its own bound
   * limited it already), then stops.
   */
  shutdown(last: readonly StepRecord[]): Promise<void>;
  /** Gives up what is still held (the shutdown deadline passed): counted as dropped once, nothing counted after. */
  abandon(): void;
}

/** Derived ids of the sessions seen lately: every step of a session needs its trace id and a parent's span id. */
const DERIVED = new Map<string, string>();
const DERIVED_KEPT = 8192;

/** `bytes` hex digits of SHA-256 over the parts: a trace or span id every replica derives alike. */
function derivedId(bytes: number, ...parts: string[]): string {
  const text = parts.join('\u0000');
  const key = `${bytes}\u0000${text}`;
  let id = DERIVED.get(key);
  if (id === undefined) {
    id = createHash('sha256')
      .update(text)
      .digest('hex')
      .slice(0, bytes * 2);
    if (DERIVED.size >= DERIVED_KEPT) DERIVED.clear();
    DERIVED.set(key, id);
  }
  return id;
}
const sessionTraceId = (sessionId: string): string => derivedId(16, sessionId);
const sessionSpanId = (sessionId: string): string => derivedId(8, 'acs.session', sessionId);
const turnSpanId = (sessionId: string, turnId: string): string => derivedId(8, 'acs.turn', sessionId, turnId);

/** Steps that belong to the session, not to a turn, even when they name one (request-envelope metadata.turn_id). */
const SESSION_LEVEL = new Set(['steps/sessionStart', 'steps/sessionEnd', 'steps/agentTrigger', 'handshake/hello']);

/**
 * Where a step sits in its session's tree: its parent's span id (none for the session span) and, for the
 * sessionStart and turnStart spans answered with a decision, the derived span id the rest of the tree points at.
 */
export function sessionTreeOf(facts: StepRecord): { traceId: string; parentSpanId?: string; spanId?: string } | null {
  const session = facts.sessionId;
  if (!session) return null;
  const traceId = sessionTraceId(session);
  const decided = facts.decision !== undefined;
  if (facts.method === 'steps/sessionStart')
    return decided ? { traceId, spanId: sessionSpanId(session) } : { traceId, parentSpanId: sessionSpanId(session) };
  if (facts.method === 'steps/turnStart') {
    const turn = facts.payloadTurnId ?? facts.turnId;
    const parentTurn = facts.payloadParentTurnId ?? facts.parentTurnId;
    const parentSpanId = parentTurn ? turnSpanId(session, parentTurn) : sessionSpanId(session);
    return decided && turn ? { traceId, parentSpanId, spanId: turnSpanId(session, turn) } : { traceId, parentSpanId };
  }
  const turn = facts.method === 'steps/turnEnd' ? (facts.payloadTurnId ?? facts.turnId) : facts.turnId;
  if (turn && !SESSION_LEVEL.has(facts.method)) return { traceId, parentSpanId: turnSpanId(session, turn) };
  return { traceId, parentSpanId: sessionSpanId(session) };
}

/** The spans of one step: its own and one per pipeline stage it passed. */
const spansOf = (record: StepRecord): number => 1 + record.stages.length / 2;

export async function openStepTracer(options: StepTracerOptions): Promise<StepTracer> {
  const propagator = new W3CTraceContextPropagator();
  const encodingOptions = {
    serviceName: options.serviceName,
    serviceVersion: options.serviceVersion,
    ...(options.attributeValueLengthLimit < Number.MAX_SAFE_INTEGER
      ? { attributeValueLengthLimit: options.attributeValueLengthLimit }
      : {}),
  };
  const encoding: TraceEncoding =
    options.protocol === 'http/protobuf' ? protobufEncoding(encodingOptions) : jsonEncoding(encodingOptions);
  const responses = options.protocol === 'http/protobuf' ? ProtobufTraceSerializer : JsonTraceSerializer;
  const exporter = new OTLPExporterBase<TracedStep[]>(
    createOtlpHttpExportDelegate(
      convertLegacyHttpOptions(
        {
          url: options.url,
          ...(options.headers ? { headers: options.headers } : {}),
          timeoutMillis: options.exportTimeoutMillis ?? 10_000,
        },
        'TRACES',
        'v1/traces',
        { 'Content-Type': encoding.contentType },
      ),
      {
        serializeRequest: (steps) => encodeReporting(steps),
        deserializeResponse: (data) => responses.deserializeResponse(data),
      },
      'otlp_http_span_exporter',
      { name: 'span', countItems: (steps) => steps.reduce((n, s) => n + spansOf(s.record), 0) },
      undefined,
    ),
  );
  /** A record the encoder cannot take is reported and left out; the rest of its batch goes. */
  function encodeReporting(steps: TracedStep[]): Uint8Array {
    try {
      return encoding.encode(steps);
    } catch {
      const good = steps.filter((step) => {
        try {
          encoding.encode([step]);
          return true;
        } catch (err) {
          options.onFailed(err instanceof Error ? err.message : String(err));
          return false;
        }
      });
      return encoding.encode(good);
    }
  }

  /** Set once the shutdown deadline passed: what was held is counted then, at once, and nothing after. */
  let abandoned = false;
  const dropped = (count: number, why: string): void => {
    if (!abandoned) options.onDropped(count, why);
  };

  /** Where the step's span sits, or null when the caller's traceparent says it is not sampled. */
  function contextOf(record: StepRecord): StepContext | null {
    const spanId = randomHex(8);
    if (record.traceparent) {
      const carrier = record.tracestate
        ? { traceparent: record.traceparent, tracestate: record.tracestate }
        : { traceparent: record.traceparent };
      const parent = trace.getSpanContext(propagator.extract(ROOT_CONTEXT, carrier, defaultTextMapGetter));
      if (parent) {
        if (options.sampler === 'parentbased_always_on' && (parent.traceFlags & TraceFlags.SAMPLED) === 0) return null;
        const traceState = parent.traceState?.serialize();
        return {
          traceId: parent.traceId,
          spanId,
          parentSpanId: parent.spanId,
          remoteParent: true,
          ...(traceState ? { traceState } : {}),
        };
      }
    }
    const tree = sessionTreeOf(record);
    if (!tree) return { traceId: randomHex(16), spanId, remoteParent: false };
    return tree.parentSpanId
      ? { traceId: tree.traceId, spanId: tree.spanId ?? spanId, parentSpanId: tree.parentSpanId, remoteParent: true }
      : { traceId: tree.traceId, spanId: tree.spanId ?? spanId, remoteParent: false };
  }

  // Steps wait here until a batch fills (OTEL_BSP_MAX_EXPORT_BATCH_SIZE spans) or the schedule delay passes, and
  // while the exports in flight hold OTEL_BSP_MAX_QUEUE_SIZE spans: a collector that never answers holds at most
  // that many, the rest wait up to maxWaitingSteps and past it are dropped, counted (docs/telemetry.md "Never
  // blocking a decision"). The OTLP delegate fails every export past its own concurrency limit (30), above this.
  const waiting = new BoundedQueue<TracedStep>(options.maxWaitingSteps, () => {});
  /** Spans the waiting steps will make. */
  let waitingSpans = 0;
  let inFlight = 0;
  const inFlightBatches = new Set<Promise<void>>();
  let timer: NodeJS.Timeout | null = null;
  /** The schedule delay passed (or a flush is under way): a batch short of a full one goes too. */
  let due = false;
  const batchSpans = Math.min(options.maxExportBatchSize, options.maxQueueSize);

  /** The oldest waiting steps, as many as fit one export (at least one: a step's spans are never split). */
  function takeBatch(): { batch: TracedStep[]; spans: number } {
    const batch: TracedStep[] = [];
    let spans = 0;
    for (let next = waiting.peek(); next !== undefined; next = waiting.peek()) {
      const n = spansOf(next.record);
      if (batch.length > 0 && spans + n > batchSpans) break;
      batch.push(...waiting.take(1));
      spans += n;
    }
    waitingSpans -= spans;
    return { batch, spans };
  }
  function exportBatch({ batch, spans }: { batch: TracedStep[]; spans: number }): void {
    inFlight += spans;
    const answered = new Promise<void>((resolve) =>
      exporter.export(batch, (result) => {
        inFlight -= spans;
        if (result.code !== ExportResultCode.SUCCESS)
          dropped(spans, result.error ? `export failed: ${result.error.message}` : 'export failed');
        resolve();
      }),
    );
    inFlightBatches.add(answered);
    void answered.then(() => {
      inFlightBatches.delete(answered);
      pump();
    });
  }
  /** Sends what may go now: full batches, or everything once due, while the exports in flight leave room. */
  function pump(): void {
    if (abandoned) return;
    while (waitingSpans > 0 && (due || waitingSpans >= batchSpans) && inFlight < options.maxQueueSize)
      exportBatch(takeBatch());
    if (waitingSpans === 0) due = false;
    if (waitingSpans > 0 && !due && !timer) {
      timer = setTimeout(() => {
        timer = null;
        due = true;
        pump();
      }, options.scheduledDelayMillis ?? 1000);
      timer.unref();
    }
  }
  return {
    record(record) {
      let context: StepContext | null;
      try {
        context = contextOf(record);
      } catch (err) {
        return options.onFailed(err instanceof Error ? err.message : String(err));
      }
      if (!context || abandoned) return;
      if (!waiting.push({ record, context })) return dropped(spansOf(record), 'queue full');
      waitingSpans += spansOf(record);
      pump();
    },
    pending: () => waitingSpans + inFlight,
    async shutdown(last) {
      for (const record of last) {
        try {
          const context = contextOf(record);
          if (!context) continue;
          waiting.keep({ record, context });
          waitingSpans += spansOf(record);
        } catch (err) {
          options.onFailed(err instanceof Error ? err.message : String(err));
        }
      }
      if (timer) clearTimeout(timer);
      timer = null;
      due = true;
      // Batches go as the exports in flight are answered (pump), until nothing waits and every export answered.
      pump();
      while (!abandoned && (waitingSpans > 0 || inFlightBatches.size > 0)) {
        await Promise.race(inFlightBatches);
        pump();
      }
      if (!abandoned) await exporter.shutdown();
    },
    abandon() {
      if (abandoned) return;
      // Exports still unanswered are lost too: the caller stops the exporters (the export thread) next.
      const lost = waitingSpans + inFlight;
      abandoned = true;
      if (timer) clearTimeout(timer);
      timer = null;
      waiting.take(waiting.size);
      waitingSpans = 0;
      if (lost > 0) options.onDropped(lost, 'not exported before the shutdown deadline');
    },
  };
}
