// Polls an OPA-compatible bundle service (OPA docs: Bundles, bundle service API) as OPA's bundle plugin does:
// GET <url> with If-None-Match = the ETag of the last activated bundle; 304 = unchanged; 200 = a new tarball,
// handed to `onBundle` (which registers and activates it). Short polling waits a random delay in
// [minDelay, maxDelay]; long polling sends `Prefer: wait=N` and is kept only while the server answers with
// `Content-Type: application/vnd.openpolicyagent.bundles`. Errors back off exponentially with jitter; after a
// failed download the ETag is cleared, after a failed activation the last activated ETag is re-sent.
import { setTimeout as sleep } from 'node:timers/promises';
import { readStreamWithLimit } from '../http-body/index.ts';

export interface BundleSourceStatus {
  name: string;
  url: string;
  etag: string | null;
  lastRequest: Date | null;
  lastSuccessfulRequest: Date | null;
  lastSuccessfulDownload: Date | null;
  lastSuccessfulActivation: Date | null;
  lastRevision: string | null;
  httpCode: number | null;
  /** Last error text (download or activation); null after a success. */
  message: string | null;
  consecutiveErrors: number;
  longPolling: boolean;
  nextDelayMs: number;
}

export interface BundleServicePollerOptions {
  name: string;
  /** Full resource URL, e.g. http://svc/bundles/acs.tar.gz. */
  url: string;
  /** Registers + activates; resolves with the activated revision, throws to refuse. */
  onBundle(bytes: Uint8Array, meta: { etag: string | null; source: string }): Promise<{ revision: string }>;
  minDelayMs?: number;
  maxDelayMs?: number;
  /** Long polling timeout in seconds (OPA `polling.long_polling_timeout_seconds`); 0 = short polling. */
  longPollSeconds?: number;
  /** Request timeout for short polls (long polls add the wait). Default 10 s. */
  requestTimeoutMs?: number;
  /** Backoff bounds (default 100 ms … 60 s). */
  backoffBaseMs?: number;
  backoffMaxMs?: number;
  headers?: Record<string, string>;
  /** Largest accepted body (default 64 MiB). */
  maxBytes?: number;
  onStatus?: (status: BundleSourceStatus) => void;
  /** Injectable randomness (tests). */
  random?: () => number;
}

/** OPA-style exponential backoff with jitter: base·2^n capped at max, then a random factor in [0.5, 1]. */
export function backoffDelay(
  errors: number,
  baseMs: number,
  maxMs: number,
  random: () => number = Math.random,
): number {
  const exp = Math.min(maxMs, baseMs * 2 ** Math.min(errors, 30));
  return Math.round(exp * (0.5 + random() * 0.5));
}

export class BundleServicePoller {
  readonly status: BundleSourceStatus;
  #stopped = false;
  #abort: AbortController | undefined;
  #loop: Promise<void> | undefined;
  #activatedEtag: string | null = null;
  #wake: (() => void) | undefined;

  constructor(readonly options: BundleServicePollerOptions) {
    this.status = {
      name: options.name,
      url: options.url,
      etag: null,
      lastRequest: null,
      lastSuccessfulRequest: null,
      lastSuccessfulDownload: null,
      lastSuccessfulActivation: null,
      lastRevision: null,
      httpCode: null,
      message: null,
      consecutiveErrors: 0,
      longPolling: (options.longPollSeconds ?? 0) > 0,
      nextDelayMs: 0,
    };
  }

  start(): void {
    this.#loop ??= this.#run();
  }

  async stop(): Promise<void> {
    this.#stopped = true;
    this.#abort?.abort();
    this.#wake?.();
    await this.#loop;
  }

  /** One request/response cycle; returns the delay before the next one. */
  async pollOnce(): Promise<number> {
    const o = this.options;
    const random = o.random ?? Math.random;
    const longPoll = this.status.longPolling && (o.longPollSeconds ?? 0) > 0;
    const headers: Record<string, string> = { ...(o.headers ?? {}) };
    if (this.status.etag) headers['If-None-Match'] = this.status.etag;
    if (longPoll) headers.Prefer = `modes=snapshot, wait=${o.longPollSeconds}`;
    const timeoutMs = (o.requestTimeoutMs ?? 10_000) + (longPoll ? (o.longPollSeconds ?? 0) * 1000 : 0);
    this.#abort = new AbortController();
    const timer = setTimeout(() => this.#abort?.abort(new Error(`request timed out after ${timeoutMs} ms`)), timeoutMs);
    this.status.lastRequest = new Date();
    const failed = (message: string, clearEtag: boolean): number => {
      this.status.message = message;
      this.status.consecutiveErrors++;
      if (clearEtag) this.status.etag = this.#activatedEtag;
      return backoffDelay(this.status.consecutiveErrors, o.backoffBaseMs ?? 100, o.backoffMaxMs ?? 60_000, random);
    };
    const shortDelay = (): number => {
      const min = o.minDelayMs ?? 60_000;
      const max = Math.max(min, o.maxDelayMs ?? 120_000);
      return Math.round(min + random() * (max - min));
    };
    try {
      let res: Response;
      try {
        res = await fetch(o.url, { headers, signal: this.#abort.signal });
      } catch (e) {
        const reason =
          this.#abort.signal.reason instanceof Error ? this.#abort.signal.reason.message : (e as Error).message;
        this.status.httpCode = null;
        return failed(`request failed: ${reason}`, true);
      }
      this.status.httpCode = res.status;
      if (
        longPoll &&
        res.headers.get('content-type')?.split(';')[0].trim() !== 'application/vnd.openpolicyagent.bundles' &&
        res.status !== 304
      ) {
        // The server does not support long polling: OPA falls back to short polling.
        this.status.longPolling = false;
      }
      if (res.status === 304) {
        await res.body?.cancel().catch(() => {});
        this.status.lastSuccessfulRequest = new Date();
        this.status.message = null;
        this.status.consecutiveErrors = 0;
        return this.status.longPolling ? 0 : shortDelay();
      }
      if (res.status === 404) return failed('server replied with not found', true);
      if (res.status === 401) return failed('server replied with not authorized', true);
      if (res.status !== 200) {
        await res.body?.cancel().catch(() => {});
        return failed(`server replied with HTTP ${res.status}`, true);
      }
      let bytes: Uint8Array;
      try {
        bytes = await readBody(res, o.maxBytes ?? 64 * 1024 * 1024);
      } catch (e) {
        return failed(
          `download failed: ${this.#abort.signal.aborted && this.#abort.signal.reason instanceof Error ? this.#abort.signal.reason.message : (e as Error).message}`,
          true,
        );
      }
      const etag = res.headers.get('etag');
      this.status.lastSuccessfulRequest = new Date();
      this.status.lastSuccessfulDownload = new Date();
      try {
        const { revision } = await o.onBundle(bytes, { etag, source: o.url });
        this.#activatedEtag = etag;
        this.status.etag = etag;
        this.status.lastSuccessfulActivation = new Date();
        this.status.lastRevision = revision;
        this.status.message = null;
        this.status.consecutiveErrors = 0;
        return this.status.longPolling ? 0 : shortDelay();
      } catch (e) {
        // Re-send the last activated ETag: the refused bundle is downloaded again next time (it may be fixed).
        return failed(`activation failed: ${(e as Error).message}`, true);
      }
    } finally {
      clearTimeout(timer);
      o.onStatus?.({ ...this.status });
    }
  }

  async #run(): Promise<void> {
    while (!this.#stopped) {
      const delay = await this.pollOnce();
      this.status.nextDelayMs = delay;
      if (this.#stopped) break;
      if (delay > 0) {
        await new Promise<void>((resolve) => {
          this.#wake = resolve;
          sleep(delay, undefined, { ref: false }).then(resolve, resolve);
        });
      }
    }
  }
}

async function readBody(res: Response, max: number): Promise<Uint8Array> {
  const declared = Number(res.headers.get('content-length'));
  if (Number.isFinite(declared) && declared > max)
    throw new Error(`bundle of ${declared} bytes exceeds the ${max}-byte limit`);
  const body = await readStreamWithLimit(res.body, max);
  if (body === null) throw new Error(`bundle exceeds the ${max}-byte limit`);
  return body;
}
