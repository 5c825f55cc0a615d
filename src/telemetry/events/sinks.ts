// Where OCSF events go, one JSON object per event: a size-rotated JSON-lines file, stdout, or batches POSTed to
// a SIEM collector (a JSON array per request) with retry and exponential backoff. Each sink has its own queue and
// worker (events/index.ts), so a slow collector never holds back the file.
import { constants } from 'node:fs';
import { appendFile, rename, stat } from 'node:fs/promises';
import http from 'node:http';
import https from 'node:https';
import { setTimeout as sleep } from 'node:timers/promises';

export interface EventSink {
  /** Sink kind for metrics labels and logs: `file`, `stdout`, `http`. */
  readonly kind: string;
  /** Delivers a batch of JSON texts or throws (the batch is then counted as dropped). */
  write(batch: string[]): Promise<void>;
  /** Releases what the sink holds between batches (the HTTP sink's idle connection). */
  close?(): void;
}

export interface FileSinkOptions {
  path: string;
  /** Rotate before the file would exceed this size. */
  maxBytes: number;
  /** Rotated files kept: path.1 (newest) … path.N. */
  keep: number;
}

/**
 * Appending never waits for a reader: a named pipe without one fails the batch at once (ENXIO), as does a full
 * pipe (EAGAIN), where a blocking open or write would hold a libuv thread until a reader came, and neither the
 * export thread's termination nor the process's exit gets past a held libuv thread. A regular file is unaffected.
 */
const APPEND = constants.O_WRONLY | constants.O_CREAT | constants.O_APPEND | constants.O_NONBLOCK;

export function fileSink(options: FileSinkOptions): EventSink {
  let size: number | undefined;
  /** Only a regular file is rotated: a named pipe or a device (/dev/stdout) stays what the path names. */
  let rotates = true;
  async function rotate(): Promise<void> {
    for (let i = options.keep - 1; i >= 1; i--)
      await rename(`${options.path}.${i}`, `${options.path}.${i + 1}`).catch(() => {});
    if (options.keep >= 1) await rename(options.path, `${options.path}.1`).catch(() => {});
    size = 0;
  }
  return {
    kind: 'file',
    async write(batch) {
      if (size === undefined)
        size = await stat(options.path).then(
          (s) => {
            rotates = s.isFile();
            return s.size;
          },
          () => 0,
        );
      const text = batch.join('\n') + '\n';
      const bytes = Buffer.byteLength(text);
      if (rotates && size > 0 && size + bytes > options.maxBytes) await rotate();
      await appendFile(options.path, text, { mode: 0o600, flag: APPEND });
      size += bytes;
    },
  };
}

export function stdoutSink(out: NodeJS.WritableStream = process.stdout): EventSink {
  return {
    kind: 'stdout',
    write: (batch) =>
      new Promise<void>((resolve, reject) =>
        out.write(batch.join('\n') + '\n', (err) => (err ? reject(err) : resolve())),
      ),
  };
}

export interface HttpSinkOptions {
  url: string;
  /** Sent as `Authorization: Bearer …`; never logged. */
  token?: string;
  timeoutMs: number;
  /** Attempts per batch (1 = no retry). */
  maxAttempts: number;
  /** First backoff; doubled per attempt, with jitter. */
  backoffMs: number;
}

export class HttpSinkError extends Error {}

/** 429 and 5xx are worth retrying; any other refusal would be refused again. */
const retryable = (status: number): boolean => status === 429 || status >= 500;

/** What one POST came to: the collector's status, or the reason no answer came (refused, reset, timed out). */
type PostOutcome = { status: number } | { error: string };

/**
 * The HTTP sink posts through node:http with a keep-alive Agent of its own: one connection reused batch after
 * batch (a sink writes one batch at a time), idle sockets unref'd by the Agent so they never hold the process open.
 * fetch would build a web stream, a request and a response object per batch, on the export thread's CPU.
 */
export function httpSink(options: HttpSinkOptions): EventSink {
  const url = new URL(options.url);
  const client = url.protocol === 'https:' ? https : http;
  const agent = new client.Agent({ keepAlive: true, maxSockets: 1 });
  const baseHeaders: Record<string, string> = { 'content-type': 'application/json' };
  if (options.token) baseHeaders.authorization = `Bearer ${options.token}`;
  const post = (body: string): Promise<PostOutcome> =>
    new Promise((resolve) => {
      const req = client.request(
        url,
        {
          method: 'POST',
          agent,
          headers: { ...baseHeaders, 'content-length': Buffer.byteLength(body) },
        },
        (res) => {
          res.resume();
          res.once('end', () => resolve({ status: res.statusCode ?? 0 }));
          res.once('error', (err) => resolve({ error: err.message }));
        },
      );
      // The whole exchange is bounded, connecting included (what AbortSignal.timeout bounded for fetch).
      const deadline = setTimeout(() => req.destroy(new Error('timed out')), options.timeoutMs);
      deadline.unref();
      req.once('error', (err) => resolve({ error: err.message }));
      req.once('close', () => clearTimeout(deadline));
      req.end(body);
    });
  return {
    kind: 'http',
    async write(batch) {
      const body = `[${batch.join(',')}]`;
      for (let attempt = 1; ; attempt++) {
        const outcome = await post(body);
        if ('status' in outcome) {
          if (outcome.status >= 200 && outcome.status < 300) return;
          if (!retryable(outcome.status))
            throw new HttpSinkError(`collector refused the batch: HTTP ${outcome.status}`);
          if (attempt >= options.maxAttempts)
            throw new HttpSinkError(`collector failed the batch: HTTP ${outcome.status}`);
        } else if (attempt >= options.maxAttempts) throw new HttpSinkError(`collector unreachable: ${outcome.error}`);
        const backoff = options.backoffMs * 2 ** (attempt - 1);
        await sleep(backoff / 2 + Math.random() * (backoff / 2));
      }
    },
    close: () => agent.destroy(),
  };
}

/** A sink as plain data (what the environment asks for), so the export thread can open it. */
export type SinkSettings =
  | ({ kind: 'file' } & FileSinkOptions)
  | { kind: 'stdout' }
  | ({ kind: 'http' } & HttpSinkOptions);

export function sinkOf(settings: SinkSettings): EventSink {
  switch (settings.kind) {
    case 'file':
      return fileSink(settings);
    case 'stdout':
      return stdoutSink();
    case 'http':
      return httpSink(settings);
  }
}
