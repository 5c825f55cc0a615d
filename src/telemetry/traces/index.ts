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
import { createHash, randomFillSync } from 'node:crypto';
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
import { BoundedQueue } from '../queue.ts';
import type { StepRecord } from '../record.ts';
import { PIPELINE_STAGES } from '../observation.ts';
import { decisionAttributes, spanNameOf } from './mapping.ts';

/** OTLP/HTTP encodings (OTEL_EXPORTER_OTLP_PROTOCOL); gRPC is not offered. */
export type OtlpProtocol = 'http/protobuf' | 'http/json';

export interface StepTracerOptions {
  /** The OTLP/HTTP traces URL (…/v1/traces). */
  url: string;
  protocol: OtlpProtocol;
  headers?: Record<string, string>;
  serviceName: string;
  serviceVersion: string;
  /** Spans the batch processor holds for export at most (OTEL_BSP_MAX_QUEUE_SIZE). */
  maxQueueSize: number;
  /**
   * Steps whose spans wait to be built while the batch processor's queue is full, at most; beyond it a step's
   * spans are dropped and counted.
   */
  maxWaitingSteps: number;
  scheduledDelayMillis?: number;
  exportTimeoutMillis?: number;
  /** Told how many spans were lost and why (queue full, collector down, refused, timed out, shutdown deadline). */
  onDropped(count: number, why: string): void;
  /** Told of a record no span could be built from (a bug, reported rather than thrown). */
  onFailed(message: string): void;
}

export interface StepTracer {
  /** Builds the step's spans, or holds the step until the batch processor has room; never waits. */
  record(record: StepRecord): void;
  /** Spans of waiting steps, queued, or in an export that has not answered yet. */
  pending(): number;
  /**
   * Exports everything held, then `last` (what the caller still held, past the waiting bound: its own bound
   * limited it already), then stops.
   */
  shutdown(last: readonly StepRecord[]): Promise<void>;
  /** Gives up what is still held (the shutdown deadline passed): counted as dropped once, nothing counted after. */
  abandon(): void;
}

/** Random bytes drawn a page at a time: a step makes seven spans, each wanting an id. */
const RANDOM = Buffer.alloc(4096);
let randomAt = RANDOM.length;
function randomHex(bytes: number): string {
  if (randomAt + bytes > RANDOM.length) {
    randomFillSync(RANDOM);
    randomAt = 0;
  }
  randomAt += bytes;
  return RANDOM.toString('hex', randomAt - bytes, randomAt);
}

/** Random ids, except the trace id and span id of the next span when set (session-derived trees). */
class SessionTraceIds implements IdGenerator {
  nextTraceId: string | undefined;
  nextSpanId: string | undefined;
  generateTraceId(): string {
    const id = this.nextTraceId ?? randomHex(16);
    this.nextTraceId = undefined;
    return id;
  }
  generateSpanId(): string {
    const id = this.nextSpanId ?? randomHex(8);
    this.nextSpanId = undefined;
    return id;
  }
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

/**
 * Counts what an export could not deliver (the batch processor itself only logs), and tells `onProgress` when a
 * batch leaves the processor's queue or is answered: room for the spans of waiting steps.
 */
class CountingExporter implements SpanExporter {
  readonly #inner: SpanExporter;
  readonly #onDropped: (count: number, why: string) => void;
  readonly #onProgress: () => void;
  inFlight = 0;
  /** Spans ever handed to export (the batch processor's queue holds the ended spans not handed yet). */
  handed = 0;
  constructor(inner: SpanExporter, onDropped: (count: number, why: string) => void, onProgress: () => void) {
    this.#inner = inner;
    this.#onDropped = onDropped;
    this.#onProgress = onProgress;
  }
  export(spans: ReadableSpan[], done: (result: ExportResult) => void): void {
    this.inFlight += spans.length;
    this.handed += spans.length;
    this.#onProgress();
    this.#inner.export(spans, (result) => {
      this.inFlight -= spans.length;
      if (result.code !== ExportResultCode.SUCCESS)
        this.#onDropped(spans.length, result.error ? `export failed: ${result.error.message}` : 'export failed');
      done(result);
      this.#onProgress();
    });
  }
  shutdown(): Promise<void> {
    return this.#inner.shutdown();
  }
  forceFlush(): Promise<void> {
    return this.#inner.forceFlush?.() ?? Promise.resolve();
  }
}

/** The spans of one step: its own and one per pipeline stage it passed. */
const spansOf = (record: StepRecord): number => 1 + record.stages.length / 2;

export async function openStepTracer(options: StepTracerOptions): Promise<StepTracer> {
  const ids = new SessionTraceIds();
  const { OTLPTraceExporter } =
    options.protocol === 'http/protobuf'
      ? await import('@opentelemetry/exporter-trace-otlp-proto')
      : await import('@opentelemetry/exporter-trace-otlp-http');
  /** Set once the shutdown deadline passed: what was held is counted then, at once, and nothing after. */
  let abandoned = false;
  const dropped = (count: number, why: string): void => {
    if (!abandoned) options.onDropped(count, why);
  };
  const exporter = new CountingExporter(
    new OTLPTraceExporter({
      url: options.url,
      ...(options.headers ? { headers: options.headers } : {}),
      timeoutMillis: options.exportTimeoutMillis ?? 10_000,
    }),
    dropped,
    () => schedulePump(),
  );
  let ended = 0;
  /** Ended spans in the batch processor's queue, not handed to an export yet. */
  const queued = (): number => ended - exporter.handed;
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
        // The batch processor drops silently past its queue: drop here instead, counted. Steps are only built
        // when their spans fit (fill), so this is reached only by a step larger than the whole queue.
        onEnd(span) {
          if (queued() >= options.maxQueueSize) return dropped(1, 'queue full');
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

  /** Stage span attributes, one object per stage shared by every span (the SDK copies what it is given). */
  const stageAttributes = PIPELINE_STAGES.map((stage) => ({ 'acs.stage': stage }));
  const stageNames = PIPELINE_STAGES.map((stage) => `acs.pipeline.${stage}`);

  function parentOf(record: StepRecord): Context {
    if (record.traceparent) {
      const carrier = record.tracestate
        ? { traceparent: record.traceparent, tracestate: record.tracestate }
        : { traceparent: record.traceparent };
      const ctx = propagator.extract(ROOT_CONTEXT, carrier, defaultTextMapGetter);
      if (trace.getSpanContext(ctx)) return ctx;
    }
    const tree = sessionTreeOf(record);
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

  /** Builds the spans of `record`; a record they cannot be built from is reported, not thrown. */
  function build(record: StepRecord): void {
    try {
      buildSpans(record);
    } catch (err) {
      options.onFailed(err instanceof Error ? err.message : String(err));
    }
  }
  function buildSpans(record: StepRecord): void {
    const parent = parentOf(record);
    const span = tracer.startSpan(
      spanNameOf(record.method),
      { kind: SpanKind.SERVER, startTime: record.startEpochMs, attributes: record.attributes },
      parent,
    );
    ids.nextTraceId = undefined;
    ids.nextSpanId = undefined;
    const inStep = trace.setSpan(parent, span);
    const stages = record.stages;
    let began = record.startEpochMs;
    for (let i = 0; i < stages.length; i += 2) {
      const stage = stages[i];
      tracer
        .startSpan(
          stageNames[stage],
          { kind: SpanKind.INTERNAL, startTime: began, attributes: stageAttributes[stage] },
          inStep,
        )
        .end(stages[i + 1]);
      began = stages[i + 1];
    }
    if (record.decision) span.addEvent('acs.decision', decisionAttributes(record.decision), record.endEpochMs);
    if (record.error) {
      span.setAttribute('rpc.jsonrpc.error_code', record.error.code);
      span.setStatus({
        code: SpanStatusCode.ERROR,
        message: record.error.reason ?? `JSON-RPC ${record.error.code}`,
      });
    }
    span.end(record.endEpochMs);
  }

  // Steps arrive in batches of up to 128 (seven spans each, many times what one export takes), and at a few
  // thousand a second faster than the batch processor exports on its own: one batch of at most 512 spans in
  // flight at a time, the rest of its queue (OTEL_BSP_MAX_QUEUE_SIZE) waiting, everything past it dropped, even
  // with a collector answering 200 at once. So a step whose spans do not fit waits here as its record (a fraction
  // of its spans' memory) and its spans are built once exports make room; while steps wait, the rest of the
  // processor's queue is exported alongside (forceFlush: the queue in parallel batches), so the export rate
  // follows the arrival rate (docs/telemetry.md "Never blocking a decision").
  const waiting = new BoundedQueue<StepRecord>(options.maxWaitingSteps, () => {});
  /** Spans the waiting steps will make. */
  let waitingSpans = 0;
  /** Whether all of `spans` fit in the processor's queue now; an empty queue takes any step. */
  const fits = (spans: number): boolean => queued() === 0 || queued() + spans <= options.maxQueueSize;

  /** Builds the spans of waiting steps, oldest first, while they fit. */
  function fill(): void {
    for (let next = waiting.peek(); next !== undefined && !abandoned; next = waiting.peek()) {
      const spans = spansOf(next);
      if (!fits(spans)) return;
      waiting.take(1);
      waitingSpans -= spans;
      build(next);
    }
  }

  let round: Promise<void> | null = null;
  /** Exports everything queued now, in parallel batches; one such round at a time. */
  function flushRound(): Promise<void> {
    round ??= processor
      .forceFlush()
      // A failed export was counted by the exporter; the round only says when the batches were answered.
      .catch(() => {})
      .finally(() => {
        round = null;
        schedulePump();
      });
    return round;
  }

  let pumping = false;
  /**
   * After an export left the queue or was answered (not within the processor's own export call, which it is
   * still in the middle of), and after steps began to wait.
   */
  function schedulePump(): void {
    if (pumping) return;
    pumping = true;
    setImmediate(pump);
  }
  function pump(): void {
    pumping = false;
    fill();
    // Bounded so that about two queues of spans are in flight at most: the OTLP exporter fails every export past
    // its concurrency limit (30 by default, otlp-exporter-base), and a collector that never answers holds them all.
    if (waiting.size > 0 && round === null && exporter.inFlight < options.maxQueueSize) void flushRound();
  }

  return {
    record(record) {
      if (waiting.size === 0 && fits(spansOf(record))) return build(record);
      if (!waiting.push(record)) return dropped(spansOf(record), 'queue full');
      waitingSpans += spansOf(record);
      schedulePump();
    },
    pending: () => waitingSpans + queued() + exporter.inFlight,
    async shutdown(last) {
      for (const record of last) {
        waiting.keep(record);
        waitingSpans += spansOf(record);
      }
      // Rounds until no step waits (each round exports what fits, the pump refills the queue as batches leave),
      // then the processor's own shutdown exports the rest and waits for every export's answer.
      while (waiting.size > 0 && !abandoned) {
        fill();
        await flushRound();
      }
      if (!abandoned) await provider.shutdown();
    },
    abandon() {
      if (abandoned) return;
      // Exports still unanswered are lost too: the caller stops the exporters (the export thread) next.
      const lost = waitingSpans + queued() + exporter.inFlight;
      abandoned = true;
      waiting.take(waiting.size);
      waitingSpans = 0;
      if (lost > 0) options.onDropped(lost, 'not exported before the shutdown deadline');
    },
  };
}
