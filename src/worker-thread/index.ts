// Request/response over node:worker_threads, shared by every worker the Guardian runs (policy pool, replay,
// PQC signing, bundle unpacking, telemetry export). The parent sends `{id, op, body}` (or `{op, body}` for a notification, which
// gets no answer); the worker answers `{id, ok: true, value}` or `{id, ok: false, error}`, and may send `{notice,
// body}` on its own (noticeParent → WorkerThreadOptions.onNotice). A worker that exits or throws fails every
// request still pending on it; the owner decides whether to replace it.
//
// Workers are started from compiled JavaScript (`dist/`). When this module itself runs as TypeScript (vitest,
// bench, tsx), a `.ts` entry is started with tsx registered in the new thread: the only place tsx is needed.
import { createRequire } from 'node:module';
import { pathToFileURL } from 'node:url';
import { parentPort, type ResourceLimits, type TransferListItem, Worker } from 'node:worker_threads';

/** Operation name → the body its request carries and the value its answer carries. */
export type WorkerProtocol = Record<string, { request: unknown; response: unknown }>;

interface RequestMessage {
  id?: number;
  op: string;
  body: unknown;
}

interface SerializedError {
  name: string;
  message: string;
  code?: string;
}

type ReplyMessage = { id: number; ok: true; value: unknown } | { id: number; ok: false; error: SerializedError };

/** A message the worker sends on its own (noticeParent), answering no request. */
interface NoticeMessage {
  notice: string;
  body: unknown;
}

/** An error the worker's handler threw, rebuilt in the parent (name, message and a string `code` survive). */
export class WorkerRemoteError extends Error {
  readonly code: string | undefined;
  constructor(error: SerializedError) {
    super(error.message);
    this.name = error.name;
    this.code = error.code;
  }
}

/** The worker exited or failed while requests were pending (or a request was sent to a dead worker). */
export class WorkerCrashedError extends Error {
  constructor(
    message: string,
    /** The exit code, when the thread exited. */
    readonly exitCode?: number,
  ) {
    super(message);
    this.name = 'WorkerCrashedError';
  }
}

const SOURCE_MODE = import.meta.url.endsWith('.ts');

/**
 * The parent's Node options as a worker takes them. `--input-type` applies to string input only: a parent started
 * as `node --input-type=module -e …` passes it on, and a worker whose entry is a file then fails to start.
 */
function inheritedExecArgv(): { execArgv?: string[] } {
  const argv = process.execArgv;
  const kept: string[] = [];
  for (let i = 0; i < argv.length; i++) {
    if (argv[i] === '--input-type') i++;
    else if (!argv[i].startsWith('--input-type=')) kept.push(argv[i]);
  }
  return kept.length === argv.length ? {} : { execArgv: kept };
}

/**
 * The Worker for an entry module. `entry` names the TypeScript source (`new URL('./worker.ts', import.meta.url)`
 * in the spawning module): compiled, that URL points into dist/ and the `.js` beside it is started.
 */
function startWorker(entry: URL, resourceLimits?: ResourceLimits): Worker {
  const options = { ...(resourceLimits ? { resourceLimits } : {}), ...inheritedExecArgv() };
  if (!entry.pathname.endsWith('.ts')) return new Worker(entry, options);
  if (!SOURCE_MODE) return new Worker(new URL(entry.href.replace(/\.ts$/, '.js')), options);
  // Resolved here (from this package's node_modules): eval code in the thread has no module location to
  // resolve from. require.resolve finds tsx's CommonJS build; the thread imports the ESM build beside it.
  const tsx = pathToFileURL(createRequire(import.meta.url).resolve('tsx/esm/api')).href.replace(/\.cjs$/, '.mjs');
  const code = `import(${JSON.stringify(tsx)}).then((m) => { m.register(); return import(${JSON.stringify(entry.href)}); });`;
  return new Worker(code, { eval: true, ...options });
}

export interface WorkerThreadOptions {
  /** Used in crash messages: "<name> exited with code 3". */
  name: string;
  /**
   * Keep the process alive only while a request is pending (default false: the worker always holds the
   * process open, as an ordinary Worker does). For pools that must not stop an otherwise finished process.
   */
  unrefWhenIdle?: boolean;
  /** Called once when the worker dies unexpectedly (not after terminate()), after its pending requests failed. */
  onCrash?: (error: WorkerCrashedError) => void;
  /** The thread's V8 heap bounds; past them the thread dies (a crash: pending requests fail). */
  resourceLimits?: ResourceLimits;
  /** Told of each notice the worker sends on its own (noticeParent), in order. */
  onNotice?: (notice: string, body: unknown) => void;
}

interface Pending {
  resolve(value: unknown): void;
  reject(error: Error): void;
}

/** The parent's side of one worker thread speaking protocol `P`. */
export class WorkerThread<P extends WorkerProtocol> {
  readonly #worker: Worker;
  readonly #options: WorkerThreadOptions;
  readonly #pending = new Map<number, Pending>();
  #nextId = 1;
  #dead: Error | null = null;

  constructor(entry: URL, options: WorkerThreadOptions) {
    this.#options = options;
    this.#worker = startWorker(entry, options.resourceLimits);
    if (options.unrefWhenIdle) this.#worker.unref();
    this.#worker.on('message', (reply: ReplyMessage | NoticeMessage) => {
      if ('notice' in reply) {
        options.onNotice?.(reply.notice, reply.body);
        return;
      }
      const p = this.#pending.get(reply.id);
      if (!p) return;
      this.#pending.delete(reply.id);
      if (this.#pending.size === 0 && options.unrefWhenIdle) this.#worker.unref();
      if (reply.ok) p.resolve(reply.value);
      else p.reject(new WorkerRemoteError(reply.error));
    });
    this.#worker.on('error', (err) => this.#crash(new WorkerCrashedError(`${options.name} failed: ${err.message}`)));
    this.#worker.on('exit', (code) =>
      this.#crash(new WorkerCrashedError(`${options.name} exited with code ${code}`, code)),
    );
  }

  /** Requests sent and not answered yet. */
  get pending(): number {
    return this.#pending.size;
  }

  /** Why the worker can take no more requests (crashed or terminated), or null while it is alive. */
  get failure(): Error | null {
    return this.#dead;
  }

  /** Sends `body` to the worker's `op` handler; resolves with its answer, rejects with what it threw. */
  request<K extends keyof P & string>(
    op: K,
    body: P[K]['request'],
    transfer?: readonly TransferListItem[],
  ): Promise<P[K]['response']> {
    if (this.#dead) return Promise.reject(this.#dead);
    const id = this.#nextId++;
    const answer = new Promise<P[K]['response']>((resolve, reject) =>
      this.#pending.set(id, { resolve: resolve as (value: unknown) => void, reject }),
    );
    if (this.#pending.size === 1 && this.#options.unrefWhenIdle) this.#worker.ref();
    const message: RequestMessage = { id, op, body };
    this.#worker.postMessage(message, transfer);
    return answer;
  }

  /** Sends `body` to `op` without waiting for (or getting) an answer; throws if the worker is dead. */
  notify<K extends keyof P & string>(op: K, body: P[K]['request']): void {
    if (this.#dead) throw this.#dead;
    const message: RequestMessage = { op, body };
    this.#worker.postMessage(message);
  }

  /** Stops the worker; pending requests reject with `reason` (default: "<name> terminated"). */
  async terminate(reason?: Error): Promise<void> {
    this.#fail(reason ?? new WorkerCrashedError(`${this.#options.name} terminated`));
    await this.#worker.terminate();
  }

  #fail(error: Error): boolean {
    if (this.#dead) return false;
    this.#dead = error;
    const pending = [...this.#pending.values()];
    this.#pending.clear();
    for (const p of pending) p.reject(error);
    return true;
  }

  #crash(error: WorkerCrashedError): void {
    if (this.#fail(error)) this.#options.onCrash?.(error);
  }
}

/** A handler's answer whose listed buffers are moved to the parent instead of copied. */
export class TransferredReply<T> {
  constructor(
    readonly value: T,
    readonly transfer: readonly TransferListItem[],
  ) {}
}

export type WorkerHandlers<P extends WorkerProtocol> = {
  [K in keyof P]: (
    body: P[K]['request'],
  ) =>
    | P[K]['response']
    | TransferredReply<P[K]['response']>
    | Promise<P[K]['response'] | TransferredReply<P[K]['response']>>;
};

function serializeError(err: unknown): SerializedError {
  if (!(err instanceof Error)) return { name: 'Error', message: String(err) };
  const code = (err as { code?: unknown }).code;
  return { name: err.name, message: err.message, ...(typeof code === 'string' ? { code } : {}) };
}

/** The worker's side: tells the parent something no request asked for (WorkerThreadOptions.onNotice hears it). */
export function noticeParent(notice: string, body: unknown): void {
  const port = parentPort;
  if (!port) throw new Error('noticeParent runs inside a worker thread');
  const message: NoticeMessage = { notice, body };
  port.postMessage(message);
}

/**
 * The worker's side: answers each request with its handler's result. `ordered` handles one message at a time in
 * arrival order (notifications included), for workers whose messages build on each other.
 */
export function serveRequests<P extends WorkerProtocol>(
  handlers: WorkerHandlers<P>,
  options: { ordered?: boolean } = {},
): void {
  const port = parentPort;
  if (!port) throw new Error('serveRequests runs inside a worker thread');
  const handle = async (msg: RequestMessage): Promise<void> => {
    let reply: ReplyMessage;
    let transfer: readonly TransferListItem[] | undefined;
    try {
      const handler = handlers[msg.op] as ((body: unknown) => unknown) | undefined;
      if (!handler) throw new Error(`unknown worker operation ${msg.op}`);
      let value = await handler(msg.body);
      if (value instanceof TransferredReply) {
        transfer = value.transfer;
        value = value.value;
      }
      reply = { id: msg.id ?? 0, ok: true, value };
    } catch (err) {
      reply = { id: msg.id ?? 0, ok: false, error: serializeError(err) };
    }
    if (msg.id !== undefined) port.postMessage(reply, transfer);
  };
  let queue: Promise<void> = Promise.resolve();
  port.on('message', (msg: RequestMessage) => {
    if (options.ordered) queue = queue.then(() => handle(msg));
    else void handle(msg);
  });
}
