// OTLP trace export bodies (ExportTraceServiceRequest) written straight from step records: a step's spans are
// known in full once it is answered, so no span objects are built in between. Field numbers and wire types are
// opentelemetry-proto's (trace/v1/trace.proto, common/v1/common.proto, resource/v1/resource.proto); the JSON form
// follows the OTLP specification's JSON Protobuf Encoding (lowerCamelCase names, hex ids, 64-bit integers as
// decimal strings, enums as integers). Each span carries what the OTel SDK's exporter writes for it: the flags
// with the is-remote bits, a status on every span, integers within int64 as int_value and other numbers as
// double_value (docs/telemetry.md "Traces").
import { randomFillSync } from 'node:crypto';
import { PIPELINE_STAGES } from '../observation.ts';
import type { AttributeValue, Attributes, StepRecord } from '../record.ts';
import { decisionAttributes, spanNameOf } from './mapping.ts';

/** Where a step's span sits: its ids, its parent's, and the W3C tracestate it carries on. */
export interface StepContext {
  traceId: string;
  spanId: string;
  parentSpanId?: string;
  /** The parent came from elsewhere (the request's traceparent, or the session tree's derived ids). */
  remoteParent: boolean;
  traceState?: string;
}

export interface TracedStep {
  record: StepRecord;
  context: StepContext;
}

export interface TraceEncoding {
  contentType: string;
  encode(steps: readonly TracedStep[]): Uint8Array;
}

export interface EncodingOptions {
  serviceName: string;
  serviceVersion: string;
  /** OTEL_ATTRIBUTE_VALUE_LENGTH_LIMIT: longer strings are cut to this many characters (none: no limit). */
  attributeValueLengthLimit?: number;
}

/** Random bytes drawn a page at a time: each stage span wants a span id. */
const RANDOM = Buffer.alloc(4096);
let randomAt = RANDOM.length;
/** Where the next `bytes` random bytes start in RANDOM. */
function drawRandom(bytes: number): number {
  if (randomAt + bytes > RANDOM.length) {
    randomFillSync(RANDOM);
    randomAt = 0;
  }
  randomAt += bytes;
  return randomAt - bytes;
}
export function randomHex(bytes: number): string {
  const at = drawRandom(bytes);
  return RANDOM.toString('hex', at, at + bytes);
}

// proto enums: Span.SpanKind, Status.StatusCode; Span.flags bits (SpanFlags).
const KIND_INTERNAL = 1;
const KIND_SERVER = 2;
const STATUS_ERROR = 2;
const TRACE_FLAGS_SAMPLED = 0x01;
const FLAGS_HAS_IS_REMOTE = 0x100;
const FLAGS_IS_REMOTE = 0x200;
/** A stage span's parent is the step span, in this process. */
const STAGE_FLAGS = TRACE_FLAGS_SAMPLED | FLAGS_HAS_IS_REMOTE;

/** Epoch milliseconds as whole seconds and nanoseconds, rounded as the OTel SDK rounds a millisecond time. */
function secondsAndNanos(ms: number): [number, number] {
  let seconds = Math.trunc(ms / 1000);
  let nanos = Math.round((ms - seconds * 1000) * 1e6);
  if (nanos >= 1e9) {
    seconds += 1;
    nanos -= 1e9;
  }
  return [seconds, nanos];
}

const STAGE_NAMES = PIPELINE_STAGES.map((stage) => `acs.pipeline.${stage}`);
const STAGE_ATTRIBUTES: Attributes[] = PIPELINE_STAGES.map((stage) => ({ 'acs.stage': stage }));

/** A span as both encodings need it. */
interface SpanParts {
  traceId: string;
  spanId: string;
  parentSpanId: string | undefined;
  traceState: string | undefined;
  flags: number;
  name: string;
  kind: number;
  start: number;
  end: number;
  attributes: Attributes;
  event: { name: string; time: number; attributes: Attributes } | undefined;
  status: { code: number; message: string } | undefined;
}

/** The step's own span (the stage spans are its children). */
function stepSpanOf({ record, context }: TracedStep): SpanParts {
  const error = record.error;
  const decision = record.decision;
  return {
    traceId: context.traceId,
    spanId: context.spanId,
    parentSpanId: context.parentSpanId,
    traceState: context.traceState,
    flags: TRACE_FLAGS_SAMPLED | FLAGS_HAS_IS_REMOTE | (context.remoteParent ? FLAGS_IS_REMOTE : 0),
    name: spanNameOf(record.method),
    kind: KIND_SERVER,
    start: record.startEpochMs,
    end: record.endEpochMs,
    attributes: error ? { ...record.attributes, 'rpc.jsonrpc.error_code': error.code } : record.attributes,
    event: decision
      ? { name: 'acs.decision', time: record.endEpochMs, attributes: decisionAttributes(decision) }
      : undefined,
    status: error ? { code: STATUS_ERROR, message: error.reason ?? `JSON-RPC ${error.code}` } : undefined,
  };
}

/** The spans of one step: a span per pipeline stage it passed (children of the step span), then its own. */
function spansOf(step: TracedStep, each: (span: SpanParts) => void): void {
  const { record, context } = step;
  const stages = record.stages;
  let began = record.startEpochMs;
  for (let i = 0; i < stages.length; i += 2) {
    each({
      traceId: context.traceId,
      spanId: randomHex(8),
      parentSpanId: context.spanId,
      traceState: context.traceState,
      flags: STAGE_FLAGS,
      name: STAGE_NAMES[stages[i]],
      kind: KIND_INTERNAL,
      start: began,
      end: stages[i + 1],
      attributes: STAGE_ATTRIBUTES[stages[i]],
      event: undefined,
      status: undefined,
    });
    began = stages[i + 1];
  }
  each(stepSpanOf(step));
}

/**
 * A protobuf writer over one growing buffer. A nested message reserves one byte for its length and moves its
 * body along once it turns out to need more (bodies under 128 bytes, most attributes, never move).
 */
class ProtoWriter {
  buf: Buffer;
  pos = 0;

  constructor(size = 64 * 1024) {
    this.buf = Buffer.allocUnsafe(size);
  }

  reset(): void {
    this.pos = 0;
  }
  #room(n: number): void {
    if (this.pos + n <= this.buf.length) return;
    const grown = Buffer.allocUnsafe(Math.max(this.buf.length * 2, this.pos + n));
    this.buf.copy(grown, 0, 0, this.pos);
    this.buf = grown;
  }
  tag(field: number, wire: number): void {
    this.varint(field * 8 + wire);
  }
  varint(n: number): void {
    this.#room(10);
    if (n >= 0 && n <= 0x7fffffff) {
      while (n > 0x7f) {
        this.buf[this.pos++] = (n & 0x7f) | 0x80;
        n >>>= 7;
      }
      this.buf[this.pos++] = n;
      return;
    }
    // int64 two's complement, ten bytes for a negative number.
    let big = BigInt.asUintN(64, BigInt(n));
    while (big > 0x7fn) {
      this.buf[this.pos++] = Number(big & 0x7fn) | 0x80;
      big >>= 7n;
    }
    this.buf[this.pos++] = Number(big);
  }
  fixed32(n: number): void {
    this.#room(4);
    this.buf.writeUInt32LE(n >>> 0, this.pos);
    this.pos += 4;
  }
  /** An epoch-millisecond time as fixed64 nanoseconds, computed exactly in halves below 2^53. */
  time(ms: number): void {
    const [seconds, nanos] = secondsAndNanos(ms);
    // seconds·1e9 + nanos = high·2^16·1e9 + (low·1e9 + nanos), with seconds = high·2^16 + low.
    const upper = Math.floor(seconds / 0x10000) * 1e9;
    const lower = (seconds % 0x10000) * 1e9 + nanos + (upper % 0x10000) * 0x10000;
    this.#room(8);
    this.buf.writeUInt32LE(lower % 0x100000000, this.pos);
    this.buf.writeUInt32LE((Math.floor(lower / 0x100000000) + Math.floor(upper / 0x10000)) >>> 0, this.pos + 4);
    this.pos += 8;
  }
  double(n: number): void {
    this.#room(8);
    this.buf.writeDoubleLE(n, this.pos);
    this.pos += 8;
  }
  string(s: string): void {
    const n = s.length;
    this.#room(n * 3 + 5);
    if (n < 0x80) {
      // Short ASCII, most keys, names and ids: written in place, its length known up front.
      const buf = this.buf;
      let p = this.pos + 1;
      let i = 0;
      for (; i < n; i++) {
        const c = s.charCodeAt(i);
        if (c >= 0x80) break;
        buf[p++] = c;
      }
      if (i === n) {
        buf[this.pos] = n;
        this.pos = p;
        return;
      }
    }
    const at = this.begin();
    this.pos += this.buf.write(s, this.pos, 'utf8');
    this.end(at);
  }
  /** Bytes encoded once (a key with its tag), copied in. */
  raw(bytes: Uint8Array): void {
    this.#room(bytes.length);
    this.buf.set(bytes, this.pos);
    this.pos += bytes.length;
  }
  hex(id: string): void {
    const bytes = id.length >>> 1;
    this.#room(bytes + 1);
    const buf = this.buf;
    let p = this.pos;
    buf[p++] = bytes;
    for (let i = 0; i < bytes; i++) {
      const hi = HEX[id.charCodeAt(2 * i)];
      const lo = HEX[id.charCodeAt(2 * i + 1)];
      if (hi === undefined || lo === undefined || hi < 0 || lo < 0) throw new Error(`not a hex id: ${id}`);
      buf[p++] = (hi << 4) | lo;
    }
    this.pos = p;
  }
  /** A random id of `bytes` bytes, as a length-delimited field body. */
  randomId(bytes: number): void {
    this.#room(bytes + 1);
    this.buf[this.pos++] = bytes;
    const at = drawRandom(bytes);
    RANDOM.copy(this.buf, this.pos, at, at + bytes);
    this.pos += bytes;
  }
  /** Opens a length-delimited body; end(at) closes it. */
  begin(): number {
    this.#room(1);
    return this.pos++;
  }
  end(at: number): void {
    const length = this.pos - at - 1;
    if (length < 0x80) {
      this.buf[at] = length;
      return;
    }
    let size = 1;
    for (let n = length; n > 0x7f; n >>>= 7) size++;
    this.#room(size - 1);
    this.buf.copy(this.buf, at + size, at + 1, this.pos);
    this.pos += size - 1;
    let n = length;
    let i = at;
    while (n > 0x7f) {
      this.buf[i++] = (n & 0x7f) | 0x80;
      n >>>= 7;
    }
    this.buf[i] = n;
  }
  /** A copy of what was written: the buffer is reused, the body is held until its export is answered. */
  bytes(): Uint8Array {
    const out = new Uint8Array(this.pos);
    out.set(this.buf.subarray(0, this.pos));
    return out;
  }
}

/** Hex digit values by character code (-1: not a hex digit). */
const HEX = new Int8Array(128).fill(-1);
for (let i = 0; i < 16; i++) HEX['0123456789abcdef'.charCodeAt(i)] = HEX['0123456789ABCDEF'.charCodeAt(i)] = i;

const INT64_MIN = -(2 ** 63);
const INT64_MAX = 2 ** 63;
const asInt64 = (n: number): boolean => Number.isInteger(n) && n >= INT64_MIN && n < INT64_MAX;

export function protobufEncoding(options: EncodingOptions): TraceEncoding {
  const w = new ProtoWriter();
  const limit = options.attributeValueLengthLimit;
  const cut = (s: string): string => (limit !== undefined && s.length > limit ? s.slice(0, limit) : s);

  // AnyValue
  function value(v: AttributeValue): void {
    if (typeof v === 'string') {
      w.tag(1, 2);
      w.string(cut(v));
    } else if (typeof v === 'boolean') {
      w.tag(2, 0);
      w.varint(v ? 1 : 0);
    } else if (typeof v === 'number') {
      if (asInt64(v)) {
        w.tag(3, 0);
        w.varint(v);
      } else {
        w.tag(4, 1);
        w.double(v);
      }
    } else {
      w.tag(5, 2);
      const array = w.begin();
      for (const item of v) {
        w.tag(1, 2);
        const at = w.begin();
        value(item);
        w.end(at);
      }
      w.end(array);
    }
  }
  // repeated KeyValue at `field`
  /** KeyValue.key with its tag, per key: the keys are the mapping's few names. */
  const keys = new Map<string, Uint8Array>();
  const keyBytes = (key: string): Uint8Array => {
    let bytes = keys.get(key);
    if (!bytes) {
      const kw = new ProtoWriter(key.length * 3 + 16);
      kw.tag(1, 2);
      kw.string(key);
      bytes = kw.bytes();
      if (keys.size < 1024) keys.set(key, bytes);
    }
    return bytes;
  };
  function attributes(field: number, attrs: Attributes): void {
    for (const key in attrs) {
      w.tag(field, 2);
      const kv = w.begin();
      w.raw(keyBytes(key));
      w.tag(2, 2);
      const at = w.begin();
      value(attrs[key]);
      w.end(at);
      w.end(kv);
    }
  }
  function span(s: SpanParts): void {
    w.tag(2, 2); // ScopeSpans.spans
    const at = w.begin();
    w.tag(1, 2);
    w.hex(s.traceId);
    w.tag(2, 2);
    w.hex(s.spanId);
    if (s.traceState) {
      w.tag(3, 2);
      w.string(s.traceState);
    }
    if (s.parentSpanId) {
      w.tag(4, 2);
      w.hex(s.parentSpanId);
    }
    w.tag(5, 2);
    w.string(s.name);
    w.tag(6, 0);
    w.varint(s.kind);
    w.tag(7, 1);
    w.time(s.start);
    w.tag(8, 1);
    w.time(s.end);
    attributes(9, s.attributes);
    if (s.event) {
      w.tag(11, 2);
      const event = w.begin();
      w.tag(1, 1);
      w.time(s.event.time);
      w.tag(2, 2);
      w.string(s.event.name);
      attributes(3, s.event.attributes);
      w.end(event);
    }
    w.tag(15, 2);
    const status = w.begin();
    if (s.status) {
      w.tag(2, 2);
      w.string(s.status.message);
      w.tag(3, 0);
      w.varint(s.status.code);
    }
    w.end(status);
    w.tag(16, 5);
    w.fixed32(s.flags);
    w.end(at);
  }
  /**
   * Per stage, what its spans share, encoded once: name and kind (fields 5, 6), and attributes, status and flags
   * (9, 15, 16). Only the ids (1–4) and times (7, 8) differ from one stage span to the next.
   */
  const piece = (write: () => void): Uint8Array => {
    const saved = w.pos;
    write();
    const bytes = w.buf.slice(saved, w.pos);
    w.pos = saved;
    return new Uint8Array(bytes);
  };
  const stageHeads = PIPELINE_STAGES.map((_, i) =>
    piece(() => {
      w.tag(5, 2);
      w.string(STAGE_NAMES[i]);
      w.tag(6, 0);
      w.varint(KIND_INTERNAL);
    }),
  );
  const stageTails = PIPELINE_STAGES.map((_, i) =>
    piece(() => {
      attributes(9, STAGE_ATTRIBUTES[i]);
      w.tag(15, 2);
      w.varint(0);
      w.tag(16, 5);
      w.fixed32(STAGE_FLAGS);
    }),
  );
  function stageSpans({ record, context }: TracedStep): void {
    const stages = record.stages;
    let began = record.startEpochMs;
    for (let i = 0; i < stages.length; i += 2) {
      const stage = stages[i];
      w.tag(2, 2);
      const at = w.begin();
      w.tag(1, 2);
      w.hex(context.traceId);
      w.tag(2, 2);
      w.randomId(8);
      if (context.traceState) {
        w.tag(3, 2);
        w.string(context.traceState);
      }
      w.tag(4, 2);
      w.hex(context.spanId);
      w.raw(stageHeads[stage]);
      w.tag(7, 1);
      w.time(began);
      w.tag(8, 1);
      w.time(stages[i + 1]);
      w.raw(stageTails[stage]);
      w.end(at);
      began = stages[i + 1];
    }
  }
  const resource: Attributes = { 'service.name': options.serviceName, 'service.version': options.serviceVersion };
  return {
    contentType: 'application/x-protobuf',
    encode(steps) {
      w.reset();
      w.tag(1, 2); // ExportTraceServiceRequest.resource_spans
      const resourceSpans = w.begin();
      w.tag(1, 2); // ResourceSpans.resource
      const res = w.begin();
      attributes(1, resource);
      w.end(res);
      w.tag(2, 2); // ResourceSpans.scope_spans
      const scopeSpans = w.begin();
      w.tag(1, 2); // ScopeSpans.scope
      const scope = w.begin();
      w.tag(1, 2);
      w.string('acs-guardian');
      w.tag(2, 2);
      w.string(options.serviceVersion);
      w.end(scope);
      for (const step of steps) {
        stageSpans(step);
        span(stepSpanOf(step));
      }
      w.end(scopeSpans);
      w.end(resourceSpans);
      return w.bytes();
    },
  };
}

type JsonValue =
  | { stringValue: string }
  | { boolValue: boolean }
  | { intValue: string }
  | { doubleValue: number }
  | { arrayValue: { values: JsonValue[] } };

export function jsonEncoding(options: EncodingOptions): TraceEncoding {
  const limit = options.attributeValueLengthLimit;
  const cut = (s: string): string => (limit !== undefined && s.length > limit ? s.slice(0, limit) : s);
  const nanos = (ms: number): string => {
    const [s, n] = secondsAndNanos(ms);
    return s === 0 ? String(n) : `${s}${String(n).padStart(9, '0')}`;
  };
  const value = (v: AttributeValue): JsonValue =>
    typeof v === 'string'
      ? { stringValue: cut(v) }
      : typeof v === 'boolean'
        ? { boolValue: v }
        : typeof v === 'number'
          ? asInt64(v)
            ? { intValue: BigInt(v).toString() }
            : { doubleValue: v }
          : { arrayValue: { values: v.map(value) } };
  const attributes = (attrs: Attributes) => Object.entries(attrs).map(([key, v]) => ({ key, value: value(v) }));
  const resource = attributes({ 'service.name': options.serviceName, 'service.version': options.serviceVersion });
  return {
    contentType: 'application/json',
    encode(steps) {
      const spans: unknown[] = [];
      for (const step of steps)
        spansOf(step, (s) =>
          spans.push({
            traceId: s.traceId,
            spanId: s.spanId,
            ...(s.traceState ? { traceState: s.traceState } : {}),
            ...(s.parentSpanId ? { parentSpanId: s.parentSpanId } : {}),
            flags: s.flags,
            name: s.name,
            kind: s.kind,
            startTimeUnixNano: nanos(s.start),
            endTimeUnixNano: nanos(s.end),
            attributes: attributes(s.attributes),
            events: s.event
              ? [{ timeUnixNano: nanos(s.event.time), name: s.event.name, attributes: attributes(s.event.attributes) }]
              : [],
            status: s.status ? { code: s.status.code, message: s.status.message } : { code: 0 },
          }),
        );
      const body = {
        resourceSpans: [
          {
            resource: { attributes: resource },
            scopeSpans: [{ scope: { name: 'acs-guardian', version: options.serviceVersion }, spans }],
          },
        ],
      };
      return new TextEncoder().encode(JSON.stringify(body));
    },
  };
}
