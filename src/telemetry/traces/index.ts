// OpenTelemetry traces: one span per answered message, named and attributed per the ACS OTel mapping, the
// decision as its `acs.decision` span event, a child span per pipeline stage, exported over OTLP/HTTP by the
// official SDK's batch processor. This module (and so the SDK) is imported only when an exporter is configured.
//
// Parenting: a W3C `traceparent` on the request makes the step span its child (the agent's session or turn span,
// ACS §Trace "Span hierarchy"); without one, every step of a session shares one trace id derived from the session
// id, so a backend still shows the session's steps together.
import { createHash, randomBytes } from 'node:crypto';
import { defaultTextMapGetter, ROOT_CONTEXT, SpanKind, SpanStatusCode, trace, type Context } from '@opentelemetry/api';
import { ExportResultCode, W3CTraceContextPropagator, type ExportResult } from '@opentelemetry/core';
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-http';
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

export interface StepTracerOptions {
  /** The OTLP/HTTP traces URL (…/v1/traces). */
  url: string;
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

/** Random ids, except the trace id of the next root span when one is set (session-derived traces). */
class SessionTraceIds implements IdGenerator {
  nextTraceId: string | undefined;
  generateTraceId(): string {
    const id = this.nextTraceId ?? randomBytes(16).toString('hex');
    this.nextTraceId = undefined;
    return id;
  }
  generateSpanId(): string {
    return randomBytes(8).toString('hex');
  }
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

export function openStepTracer(options: StepTracerOptions): StepTracer {
  const ids = new SessionTraceIds();
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
    if (facts.sessionId) ids.nextTraceId = createHash('sha256').update(facts.sessionId).digest('hex').slice(0, 32);
    return ROOT_CONTEXT;
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
