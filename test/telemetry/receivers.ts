// Real receivers for the telemetry tests, in this process: an OTLP/HTTP traces receiver decoding
// ExportTraceServiceRequest in either OTLP/HTTP encoding (protobuf, with protobufjs over the OTLP .proto files in
// test/fixtures/otlp; or JSON) by its content type, and a SIEM collector taking POSTed JSON arrays of OCSF
// events. Either can be told to never answer (a hung sink).
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { fileURLToPath } from 'node:url';
import protobuf from 'protobufjs';

const OTLP_PROTOS = fileURLToPath(new URL('../fixtures/otlp/', import.meta.url));
const otlpRoot = new protobuf.Root();
otlpRoot.resolvePath = (_origin, target) => OTLP_PROTOS + target;
otlpRoot.loadSync('opentelemetry/proto/collector/trace/v1/trace_service.proto');
const ExportTraceServiceRequest = otlpRoot.lookupType(
  'opentelemetry.proto.collector.trace.v1.ExportTraceServiceRequest',
);
const ExportTraceServiceResponse = otlpRoot.lookupType(
  'opentelemetry.proto.collector.trace.v1.ExportTraceServiceResponse',
);

export type OtlpValue = {
  stringValue?: string;
  intValue?: string | number;
  doubleValue?: number;
  boolValue?: boolean;
  arrayValue?: { values?: OtlpValue[] };
};
export interface OtlpSpan {
  traceId: string;
  spanId: string;
  parentSpanId?: string;
  name: string;
  attributes: Record<string, unknown>;
  events: { name: string; attributes: Record<string, unknown> }[];
  status?: { code?: number; message?: string };
}

function plain(v: OtlpValue): unknown {
  if (v.stringValue !== undefined) return v.stringValue;
  if (v.intValue !== undefined) return Number(v.intValue);
  if (v.doubleValue !== undefined) return v.doubleValue;
  if (v.boolValue !== undefined) return v.boolValue;
  if (v.arrayValue) return (v.arrayValue.values ?? []).map(plain);
  return undefined;
}
const attrs = (list: { key: string; value: OtlpValue }[] | undefined): Record<string, unknown> =>
  Object.fromEntries((list ?? []).map((a) => [a.key, plain(a.value)]));

/** An OTLP/HTTP body as the JSON encoding's object shape (ids hex, as in the JSON encoding). */
function decodeOtlpProtobuf(body: Buffer): unknown {
  const hex = (b64: unknown): string | undefined =>
    typeof b64 === 'string' && b64 !== '' ? Buffer.from(b64, 'base64').toString('hex') : undefined;
  const decoded = ExportTraceServiceRequest.toObject(ExportTraceServiceRequest.decode(body), {
    longs: String,
    bytes: String,
    enums: Number,
  }) as { resourceSpans?: { scopeSpans?: { spans?: Record<string, unknown>[] }[] }[] };
  for (const rs of decoded.resourceSpans ?? [])
    for (const ss of rs.scopeSpans ?? [])
      for (const span of ss.spans ?? [])
        for (const id of ['traceId', 'spanId', 'parentSpanId']) span[id] = hex(span[id]);
  return { resourceSpans: [], ...decoded };
}

export interface Receiver {
  url: string;
  /** Raw request bodies as received (for the secret scan). */
  bodies: string[];
  headers: IncomingMessage['headers'][];
  close(): Promise<void>;
}

async function listen(handler: (req: IncomingMessage, res: ServerResponse, body: Buffer) => void): Promise<{
  server: Server;
  url: string;
}> {
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => handler(req, res, Buffer.concat(chunks)));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { server, url: `http://127.0.0.1:${(server.address() as AddressInfo).port}` };
}

const closer = (server: Server) => () =>
  new Promise<void>((resolve) => {
    server.closeAllConnections();
    server.close(() => resolve());
  });

export interface OtlpReceiver extends Receiver {
  spans: OtlpSpan[];
  resources: Record<string, unknown>[];
  /** The content type of each accepted export (application/x-protobuf or application/json). */
  encodings: string[];
}

export async function startOtlpReceiver(options: { hang?: boolean } = {}): Promise<OtlpReceiver> {
  const spans: OtlpSpan[] = [];
  const resources: Record<string, unknown>[] = [];
  const bodies: string[] = [];
  const headers: IncomingMessage['headers'][] = [];
  const encodings: string[] = [];
  const { server, url } = await listen((req, res, body) => {
    // Protobuf carries strings as UTF-8 bytes, so the secret scan reads either encoding as text.
    bodies.push(body.toString('utf8'));
    headers.push(req.headers);
    if (options.hang) return;
    const type = req.headers['content-type'];
    if (req.url !== '/v1/traces' || (type !== 'application/json' && type !== 'application/x-protobuf')) {
      res.writeHead(415).end();
      return;
    }
    encodings.push(type);
    const decoded = (type === 'application/json' ? JSON.parse(body.toString('utf8')) : decodeOtlpProtobuf(body)) as {
      resourceSpans: {
        resource?: { attributes?: { key: string; value: OtlpValue }[] };
        scopeSpans: {
          spans: (Omit<OtlpSpan, 'attributes' | 'events'> & {
            attributes?: { key: string; value: OtlpValue }[];
            events?: { name: string; attributes?: { key: string; value: OtlpValue }[] }[];
          })[];
        }[];
      }[];
    };
    for (const rs of decoded.resourceSpans) {
      resources.push(attrs(rs.resource?.attributes));
      for (const ss of rs.scopeSpans)
        for (const s of ss.spans)
          spans.push({
            ...s,
            attributes: attrs(s.attributes),
            events: (s.events ?? []).map((e) => ({ name: e.name, attributes: attrs(e.attributes) })),
          });
    }
    if (type === 'application/json') res.writeHead(200, { 'content-type': type }).end('{}');
    else
      res
        .writeHead(200, { 'content-type': type })
        .end(ExportTraceServiceResponse.encode(ExportTraceServiceResponse.create({})).finish());
  });
  return { url, spans, resources, encodings, bodies, headers, close: closer(server) };
}

export interface SiemCollector extends Receiver {
  events: Record<string, unknown>[];
  batches: number;
}

/** `failFirst`: answers `failStatus` (default 503) to that many POSTs before accepting. */
export async function startSiemCollector(
  options: { hang?: boolean; failFirst?: number; failStatus?: number } = {},
): Promise<SiemCollector> {
  const bodies: string[] = [];
  const headers: IncomingMessage['headers'][] = [];
  const collector: SiemCollector = {
    url: '',
    events: [],
    batches: 0,
    bodies,
    headers,
    close: async () => {},
  };
  let failures = options.failFirst ?? 0;
  const { server, url } = await listen((req, res, raw) => {
    const body = raw.toString('utf8');
    bodies.push(body);
    headers.push(req.headers);
    if (options.hang) return;
    if (failures > 0) {
      failures--;
      res.writeHead(options.failStatus ?? 503).end();
      return;
    }
    const batch = JSON.parse(body) as Record<string, unknown>[];
    collector.events.push(...batch);
    collector.batches++;
    res.writeHead(202).end();
  });
  collector.url = `${url}/ingest`;
  collector.close = closer(server);
  return collector;
}

/** Waits until `done()` holds (polling), or fails after `ms`. */
export async function eventually(done: () => boolean, ms = 10_000): Promise<void> {
  const until = Date.now() + ms;
  while (!done()) {
    if (Date.now() > until) throw new Error('timed out waiting for telemetry');
    await new Promise((r) => setTimeout(r, 25));
  }
}
