// The PGlite driver's worker thread (src/store/pglite/worker.ts): transactions serialised on its one connection,
// rolled back when their work throws, a crashed in-memory worker failing every pending and later call (fail closed,
// never a hang; on disk the worker is restarted: pglite-restart.test.ts), and close() shutting Postgres down with
// nothing lost. The storage suite itself runs in pglite.test.ts.
import { randomUUID } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import type { StoreDriver } from '../../src/store/driver.ts';
import { DrizzleGuardianStore } from '../../src/store/drizzle-store.ts';
import { StoreError } from '../../src/store/index.ts';
import { openPgliteDriver } from '../../src/store/pglite/index.ts';
import type { PgliteWorkerEvent } from '../../src/store/pglite/driver.ts';
import { WorkerCrashedError } from '../../src/worker-thread/index.ts';
import { stepEntry } from './storage-suite.ts';

const opened: StoreDriver[] = [];
const dirs: string[] = [];
afterEach(async () => {
  await Promise.all(opened.splice(0).map((d) => d.close().catch(() => {})));
  await Promise.all(dirs.splice(0).map((d) => rm(d, { recursive: true, force: true })));
});

async function driverWithTable(options: Parameters<typeof openPgliteDriver>[0] = {}): Promise<StoreDriver> {
  const driver = await openPgliteDriver(options);
  opened.push(driver);
  await driver.query('create table if not exists worker_t (n integer not null)');
  return driver;
}

const count = async (driver: StoreDriver): Promise<number> =>
  Number((await driver.query('select count(*)::int as n from worker_t'))[0].n);

describe('PGlite worker: autocommitted prepared statements', () => {
  it('binds typed parameters, parses rows as query() does, and commits each statement on its own', async () => {
    const driver = await driverWithTable();
    const autocommit = driver.autocommit as NonNullable<StoreDriver['autocommit']>;
    const insert = {
      text: 'insert into worker_t select unnest($1::integer[]) returning n, n::text as t, n > 1 as big, now() as at',
      params: [[1, 2]],
    };
    const first = await autocommit(insert);
    expect(first.map((r) => [r.n, r.t, r.big])).toEqual([
      [1, '1', false],
      [2, '2', true],
    ]);
    expect(first[0].at).toBeInstanceOf(Date);
    // The same text again (bound to the statement prepared by the first run), with other values.
    expect((await autocommit({ ...insert, params: [[5]] })).map((r) => r.n)).toEqual([5]);
    expect(await count(driver)).toBe(3);
  });

  it('reports a failing statement with its SQLSTATE, writes nothing of it, and the next statement runs', async () => {
    const driver = await driverWithTable();
    const autocommit = driver.autocommit as NonNullable<StoreDriver['autocommit']>;
    const insert = { text: 'insert into worker_t select unnest($1::integer[])', params: [[1, null]] };
    expect(((await autocommit(insert).catch((e: unknown) => e)) as { code?: string }).code).toBe('23502');
    expect(await count(driver)).toBe(0);
    // A text Postgres cannot parse is not prepared, and leaves nothing behind.
    const bad = await autocommit({ text: 'insert into worker_t valuez (1)', params: [] }).catch((e: unknown) => e);
    expect((bad as { code?: string }).code).toBe('42601');
    await autocommit({ ...insert, params: [[7]] });
    expect(await count(driver)).toBe(1);
  });

  it('waits for an open transaction to end instead of running inside it', async () => {
    const driver = await driverWithTable();
    const autocommit = driver.autocommit as NonNullable<StoreDriver['autocommit']>;
    let inserted!: () => void;
    const insertedOnce = new Promise<void>((r) => (inserted = r));
    let release!: () => void;
    const held = new Promise<void>((r) => (release = r));
    const failing = driver.transaction(async (query) => {
      await query({ text: 'insert into worker_t values (1)', params: [] });
      inserted();
      await held;
      throw new Error('work failed');
    });
    await insertedOnce;
    const outside = autocommit({ text: 'select count(*)::int as n from worker_t', params: [] });
    release();
    await expect(failing).rejects.toThrow('work failed');
    expect((await outside)[0].n).toBe(0);
  });
});

describe('PGlite worker: transactions', () => {
  it('rolls back a transaction whose work throws, and keeps other statements out of it', async () => {
    const driver = await driverWithTable();
    let inserted!: () => void;
    const insertedOnce = new Promise<void>((r) => (inserted = r));
    let release!: () => void;
    const held = new Promise<void>((r) => (release = r));
    const failing = driver.transaction(async (query) => {
      await query({ text: 'insert into worker_t values (1), (2)', params: [] });
      inserted();
      await held;
      throw new Error('work failed');
    });
    await insertedOnce;
    // Sent while the transaction is open: it waits for the transaction's end rather than running inside it.
    const outside = count(driver);
    release();
    await expect(failing).rejects.toThrow('work failed');
    expect(await outside).toBe(0);
    expect(await count(driver)).toBe(0);
  });

  it('rolls back every statement of a batch when one fails, and reports the SQLSTATE', async () => {
    const driver = await driverWithTable();
    const outcome = driver.transaction(async (query) => {
      const [a, b] = await Promise.all([
        query({ text: 'insert into worker_t values (1) returning n', params: [] }),
        query({ text: 'insert into worker_t values (null)', params: [] }, { last: true }),
      ]);
      return [a, b];
    });
    const err = await outcome.catch((e: unknown) => e);
    expect((err as { code?: string }).code).toBe('23502');
    expect(await count(driver)).toBe(0);
  });

  it('serialises concurrent transactions on the one connection (read-modify-write loses no update)', async () => {
    const driver = await driverWithTable();
    await driver.query('insert into worker_t values (0)');
    await Promise.all(
      Array.from({ length: 20 }, () =>
        driver.transaction(async (query) => {
          const [row] = await query({ text: 'select n from worker_t', params: [] });
          await new Promise((r) => setTimeout(r, 1));
          await query({ text: 'update worker_t set n = $1', params: [Number(row.n) + 1] }, { last: true });
        }),
      ),
    );
    expect(await driver.query('select n from worker_t')).toEqual([{ n: 20 }]);
  });

  it('commits a transaction whose work returns without a statement marked last', async () => {
    const driver = await driverWithTable();
    const rows = await driver.transaction(async (query) => {
      await query({ text: 'insert into worker_t values ($1)', params: [7] });
      return query({ text: 'select n from worker_t', params: [] });
    });
    expect(rows).toEqual([{ n: 7 }]);
    expect(await count(driver)).toBe(1);
  });
});

describe('PGlite worker: crash', () => {
  it('an in-memory worker that dies fails the pending and later calls, is not restarted, and the store fails closed', async () => {
    // A bounded worker heap and a result far past it: the thread dies as it would on any fatal error.
    const events: PgliteWorkerEvent[] = [];
    const driver = await driverWithTable({ maxWorkerHeapMb: 64, onWorkerEvent: (e) => events.push(e) });
    const store = new DrizzleGuardianStore(driver);
    const sessionId = randomUUID();
    await store.appendContextEntry(sessionId, stepEntry(sessionId, 0));
    let inTransaction!: () => void;
    const begun = new Promise<void>((r) => (inTransaction = r));
    const pendingTx = driver.transaction(async (query) => {
      await query({ text: 'insert into worker_t values (1)', params: [] });
      inTransaction();
      return query({ text: "select repeat('x', 8000000) as big from generate_series(1, 40)", params: [] });
    });
    await begun;
    const results = await Promise.allSettled([pendingTx, driver.query('select 1')]);
    for (const r of results) {
      expect(r.status).toBe('rejected');
      expect((r as PromiseRejectedResult).reason).toBeInstanceOf(WorkerCrashedError);
    }
    await expect(driver.query('select 1')).rejects.toBeInstanceOf(WorkerCrashedError);
    const err = await store.appendContextEntry(sessionId, stepEntry(sessionId, 1)).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(StoreError);
    expect((err as StoreError).code).toBe('unavailable');
    // A new in-memory database would be empty: every chain forgotten. The driver says so and stays down.
    expect(events.map((e) => e.kind)).toEqual(['gave_up']);
    expect(events[0].message).toMatch(/in-memory store is not restarted/);
    await driver.close();
  });
});

describe('PGlite worker: close', () => {
  it('close() shuts Postgres down with every committed write kept; later calls reject', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'guardian-pglite-worker-'));
    dirs.push(dir);
    const first = await driverWithTable({ dataDir: dir });
    await first.transaction((query) =>
      query({ text: 'insert into worker_t select generate_series(1, 500)', params: [] }, { last: true }),
    );
    await first.close();
    await expect(first.query('select 1')).rejects.toThrow();
    await first.close();
    const second = await driverWithTable({ dataDir: dir });
    expect(await count(second)).toBe(500);
  });
});
