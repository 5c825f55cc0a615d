// HTTP transport: Hono app with POST /acs (one JSON-RPC message per request; `rpc.discover` answered with the
// OpenRPC document of GET /acs/openrpc.json), GET /healthz, GET /readyz,
// served by @hono/node-server. Every JSON-RPC answer is HTTP 200 with a JSON body, including errors: the
// JSON-RPC error is the answer (a transport status would fall to the client's §6.4 failure posture).
import { serve, type ServerType } from '@hono/node-server';
import { Hono } from 'hono';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { setImmediate as afterPollPhase } from 'node:timers/promises';
import { AcsError, AcsErrorCode } from '../acs/errors.ts';
import type { Guardian } from '../acs/pipeline/index.ts';
import { errorEnvelope } from '../acs/pipeline/respond.ts';
import { readStreamWithLimit } from '../http-body/index.ts';
import { acsOpenRpcDocument, discoveryAnswer } from '../acs/openrpc/index.ts';

export interface HttpAppOptions {
  /** Readiness probe (store reachable, policy loaded). */
  ready?: () => Promise<boolean>;
  /** Admin API (bundle lifecycle, replay jobs), mounted at /admin; it refuses everything without a token. */
  admin?: Hono;
  /** Prometheus metrics (src/telemetry/metrics), mounted at /metrics. */
  metrics?: Hono;
  /** The operator console (src/console/), mounted at /console. */
  console?: Hono;
}

const JSON_CONTENT_TYPE = 'application/json; charset=utf-8';
const jsonText = (text: string, status = 200): Response =>
  new Response(text, { status, headers: { 'content-type': JSON_CONTENT_TYPE } });
/** What a bug answers instead of an HTML 500 page: -32603 in JSON-RPC form. */
const INTERNAL_ERROR = JSON.stringify({
  jsonrpc: '2.0',
  id: null,
  error: { code: AcsErrorCode.InternalError, message: 'Internal error' },
});

/** The JSON text answering one POST /acs body within the limit: `rpc.discover` before the pipeline, else the pipeline's. */
async function acsAnswer(
  guardian: Guardian,
  body: Uint8Array,
  header: (name: string) => string | undefined,
): Promise<string> {
  // The pipeline runs in the event loop's check phase, not inside the read callback that delivered the body: the
  // poll phase first takes in every socket that is ready (other requests, the store's commit answers), then the
  // requests' pipelines run back to back. Kept because it is faster under concurrent load (`npm run bench server`).
  await afterPollPhase();
  const discovered = discoveryAnswer(body);
  if (discovered) return JSON.stringify(discovered);
  const traceparent = header('traceparent');
  const carrier = traceparent ? { traceparent, tracestate: header('tracestate') } : undefined;
  return JSON.stringify(await guardian.handle(body, 'http', carrier));
}

/**
 * POST /acs with a declared Content-Length within the limit, answered on node's request and response objects
 * without the Web Request and Response Hono wraps them in (the route below answers the same from the same
 * acsAnswer). False for anything else, which Hono serves: other paths, chunked bodies, bodies over the limit.
 */
function directAcs(guardian: Guardian): (req: IncomingMessage, res: ServerResponse) => boolean {
  const limit = guardian.config.maxBodyBytes;
  const header = (req: IncomingMessage, name: string): string | undefined => {
    const value = req.headers[name];
    return Array.isArray(value) ? value[0] : value;
  };
  const send = (res: ServerResponse, status: number, text: string): void => {
    res.writeHead(status, { 'content-type': JSON_CONTENT_TYPE, 'content-length': Buffer.byteLength(text) });
    res.end(text);
  };
  return (req, res) => {
    if (req.method !== 'POST' || req.url !== '/acs') return false;
    const declared = req.headers['content-length'];
    const length = declared === undefined ? NaN : Number(declared);
    if (!Number.isInteger(length) || length < 0 || length > limit) return false;
    // The HTTP parser delivers at most the declared length; a connection lost meanwhile never reaches 'end'.
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const body = chunks.length === 1 ? chunks[0] : Buffer.concat(chunks);
      acsAnswer(guardian, body, (name) => header(req, name)).then(
        (text) => send(res, 200, text),
        () => send(res, 500, INTERNAL_ERROR),
      );
    });
    return true;
  };
}

export function createHttpApp(guardian: Guardian, options: HttpAppOptions = {}): Hono {
  const app = new Hono();
  const limit = guardian.config.maxBodyBytes;
  const json = (body: unknown, status = 200): Response =>
    new Response(JSON.stringify(body), { status, headers: { 'content-type': 'application/json; charset=utf-8' } });

  app.post('/acs', async (c) => {
    const header = c.req.header('content-length');
    const declared = header === undefined ? NaN : Number(header);
    // A declared length is enforced by the HTTP parser (the body cannot exceed it), so a declared body within the
    // limit is read whole through the adapter's direct path (no Web stream per request). Chunked bodies of unknown
    // length are read as a stream and cut at the limit.
    const body =
      Number.isFinite(declared) && declared > limit
        ? null
        : Number.isInteger(declared) && declared >= 0
          ? new Uint8Array(await c.req.raw.arrayBuffer())
          : await readStreamWithLimit(c.req.raw.body, limit);
    if (body === null) {
      const err = new AcsError(
        AcsErrorCode.InvalidRequest,
        'body_too_large',
        `messages larger than ${limit} bytes are refused`,
      );
      return json(await errorEnvelope(guardian.config, null, err, null));
    }
    return jsonText(await acsAnswer(guardian, body, (name) => c.req.header(name)));
  });
  app.get('/acs/openrpc.json', () => json(acsOpenRpcDocument()));
  app.get('/healthz', () => json({ status: 'ok' }));
  app.get('/readyz', async () => {
    let ok = false;
    try {
      ok = options.ready ? await options.ready() : true;
    } catch {
      ok = false;
    }
    return json({ status: ok ? 'ready' : 'unavailable' }, ok ? 200 : 503);
  });
  if (options.admin) app.route('/admin', options.admin);
  if (options.metrics) app.route('/metrics', options.metrics);
  if (options.console) app.route('/console', options.console);
  app.all('/acs', () => json({ error: 'use POST /acs' }, 405));
  app.notFound(() => json({ error: 'not found' }, 404));
  // A bug must never surface as an HTML 500 page: answer -32603 in JSON-RPC form.
  app.onError(() => jsonText(INTERNAL_ERROR, 500));
  return app;
}

export interface RunningHttpServer {
  url: string;
  host: string;
  port: number;
  close(): Promise<void>;
}

/** Listens on host:port (port 0 = ephemeral). Default 127.0.0.1:8787. */
export async function startHttpServer(
  guardian: Guardian,
  options: HttpAppOptions & { host?: string; port?: number } = {},
): Promise<RunningHttpServer> {
  const app = createHttpApp(guardian, options);
  const host = options.host ?? '127.0.0.1';
  const direct = directAcs(guardian);
  const server: ServerType = await new Promise((resolve, reject) => {
    const s = serve(
      {
        fetch: app.fetch,
        hostname: host,
        port: options.port ?? 8787,
        createServer: ((serverOptions: object, listener: (req: IncomingMessage, res: ServerResponse) => void) =>
          createServer(serverOptions, (req, res) => {
            if (!direct(req, res)) listener(req, res);
          })) as typeof createServer,
      },
      () => resolve(s),
    );
    s.once('error', reject);
  });
  const port = (server.address() as AddressInfo).port;
  const shownHost = host.includes(':') ? `[${host}]` : host;
  return {
    url: `http://${shownHost}:${port}/acs`,
    host,
    port,
    close: () =>
      new Promise<void>((resolve) => {
        const s = server as unknown as { close(cb: () => void): void; closeAllConnections?: () => void };
        s.closeAllConnections?.();
        s.close(() => resolve());
      }),
  };
}
