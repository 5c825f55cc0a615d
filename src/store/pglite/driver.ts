// PGlite driver: embedded Postgres (Wasm) on a worker thread of its own (worker.ts), so the database's work never
// runs on the Guardian's event loop. Drizzle on this thread speaks to it through drizzle's pg-proxy; a transaction
// ships the statements its work sends together (a group-commit batch and its COMMIT) as one message. One
// connection, so one append transaction at a time; group commit still batches concurrent appends into it.
//
// A worker that dies (a fatal error, its heap bound) is replaced by a new one on the same data directory, whose
// start replays the write-ahead log as Postgres' crash recovery does (PGlite's own start-up), after a pause that
// grows with each crash and a bounded number of times (RestartPolicy). Until it answers, every call fails at once (the
// pipeline answers a signed DENY store_unavailable: fail closed). What was in flight on the dead worker failed with
// it and is never sent again: a transaction stays on the worker it began on.
import { drizzle } from 'drizzle-orm/pg-proxy';
import { WorkerCrashedError, WorkerRemoteError } from '../../worker-thread/index.ts';
import { type Rows, type StoreDatabase, type StoreDriver, renderQuery } from '../driver.ts';
import { type PgliteWorker, type Started, startPgliteWorker, takeEarlyPglite } from './early.ts';
import type { PgliteProtocol, PgliteStatement, StatementOutcome } from './protocol.ts';

export { openPgliteEarly } from './early.ts';
export { PGLITE_SHARED_BUFFERS } from './settings.ts';

export interface PgliteDriverOptions {
  /** Data lives in `<dataDir>/pgdata`; omit for an in-memory database. */
  dataDir?: string;
  /** Seed a new `<dataDir>/pgdata` from the prebuilt template when there is a current one (default true). */
  seed?: boolean;
  /**
   * Bound of the worker's JavaScript heap (rows on their way to this thread), in MB; past it the worker dies, every
   * pending call fails, and the worker is restarted as after any crash. Default: V8's own bound.
   */
  maxWorkerHeapMb?: number;
  /** Hears each crash, restart and give-up of the worker (default: one line on stderr). */
  onWorkerEvent?: (event: PgliteWorkerEvent) => void;
  /** How often and how soon a crashed worker is replaced (default RESTARTS). */
  restarts?: Partial<RestartPolicy>;
}

/**
 * Restarts: at most `max` within `windowMs` (a worker that keeps crashing is left down rather than spun), the n-th
 * within the window after `firstMs * 2^(n-1)`, capped at `capMs`.
 */
export interface RestartPolicy {
  max: number;
  windowMs: number;
  firstMs: number;
  capMs: number;
}

/** What the driver reports about its worker; `message` is a log line. */
export type PgliteWorkerEvent =
  /** The worker died; a new one opens the data dir in `restartInMs` (none for an in-memory database: `gave_up`). */
  | { kind: 'crashed'; message: string; error: Error; restartInMs: number }
  /** A new worker opened the data dir after `downMs` without one. */
  | { kind: 'restarted'; message: string; downMs: number }
  /** No restart (in memory, or too many crashes): every call fails until the process restarts. */
  | { kind: 'gave_up'; message: string; error: Error };

const RESTARTS: RestartPolicy = { max: 5, windowMs: 60_000, firstMs: 100, capMs: 5_000 };

const defaultWorkerEvent = (event: PgliteWorkerEvent): void => {
  process.stderr.write(`guardian store: ${event.message}\n`);
};

/** A migrated in-memory database, dumped once per process by the first in-memory worker; later ones load a copy. */
let migratedDump: Promise<Uint8Array | undefined> | undefined;

interface Waiting {
  query: PgliteStatement;
  resolve(rows: Rows): void;
  reject(err: Error): void;
}

/** A new worker with the database of `options` open (on disk: seeded first when `seed` and the dir is new). */
async function openWorker(options: PgliteDriverOptions, seed: boolean): Promise<Started> {
  const started = startPgliteWorker(options.maxWorkerHeapMb);
  const { worker } = started;
  try {
    if (options.dataDir !== undefined) {
      await worker.request('open', { dataDir: options.dataDir, seed });
    } else {
      const first = migratedDump === undefined;
      let resolveDump: (dump: Uint8Array | undefined) => void = () => {};
      if (first) migratedDump = new Promise((r) => (resolveDump = r));
      const loadDataDir = first ? undefined : await migratedDump;
      try {
        const opened = await worker.request('open', loadDataDir ? { seed: false, loadDataDir } : { seed: false });
        resolveDump(opened.migratedDump);
      } catch (err) {
        if (first) migratedDump = undefined;
        resolveDump(undefined);
        throw err;
      }
    }
  } catch (err) {
    await worker.terminate().catch(() => {});
    throw err;
  }
  return started;
}

async function firstWorker(options: PgliteDriverOptions): Promise<{ started: Started; migrated?: Promise<void> }> {
  const ahead = takeEarlyPglite();
  if (ahead) {
    const { worker } = ahead.started;
    if (ahead.dataDir === options.dataDir && !options.maxWorkerHeapMb && options.seed !== false) {
      try {
        await ahead.opened;
      } catch (err) {
        await worker.terminate().catch(() => {});
        throw err;
      }
      return { started: ahead.started, migrated: ahead.migrated };
    }
    await ahead.opened.then(() => worker.request('close', null)).catch(() => {});
    await worker.terminate().catch(() => {});
  }
  return { started: await openWorker(options, options.seed !== false) };
}

/**
 * The worker calls go to: the live one, replaced after a crash. While there is none (restarting, or given up)
 * `current()` throws, so a call fails at once instead of waiting for a database that may not come back.
 */
class Supervisor {
  #worker: PgliteWorker;
  #down: Error | null = null;
  #closed = false;
  readonly #crashes: number[] = [];
  #restarting: Promise<void> = Promise.resolve();
  #wakeFromPause: (() => void) | null = null;
  readonly #policy: RestartPolicy;

  constructor(
    first: Started,
    private readonly options: PgliteDriverOptions,
    private readonly report: (event: PgliteWorkerEvent) => void,
  ) {
    this.#policy = { ...RESTARTS, ...options.restarts };
    this.#worker = first.worker;
    this.#watch(first);
  }

  current(): PgliteWorker {
    if (this.#down) throw this.#down;
    return this.#worker;
  }

  request<K extends keyof PgliteProtocol & string>(
    op: K,
    body: PgliteProtocol[K]['request'],
  ): Promise<PgliteProtocol[K]['response']> {
    try {
      return this.current().request(op, body);
    } catch (err) {
      return Promise.reject(err);
    }
  }

  #watch(started: Started): void {
    void started.crashed.then((err) => {
      if (this.#closed || started.worker !== this.#worker) return;
      if (this.options.dataDir === undefined) {
        // An in-memory database died with its thread: a new one would be empty, every chain forgotten.
        this.#down = err;
        this.report({ kind: 'gave_up', message: `${err.message}; an in-memory store is not restarted`, error: err });
        return;
      }
      this.#down = new WorkerCrashedError(`${err.message}; the embedded store is restarting`, err.exitCode);
      // A listener that throws leaves the store down, never an unhandled rejection.
      this.#restarting = this.#restart(err).catch(() => {});
    });
  }

  async #restart(cause: Error): Promise<void> {
    const downSince = performance.now();
    let error = cause;
    for (;;) {
      const now = Date.now();
      const policy = this.#policy;
      while (this.#crashes.length > 0 && now - this.#crashes[0] > policy.windowMs) this.#crashes.shift();
      this.#crashes.push(now);
      if (this.#crashes.length > policy.max) {
        this.#down = new WorkerCrashedError(
          `the PGlite worker failed ${this.#crashes.length} times within ${policy.windowMs / 1000} s (last: ${error.message}); the embedded store stays down until the Guardian restarts`,
        );
        this.report({ kind: 'gave_up', message: this.#down.message, error });
        return;
      }
      const pause = Math.min(policy.capMs, policy.firstMs * 2 ** (this.#crashes.length - 1));
      this.report({
        kind: 'crashed',
        message: `${error.message}; calls fail (fail closed) until a new worker has opened ${this.options.dataDir}, in ${pause} ms`,
        error,
        restartInMs: pause,
      });
      // The dead thread is gone before its data dir is opened again.
      await this.#worker.terminate().catch(() => {});
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, pause);
        // A crashed store does not hold an otherwise finished process open.
        timer.unref();
        this.#wakeFromPause = () => {
          clearTimeout(timer);
          resolve();
        };
      });
      this.#wakeFromPause = null;
      if (this.#closed) return;
      let started: Started;
      try {
        // Never seeded: the data dir holds the database the dead worker wrote.
        started = await openWorker(this.options, false);
      } catch (err) {
        error = err instanceof Error ? err : new Error(String(err));
        continue;
      }
      if (this.#closed) {
        await started.worker
          .request('close', null)
          .catch(() => {})
          .finally(() => started.worker.terminate());
        return;
      }
      this.#worker = started.worker;
      this.#down = null;
      this.#watch(started);
      const downMs = performance.now() - downSince;
      this.report({
        kind: 'restarted',
        message: `a new PGlite worker opened ${this.options.dataDir} after ${downMs.toFixed(0)} ms; the embedded store answers again`,
        downMs,
      });
      return;
    }
  }

  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    this.#wakeFromPause?.();
    await this.#restarting;
    const worker = this.#worker;
    try {
      if (!worker.failure) await worker.request('close', null);
    } finally {
      await worker.terminate();
    }
  }
}

export async function openPgliteDriver(options: PgliteDriverOptions = {}): Promise<StoreDriver> {
  const first = await firstWorker(options);
  const workers = new Supervisor(first.started, options, options.onWorkerEvent ?? defaultWorkerEvent);
  let premigrated = first.migrated;
  const run = (text: string, params: unknown[] = []): Promise<Rows> =>
    workers.request('query', { text, params, rows: 'objects' }) as Promise<Rows>;
  const db = drizzle(async (text, params, method) => ({
    rows: await workers.request('query', {
      text,
      params,
      rows: method === 'all' ? 'drizzle-arrays' : 'drizzle-objects',
    }),
  })) as unknown as StoreDatabase;
  let nextTransaction = 1;

  return {
    name: 'pglite',
    db,
    appendConcurrency: 1,
    async transaction(work) {
      // Every message of the transaction goes to the worker it began on. After that worker died they fail with it:
      // sent to its replacement, the later statements would begin a transaction there without the earlier ones.
      const worker = workers.current();
      const id = nextTransaction++;
      let begun = false;
      let ended = false;
      let buffered: Waiting[] = [];
      let flushQueued = false;
      // Statements sent together (before `work` awaits) leave as one message; the one marked last takes COMMIT along.
      const flush = (end?: 'commit'): void => {
        flushQueued = false;
        const batch = buffered;
        buffered = [];
        if (batch.length === 0 && end === undefined) return;
        if (ended && end === undefined) {
          // Sent after the transaction finished (its work threw meanwhile): never part of another one.
          for (const w of batch) w.reject(new Error('statement after the end of its transaction'));
          return;
        }
        begun = true;
        worker.request('transaction', { id, statements: batch.map((w) => w.query), ...(end ? { end } : {}) }).then(
          (outcomes: StatementOutcome[]) =>
            batch.forEach((w, i) => {
              const outcome = outcomes[i];
              if (outcome === undefined) w.reject(new Error('the PGlite worker answered too few statements'));
              else if ('rows' in outcome) w.resolve(outcome.rows);
              else w.reject(new WorkerRemoteError(outcome.error));
            }),
          (err: Error) => {
            for (const w of batch) w.reject(err);
          },
        );
      };
      try {
        const result = await work((statement, opts) => {
          if (ended) return Promise.reject(new Error('statement after the last one of a transaction'));
          const rows = new Promise<Rows>((resolve, reject) =>
            buffered.push({ query: { ...renderQuery(statement), prepared: true }, resolve, reject }),
          );
          if (opts?.last) {
            ended = true;
            flush('commit');
          } else if (!flushQueued) {
            flushQueued = true;
            queueMicrotask(() => flush());
          }
          return rows;
        });
        if (!ended) {
          if (buffered.length > 0) flush();
          if (begun) {
            ended = true;
            await worker.request('transaction', { id, statements: [], end: 'commit' });
          }
        }
        return result;
      } catch (err) {
        const wasEnded = ended;
        ended = true;
        flush();
        if (begun && !wasEnded) {
          await worker.request('transaction', { id, statements: [], end: 'rollback' }).catch(() => {});
        }
        throw err;
      }
    },
    execute(statement) {
      const { text, params } = renderQuery(statement);
      return run(text, params);
    },
    // One statement outside a transaction block commits when it completes, as on Postgres; prepared in the worker.
    autocommit: ({ text, params }) =>
      workers.request('query', { text, params, rows: 'objects', prepared: true }) as Promise<Rows>,
    async migrate() {
      const ahead = premigrated;
      premigrated = undefined;
      await (ahead ?? workers.request('migrate', null));
    },
    close: () => workers.close(),
    query: run,
  };
}
