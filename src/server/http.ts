// HTTP transport: Hono app with POST /acs (one JSON-RPC message per request), GET /healthz, GET /readyz,
// served by @hono/node-server. Every JSON-RPC answer is HTTP 200 with a JSON body, including errors: the
// JSON-RPC error is the answer (a transport status would fall to the client's §6.4 failure posture).
import { getRequestListener, type ServerType } from '@hono/node-server';
import { Hono } from 'hono';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { AcsError, AcsErrorCode } from '../acs/errors.ts';
import type { Guardian } from '../acs/pipeline/index.ts';
import { errorEnvelope } from '../acs/pipeline/respond.ts';
import { readStreamWithLimit } from '../http-body/index.ts';

export interface HttpAppOptions {
  /** Readiness probe (store reachable, policy loaded). */
  ready?: () => Promise<boolean>;
  /** Admin API (bundle lifecycle, replay jobs), mounted at /admin; it refuses everything without a token. */
  admin?: Hono;
}

export function createHttpApp(guardian: Guardian, options: HttpAppOptions = {}): Hono {
  const app = new Hono();
  const limit = guardian.config.maxBodyBytes;
  const json = (body: unknown, status = 200): Response =>
    new Response(JSON.stringify(body), { status, headers: { 'content-type': 'application/json; charset=utf-8' } });

  // startHttpServer answers POST /acs before Hono (answerAcs below); this route serves the same answers to
  // anything calling the app directly (app.request, another server).
  app.post('/acs', async (c) => {
    const header = c.req.header('content-length');
    const declared = header === undefined ? NaN : Number(header);
    // A declared length is enforced by the HTTP parser (the body cannot exceed it), so a declared body within the
    // limit is read whole through the adapter's direct path (no Web stream per request: it showed in the CPU
    // profile). Chunked bodies of unknown length are read as a stream and cut at the limit.
    const body = Number.isFinite(declared) && declared > limit
      ? null
      : Number.isInteger(declared) && declared >= 0
        ? new Uint8Array(await c.req.raw.arrayBuffer())
        : await readStreamWithLimit(c.req.raw.body, limit);
    return new Response(await acsAnswerText(guardian, body), { headers: { 'content-type': JSON_TYPE } });
  });
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
  app.all('/acs', () => json({ error: 'use POST /acs' }, 405));
  app.notFound(() => json({ error: 'not found' }, 404));
  // A bug must never surface as an HTML 500 page: answer -32603 in JSON-RPC form.
  app.onError(() => json({ jsonrpc: '2.0', id: null, error: { code: AcsErrorCode.InternalError, message: 'Internal error' } }, 500));
  return app;
}

const JSON_TYPE = 'application/json; charset=utf-8';

/** The JSON text answering one POST /acs body (null: larger than the limit). */
async function acsAnswerText(guardian: Guardian, body: Uint8Array | null): Promise<string> {
  if (body === null) {
    const limit = guardian.config.maxBodyBytes;
    const err = new AcsError(AcsErrorCode.InvalidRequest, 'body_too_large', `messages larger than ${limit} bytes are refused`);
    return JSON.stringify(await errorEnvelope(guardian.config, null, err, null));
  }
  return JSON.stringify(await guardian.handle(body, 'http'));
}

/** A Node request body up to `limit` bytes; null as soon as it is (or says it will be) larger. */
function readNodeBody(req: IncomingMessage, limit: number): Promise<Uint8Array | null> {
  const header = req.headers['content-length'];
  if (header !== undefined && Number(header) > limit) return Promise.resolve(null);
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    const onData = (chunk: Buffer): void => {
      size += chunk.length;
      if (size > limit) {
        // Cut off early: stop buffering; the HTTP server discards the rest after the answer.
        req.off('data', onData);
        resolve(null);
        return;
      }
      chunks.push(chunk);
    };
    req.on('data', onData);
    req.once('end', () => resolve(chunks.length === 1 ? chunks[0] : Buffer.concat(chunks, size)));
    req.once('error', reject);
  });
}

/**
 * POST /acs straight on Node's request and response: the Web Request/Response pair the Hono adapter builds per
 * request (headers object, body copy, response caching) showed as ≈ 0.1 ms per decision in the external-phase
 * profile. Same answers as the Hono route; an unexpected failure is the app's -32603 JSON.
 */
async function answerAcs(guardian: Guardian, req: IncomingMessage, res: ServerResponse): Promise<void> {
  let status = 200;
  let text: string;
  try {
    text = await acsAnswerText(guardian, await readNodeBody(req, guardian.config.maxBodyBytes));
  } catch {
    status = 500;
    text = JSON.stringify({ jsonrpc: '2.0', id: null, error: { code: AcsErrorCode.InternalError, message: 'Internal error' } });
  }
  if (res.destroyed) return;
  res.writeHead(status, { 'content-type': JSON_TYPE, 'content-length': Buffer.byteLength(text) });
  res.end(text);
}

function isAcsPost(req: IncomingMessage): boolean {
  const url = req.url ?? '';
  return req.method === 'POST' && (url === '/acs' || url.startsWith('/acs?'));
}

export interface RunningHttpServer {
  url: string;
  host: string;
  port: number;
  close(): Promise<void>;
}

/** Listens on host:port (port 0 = ephemeral). Default 127.0.0.1:8787. */
export async function startHttpServer(guardian: Guardian, options: HttpAppOptions & { host?: string; port?: number } = {}): Promise<RunningHttpServer> {
  const app = createHttpApp(guardian, options);
  const host = options.host ?? '127.0.0.1';
  const viaHono = getRequestListener(app.fetch);
  const server: ServerType = await new Promise((resolve, reject) => {
    const s = createServer((req, res) => (isAcsPost(req) ? void answerAcs(guardian, req, res) : void viaHono(req, res)));
    s.once('error', reject);
    s.listen(options.port ?? 8787, host, () => resolve(s));
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
