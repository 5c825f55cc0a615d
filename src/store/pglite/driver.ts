// PGlite driver: embedded Postgres (Wasm) on a worker thread of its own (worker.ts), so the database's work never
// runs on the Guardian's event loop. Drizzle on this thread speaks to it through drizzle's pg-proxy; a transaction
// ships the statements its work sends together (a group-commit batch and its COMMIT) as one message. One
// connection, so one append transaction at a time; group commit still batches concurrent appends into it.
import { drizzle } from 'drizzle-orm/pg-proxy';
import { WorkerRemoteError } from '../../worker-thread/index.ts';
import { type BoundQuery, type Rows, type StoreDatabase, type StoreDriver, renderQuery } from '../driver.ts';
import { type PgliteWorker, startPgliteWorker, takeEarlyPglite } from './early.ts';
import type { StatementOutcome } from './protocol.ts';

export { openPgliteEarly } from './early.ts';
export { PGLITE_SHARED_BUFFERS } from './settings.ts';

export interface PgliteDriverOptions {
  /** Data lives in `<dataDir>/pgdata`; omit for an in-memory database. */
  dataDir?: string;
  /** Seed a new `<dataDir>/pgdata` from the prebuilt template when there is a current one (default true). */
  seed?: boolean;
  /**
   * Bound of the worker's JavaScript heap (rows on their way to this thread), in MB; past it the worker dies and
   * every pending and later call fails (fail closed). Default: V8's own bound.
   */
  maxWorkerHeapMb?: number;
}

/** A migrated in-memory database, dumped once per process by the first in-memory worker; later ones load a copy. */
let migratedDump: Promise<Uint8Array | undefined> | undefined;

interface Waiting {
  query: BoundQuery;
  resolve(rows: Rows): void;
  reject(err: Error): void;
}

async function openWorker(options: PgliteDriverOptions): Promise<{ worker: PgliteWorker; migrated?: Promise<void> }> {
  const started = takeEarlyPglite();
  if (started) {
    if (started.dataDir === options.dataDir && !options.maxWorkerHeapMb && options.seed !== false) {
      try {
        await started.opened;
      } catch (err) {
        await started.worker.terminate().catch(() => {});
        throw err;
      }
      return { worker: started.worker, migrated: started.migrated };
    }
    await started.opened.then(() => started.worker.request('close', null)).catch(() => {});
    await started.worker.terminate().catch(() => {});
  }
  const worker = startPgliteWorker(options.maxWorkerHeapMb);
  try {
    if (options.dataDir !== undefined) {
      await worker.request('open', { dataDir: options.dataDir, seed: options.seed !== false });
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
  return { worker };
}

export async function openPgliteDriver(options: PgliteDriverOptions = {}): Promise<StoreDriver> {
  const opened = await openWorker(options);
  const worker = opened.worker;
  let premigrated = opened.migrated;
  const run = (text: string, params: unknown[] = []): Promise<Rows> =>
    worker.request('query', { text, params, rows: 'objects' }) as Promise<Rows>;
  const db = drizzle(async (text, params, method) => ({
    rows: await worker.request('query', {
      text,
      params,
      rows: method === 'all' ? 'drizzle-arrays' : 'drizzle-objects',
    }),
  })) as unknown as StoreDatabase;
  let nextTransaction = 1;
  let closed = false;

  return {
    name: 'pglite',
    db,
    appendConcurrency: 1,
    async transaction(work) {
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
            buffered.push({ query: renderQuery(statement), resolve, reject }),
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
    async migrate() {
      const ahead = premigrated;
      premigrated = undefined;
      await (ahead ?? worker.request('migrate', null));
    },
    async close() {
      if (closed) return;
      closed = true;
      try {
        if (!worker.failure) await worker.request('close', null);
      } finally {
        await worker.terminate();
      }
    },
    query: run,
  };
}
