// The OTLP bodies written straight from step records (src/telemetry/traces/encoding.ts) against the OTel SDK's
// own: the same steps built as SDK spans (BasicTracerProvider, the span calls the Guardian made before it encoded
// records itself) and serialised by the official serializers, both decoded by protobufjs over the OTLP .proto
// files (protobuf) or parsed (JSON), then compared whole. Only the stage spans' random ids differ by design.
import { fileURLToPath } from 'node:url';
import {
  ROOT_CONTEXT,
  SpanKind,
  SpanStatusCode,
  TraceFlags,
  trace,
  type Attributes as OtelAttributes,
  type Context,
} from '@opentelemetry/api';
import { TraceState } from '@opentelemetry/core';
import { JsonTraceSerializer, ProtobufTraceSerializer } from '@opentelemetry/otlp-transformer';
import { resourceFromAttributes } from '@opentelemetry/resources';
import { BasicTracerProvider, type IdGenerator, type ReadableSpan } from '@opentelemetry/sdk-trace-base';
import protobuf from 'protobufjs';
import { describe, expect, it } from 'vitest';
import { PIPELINE_STAGES } from '../../src/telemetry/observation.ts';
import type { StepRecord } from '../../src/telemetry/record.ts';
import { jsonEncoding, protobufEncoding, type TracedStep } from '../../src/telemetry/traces/encoding.ts';
import { decisionAttributes, spanNameOf } from '../../src/telemetry/traces/mapping.ts';

const OTLP_PROTOS = fileURLToPath(new URL('../fixtures/otlp/', import.meta.url));
const root = new protobuf.Root();
root.resolvePath = (_origin, target) => OTLP_PROTOS + target;
root.loadSync('opentelemetry/proto/collector/trace/v1/trace_service.proto');
const Request = root.lookupType('opentelemetry.proto.collector.trace.v1.ExportTraceServiceRequest');

const SERVICE = { serviceName: 'acs-guardian', serviceVersion: '9.8.7' };
const T0 = 1_796_653_268_772.1409;

function record(over: Partial<StepRecord>): StepRecord {
  return {
    method: 'steps/toolCallRequest',
    provenance: [],
    transport: 'http',
    startEpochMs: T0,
    endEpochMs: T0 + 9.0576,
    // validate, authenticate, session, evaluate, commit, sign: every stage, with sub-millisecond ends.
    stages: [0, T0 + 0.1, 1, T0 + 0.401, 2, T0 + 2.2656, 3, T0 + 4.00001, 4, T0 + 5.7856, 5, T0 + 8.999999],
    attributes: {
      'acs.method': 'steps/toolCallRequest',
      'acs.request.id': 'a1b51cb6-e081-4a1b-b7e4-ad3f6a7fea86',
      'acs.session.id': 'c33a7df6-e5a7-4902-8c48-bc5bbf595b72',
      'gen_ai.tool.name': 'web.search — größer',
      'acs.capability': 'network',
      'acs.results.count': 3,
      'acs.confidence': 0.25,
      'acs.big': 2 ** 60,
      'acs.negative': -7,
      'acs.flag': true,
      'acs.provenance.origins': ['tool_output', 'user'],
      'acs.transport': 'http',
      // Long enough that its length takes two varint bytes (the writer moves such bodies).
      'acs.reasoning.long': 'x'.repeat(300),
    },
    ocsf: {},
    ...over,
  };
}

const DECISION: StepRecord['decision'] = {
  decision: 'deny',
  evaluator: 'deterministic',
  evaluatorVersion: 'acs-guardian/0.1.0',
  reasoning: 'tool not allowed',
  reasonCodes: ['tool_denied', 'policy'],
  citedProvenanceIds: ['p-1'],
  policyReferences: [],
  confidence: 1,
  chainHash: '15b8fe52df2921112c254dc2c59c51972f9f73fcffc2bbf2222eb673a977d881',
};

const STEPS: TracedStep[] = [
  // A decided step under a remote parent (the session tree) with a tracestate.
  {
    record: record({ decision: DECISION }),
    context: {
      traceId: '4bf92f3577b34da6a3ce929d0e0e4736',
      spanId: '00f067aa0ba902b7',
      parentSpanId: 'a3ce929d0e0e4736',
      remoteParent: true,
      traceState: 'vendor=a,other=b',
    },
  },
  // An error answer at the root of its trace, two stages only.
  {
    record: record({
      method: 'handshake/hello',
      stages: [0, T0 + 0.3, 1, T0 + 1],
      attributes: { 'acs.method': 'handshake/hello', 'acs.transport': 'stdio' },
      error: { code: -32600, reason: 'invalid_request' },
    }),
    context: { traceId: 'aaaaaaaaaaaaaaaabbbbbbbbbbbbbbbb', spanId: '1111111111111111', remoteParent: false },
  },
  // An error without a reason, an unmapped method, no stages.
  {
    record: record({ method: 'x/unknown', stages: [], attributes: {}, error: { code: -32601 } }),
    context: {
      traceId: 'cccccccccccccccccccccccccccccccc',
      spanId: '2222222222222222',
      parentSpanId: '3333333333333333',
      remoteParent: true,
    },
  },
];

/** The same steps as SDK spans, built with the span calls of the SDK's API. */
function sdkSpans(steps: readonly TracedStep[]): ReadableSpan[] {
  const ended: ReadableSpan[] = [];
  const next: { traceId?: string; spanId?: string } = {};
  let stageIds = 0;
  const ids: IdGenerator = {
    generateTraceId: () => next.traceId ?? 'ffffffffffffffffffffffffffffffff',
    generateSpanId: () => {
      const id = next.spanId ?? `5${String(++stageIds).padStart(15, '0')}`;
      next.spanId = undefined;
      return id;
    },
  };
  const provider = new BasicTracerProvider({
    resource: resourceFromAttributes({
      'service.name': SERVICE.serviceName,
      'service.version': SERVICE.serviceVersion,
    }),
    idGenerator: ids,
    spanProcessors: [
      {
        onStart: () => {},
        onEnd: (s) => ended.push(s),
        forceFlush: async () => {},
        shutdown: async () => {},
      },
    ],
  });
  const tracer = provider.getTracer('acs-guardian', SERVICE.serviceVersion);
  for (const { record: r, context: c } of steps) {
    next.traceId = c.traceId;
    next.spanId = c.spanId;
    const parent: Context = c.parentSpanId
      ? trace.setSpanContext(ROOT_CONTEXT, {
          traceId: c.traceId,
          spanId: c.parentSpanId,
          traceFlags: TraceFlags.SAMPLED,
          isRemote: true,
          ...(c.traceState ? { traceState: new TraceState(c.traceState) } : {}),
        })
      : ROOT_CONTEXT;
    const span = tracer.startSpan(
      spanNameOf(r.method),
      { kind: SpanKind.SERVER, startTime: r.startEpochMs, attributes: r.attributes as OtelAttributes },
      parent,
    );
    const inStep = trace.setSpan(parent, span);
    let began = r.startEpochMs;
    for (let i = 0; i < r.stages.length; i += 2) {
      tracer
        .startSpan(
          `acs.pipeline.${PIPELINE_STAGES[r.stages[i]]}`,
          { kind: SpanKind.INTERNAL, startTime: began, attributes: { 'acs.stage': PIPELINE_STAGES[r.stages[i]] } },
          inStep,
        )
        .end(r.stages[i + 1]);
      began = r.stages[i + 1];
    }
    if (r.decision) span.addEvent('acs.decision', decisionAttributes(r.decision) as OtelAttributes, r.endEpochMs);
    if (r.error) {
      span.setAttribute('rpc.jsonrpc.error_code', r.error.code);
      span.setStatus({ code: SpanStatusCode.ERROR, message: r.error.reason ?? `JSON-RPC ${r.error.code}` });
    }
    span.end(r.endEpochMs);
  }
  return ended;
}

type Span = Record<string, unknown> & { spanId: string; parentSpanId?: string; name: string };
type Body = { resourceSpans: { scopeSpans: { spans: Span[] }[] }[] };

/** Stage span ids are random in the Guardian's bodies: each stage span's id becomes its order in the body. */
function withStageIdsNamed(body: Body): Body {
  let n = 0;
  for (const rs of body.resourceSpans)
    for (const ss of rs.scopeSpans)
      for (const span of ss.spans) if (span.name.startsWith('acs.pipeline.')) span.spanId = `stage-${++n}`;
  return body;
}
/** Spans in one order (the SDK ends the stage spans first; the Guardian writes them first as well). */
function spansIn(body: Body): Span[] {
  return body.resourceSpans.flatMap((rs) => rs.scopeSpans.flatMap((ss) => ss.spans));
}

const decodeProtobuf = (bytes: Uint8Array): Body =>
  Request.toObject(Request.decode(bytes), {
    longs: String,
    bytes: String,
    enums: Number,
    defaults: true,
    arrays: true,
  }) as Body;

describe('OTLP bodies written from step records', () => {
  it('protobuf: the bytes decode to what the SDK and its serializer write for the same spans', () => {
    const ours = withStageIdsNamed(decodeProtobuf(protobufEncoding(SERVICE).encode(STEPS)));
    const sdk = withStageIdsNamed(decodeProtobuf(ProtobufTraceSerializer.serializeRequest(sdkSpans(STEPS))!));
    // Stage span ids in the SDK run were sequential; named alike on both sides, everything else compared as is.
    expect(spansIn(ours)).toHaveLength(1 + 6 + 1 + 2 + 1);
    expect(ours).toEqual(sdk);
    // Sanity: a field the comparison depends on is really there.
    const step = spansIn(ours).find((s) => s.name === 'gen_ai.tool.call')!;
    expect(step.traceState).toBe('vendor=a,other=b');
    expect(step.startTimeUnixNano).toMatch(/^1796653268772140\d{3}$/);
  });

  it('JSON: the same body as the SDK JSON serializer writes, member for member', () => {
    const parse = (bytes: Uint8Array): Body => JSON.parse(Buffer.from(bytes).toString('utf8')) as Body;
    const ours = spansIn(withStageIdsNamed(parse(jsonEncoding(SERVICE).encode(STEPS))));
    const sdk = spansIn(withStageIdsNamed(parse(JsonTraceSerializer.serializeRequest(sdkSpans(STEPS))!)));
    expect(ours).toHaveLength(sdk.length);
    // The SDK writes zero counts and empty lists the JSON mapping lets a writer leave out; compare what either
    // side sets, with 64-bit integers as the decimal strings the mapping prescribes (numbers are accepted too).
    // The SDK writes an int64 as a JSON number, which for 2^60 reads back as the same double: the same integer.
    const asInteger = (x: unknown): string => BigInt(Number(x)).toString();
    const meaningful = (v: unknown): unknown => {
      if (Array.isArray(v)) return v.map(meaningful);
      if (v && typeof v === 'object')
        return Object.fromEntries(
          Object.entries(v)
            .filter(([k, x]) => !/^dropped/.test(k) && !(Array.isArray(x) && x.length === 0) && x !== undefined)
            .map(([k, x]) => [k, k === 'intValue' || k.endsWith('UnixNano') ? asInteger(x) : meaningful(x)]),
        );
      return v;
    };
    expect(meaningful(ours)).toEqual(meaningful(sdk));
  });

  it('OTEL_ATTRIBUTE_VALUE_LENGTH_LIMIT cuts long strings, in lists too', () => {
    const step: TracedStep = {
      record: record({ stages: [], attributes: { long: 'abcdefgh', list: ['123456789', 'ok'] } }),
      context: { traceId: 'dddddddddddddddddddddddddddddddd', spanId: '4444444444444444', remoteParent: false },
    };
    const span = spansIn(
      decodeProtobuf(protobufEncoding({ ...SERVICE, attributeValueLengthLimit: 4 }).encode([step])),
    )[0];
    expect(span.attributes).toEqual([
      expect.objectContaining({ key: 'long', value: expect.objectContaining({ stringValue: 'abcd' }) }),
      expect.objectContaining({
        key: 'list',
        value: expect.objectContaining({
          arrayValue: {
            values: [expect.objectContaining({ stringValue: '1234' }), expect.objectContaining({ stringValue: 'ok' })],
          },
        }),
      }),
    ]);
  });
});
