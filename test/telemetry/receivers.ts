// Real receivers for the telemetry tests, in this process: an OTLP/HTTP traces receiver (decodes the JSON
// encoding of ExportTraceServiceRequest, as @opentelemetry/exporter-trace-otlp-http sends it) and a SIEM
// collector taking POSTed JSON arrays of OCSF events. Either can be told to never answer (a hung sink).
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

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

export interface Receiver {
  url: string;
  /** Raw request bodies as received (for the secret scan). */
  bodies: string[];
  headers: IncomingMessage['headers'][];
  close(): Promise<void>;
}

async function listen(handler: (req: IncomingMessage, res: ServerResponse, body: string) => void): Promise<{
  server: Server;
  url: string;
}> {
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => handler(req, res, Buffer.concat(chunks).toString('utf8')));
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
}

export async function startOtlpReceiver(options: { hang?: boolean } = {}): Promise<OtlpReceiver> {
  const spans: OtlpSpan[] = [];
  const resources: Record<string, unknown>[] = [];
  const bodies: string[] = [];
  const headers: IncomingMessage['headers'][] = [];
  const { server, url } = await listen((req, res, body) => {
    bodies.push(body);
    headers.push(req.headers);
    if (options.hang) return;
    if (req.url !== '/v1/traces' || req.headers['content-type'] !== 'application/json') {
      res.writeHead(415).end();
      return;
    }
    const decoded = JSON.parse(body) as {
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
    res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
  });
  return { url, spans, resources, bodies, headers, close: closer(server) };
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
  const { server, url } = await listen((req, res, body) => {
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
