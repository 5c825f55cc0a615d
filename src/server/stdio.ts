// stdio transport (§3): messages framed as `Content-Length: N\r\n\r\n<N bytes of UTF-8 JSON>`, answers framed the
// same way, strictly in arrival order. Broken framing is answered with -32700 and the parser resynchronises at the
// next header block; an oversize frame is skipped and answered with -32600. `rpc.discover` is answered with the
// OpenRPC document, as over HTTP.
import type { Readable, Writable } from 'node:stream';
import { AcsError, AcsErrorCode } from '../acs/errors.ts';
import { type DiscoveryAnswer, discoveryAnswer } from '../acs/openrpc/index.ts';
import type { Guardian } from '../acs/pipeline/index.ts';
import { errorEnvelope } from '../acs/pipeline/respond.ts';
import type { ResponseEnvelope } from '../acs/types.ts';

const HEADER_END = Buffer.from('\r\n\r\n');
const MAX_HEADER_BYTES = 8192;

export function encodeFrame(message: unknown): Buffer {
  const body = Buffer.from(JSON.stringify(message), 'utf8');
  return Buffer.concat([Buffer.from(`Content-Length: ${body.length}\r\n\r\n`, 'ascii'), body]);
}

export type FrameEvent =
  | { kind: 'message'; body: Buffer }
  | { kind: 'framing_error'; message: string }
  | { kind: 'oversize'; length: number };

/** Incremental Content-Length frame parser. */
export class FrameParser {
  #buffer: Buffer = Buffer.alloc(0);
  #skip = 0;
  #pendingBody: number | null = null;
  constructor(readonly maxBodyBytes: number) {}

  push(chunk: Buffer): FrameEvent[] {
    this.#buffer = this.#buffer.length === 0 ? chunk : Buffer.concat([this.#buffer, chunk]);
    const events: FrameEvent[] = [];
    for (;;) {
      if (this.#skip > 0) {
        const n = Math.min(this.#skip, this.#buffer.length);
        this.#buffer = this.#buffer.subarray(n);
        this.#skip -= n;
        if (this.#skip > 0) return events;
      }
      if (this.#pendingBody !== null) {
        if (this.#buffer.length < this.#pendingBody) return events;
        events.push({ kind: 'message', body: Buffer.from(this.#buffer.subarray(0, this.#pendingBody)) });
        this.#buffer = this.#buffer.subarray(this.#pendingBody);
        this.#pendingBody = null;
        continue;
      }
      const end = this.#buffer.indexOf(HEADER_END);
      if (end < 0) {
        if (this.#buffer.length > MAX_HEADER_BYTES) {
          events.push({ kind: 'framing_error', message: 'header block too long or missing' });
          this.#buffer = Buffer.alloc(0);
        }
        return events;
      }
      const header = this.#buffer.subarray(0, end).toString('latin1');
      this.#buffer = this.#buffer.subarray(end + HEADER_END.length);
      let length: number | null = null;
      for (const line of header.split('\r\n')) {
        const m = /^content-length:\s*(\d{1,12})\s*$/i.exec(line);
        if (m) length = Number(m[1]);
      }
      if (length === null) {
        events.push({ kind: 'framing_error', message: 'missing or invalid Content-Length header' });
        continue;
      }
      if (length > this.maxBodyBytes) {
        events.push({ kind: 'oversize', length });
        this.#skip = length;
        continue;
      }
      this.#pendingBody = length;
    }
  }
}

export interface StdioOptions {
  /** Called once, when the first answer has been written (start-up timing). */
  onFirstAnswer?: () => void;
}

/** Serves ACS over a pair of streams until the input ends. Resolves when every answer has been written. */
export async function serveStdio(
  guardian: Guardian,
  input: Readable,
  output: Writable,
  options: StdioOptions = {},
): Promise<void> {
  const parser = new FrameParser(guardian.config.maxBodyBytes);
  let queue: Promise<void> = Promise.resolve();
  let onFirstAnswer = options.onFirstAnswer;
  const answer = (work: () => Promise<ResponseEnvelope | DiscoveryAnswer>): void => {
    queue = queue.then(async () => {
      const envelope = await work();
      await new Promise<void>((resolve) => output.write(encodeFrame(envelope), () => resolve()));
      onFirstAnswer?.();
      onFirstAnswer = undefined;
    });
  };
  for await (const chunk of input) {
    for (const event of parser.push(Buffer.isBuffer(chunk) ? chunk : Buffer.from(chunk as string))) {
      if (event.kind === 'message')
        answer(async () => discoveryAnswer(event.body) ?? guardian.handle(event.body, 'stdio'));
      else if (event.kind === 'framing_error')
        answer(() =>
          errorEnvelope(
            guardian.config,
            null,
            new AcsError(AcsErrorCode.ParseError, 'framing_invalid', event.message),
            null,
          ),
        );
      else
        answer(() =>
          errorEnvelope(
            guardian.config,
            null,
            new AcsError(
              AcsErrorCode.InvalidRequest,
              'body_too_large',
              `frame of ${event.length} bytes exceeds ${guardian.config.maxBodyBytes}`,
            ),
            null,
          ),
        );
    }
  }
  await queue;
}
