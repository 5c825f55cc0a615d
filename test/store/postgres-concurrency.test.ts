// Exactly-once appends across processes, and behaviour when Postgres drops the connection mid-append.
import { execFile, spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { verifyChain } from '../../src/audit/index.ts';
import { openStore, StoreError, type DurableStore } from '../../src/store/index.ts';
import { TEST_DATABASE_URL, dropSchema, uniqueSchema } from './postgres-schema.ts';
import { stepEntry } from './storage-suite.ts';

const run = promisify(execFile);
const schema = uniqueSchema('store_concurrency');
const tsx = fileURLToPath(new URL('../../node_modules/.bin/tsx', import.meta.url));
const worker = fileURLToPath(new URL('./fixtures/append-worker.ts', import.meta.url));
const stepWorker = fileURLToPath(new URL('./fixtures/step-worker.ts', import.meta.url));

let store: DurableStore;
beforeAll(async () => {
  store = await openStore({ databaseUrl: TEST_DATABASE_URL, schema, applicationName: `guardian-test-${schema}` });
});
afterAll(async () => {
  await store?.close();
  await dropSchema(schema);
});

interface Told {
  sessionId: string;
  seq: number;
  entryHash: string;
  requestId: string;
}

/**
 * Each session's chain is linear with `perSession` entries from each of writers A and B, each stored entry is
 * what its writer was told, and the chain verifies. Returns each session's entries.
 */
async function expectChainsAsTold(ids: string[], told: Told[], perSession: number) {
  const entriesOf = new Map<string, Awaited<ReturnType<DurableStore['listContextEntries']>>>();
  for (const sessionId of ids) {
    const entries = await store.listContextEntries(sessionId, { limit: 1000 });
    expect(entries.map((e) => e.seq)).toEqual(Array.from({ length: 2 * perSession }, (_, i) => i));
    const bySeq = new Map(told.filter((a) => a.sessionId === sessionId).map((a) => [a.seq, a]));
    expect(bySeq.size).toBe(2 * perSession);
    for (const e of entries) {
      expect(bySeq.get(e.seq)).toMatchObject({ entryHash: e.entryHash, requestId: e.content.entry_id });
    }
    const writers = new Set(entries.map((e) => (e.params as { payload: { writer: string } }).payload.writer));
    expect(writers).toEqual(new Set(['A', 'B']));
    expect((await verifyChain(store, sessionId)).ok).toBe(true);
    entriesOf.set(sessionId, entries);
  }
  return entriesOf;
}

describe('two processes on one Postgres', () => {
  it('hammering the same sessions yields linear chains with no duplicate seq', async () => {
    const ids = Array.from({ length: 8 }, () => randomUUID());
    const perSession = 25;
    const outputs = await Promise.all(
      ['A', 'B'].map((label) =>
        run(tsx, [worker, TEST_DATABASE_URL, schema, ids.join(','), String(perSession), label], { timeout: 120_000 }),
      ),
    );
    const appended = outputs.flatMap(
      (o) =>
        (
          JSON.parse(o.stdout.trim()) as {
            appended: { sessionId: string; seq: number; entryHash: string; requestId: string }[];
          }
        ).appended,
    );
    expect(appended).toHaveLength(2 * ids.length * perSession);
    await expectChainsAsTold(ids, appended, perSession);
  });
});

describe('two processes committing whole steps to the same sessions', () => {
  it('place every step at the head it expects, or write nothing: linear chains, each entry as its writer was told', async () => {
    const ids = Array.from({ length: 8 }, () => randomUUID());
    // A first step of each session creates its head (the transactional path); the rest are placed at an existing
    // head, one statement each batch that locks the heads itself (the autocommit path), racing the other process.
    const perSession = 25;
    const writers = ['A', 'B'].map((label) =>
      spawn(tsx, [stepWorker, TEST_DATABASE_URL, schema, ids.join(','), String(perSession), label], {
        timeout: 120_000,
      }),
    );
    const outputs = writers.map((child) => {
      let out = '';
      child.stdout.on('data', (c: Buffer) => (out += String(c)));
      const ready = new Promise<void>((resolve) => {
        const onData = () => out.includes('ready\n') && (child.stdout.off('data', onData), resolve());
        child.stdout.on('data', onData);
      });
      const exited = new Promise<string>((resolve, reject) =>
        child.once('close', (code) => (code === 0 ? resolve(out) : reject(new Error(`writer exited ${code}`)))),
      );
      return { child, ready, exited };
    });
    // Both stores open, then both start at once: their steps race for the same heads.
    await Promise.all(outputs.map((o) => o.ready));
    for (const o of outputs) o.child.stdin.write('go\n');
    const reports = (await Promise.all(outputs.map((o) => o.exited))).map(
      (out) =>
        JSON.parse(out.slice(out.indexOf('ready\n') + 'ready\n'.length).trim()) as {
          committed: { sessionId: string; seq: number; entryHash: string; requestId: string }[];
          stale: number;
        },
    );
    const committed = reports.flatMap((r) => r.committed);
    expect(committed).toHaveLength(2 * ids.length * perSession);
    // The two raced: some steps found the head moved by the other process and were placed again.
    expect(reports.reduce((n, r) => n + r.stale, 0)).toBeGreaterThan(0);
    const entriesOf = await expectChainsAsTold(ids, committed, perSession);
    for (const [sessionId, entries] of entriesOf) {
      // The head row is where the last entry is.
      const last = entries[entries.length - 1];
      expect(await store.getChainHead(sessionId)).toEqual({ seq: last.seq, entryHash: last.entryHash });
    }
  });
});

describe('Postgres connection loss', () => {
  it('a LISTEN whose connection is terminated reports it, reconnects and hears notifications again', async () => {
    const app = `guardian-test-${schema}`;
    const notifier = await openStore({ databaseUrl: TEST_DATABASE_URL, schema, applicationName: `${app}-notifier` });
    const admin = new pg.Client({ connectionString: TEST_DATABASE_URL });
    await admin.connect();
    let heard = 0;
    const errors: Error[] = [];
    const stop = await store.listenReplicas(
      () => heard++,
      (e) => errors.push(e),
    );
    const until = async (cond: () => boolean, poll?: () => Promise<unknown>) => {
      for (let i = 0; i < 400 && !cond(); i++) {
        await new Promise((r) => setTimeout(r, 25));
        await poll?.();
      }
      expect(cond()).toBe(true);
    };
    // Other test files may notify on the same database: counts only ever grow, never match exactly.
    const listeners = async () =>
      (
        await admin.query(`select pid from pg_stat_activity where application_name = $1 and query ilike 'listen %'`, [
          app,
        ])
      ).rows.map((r: { pid: number }) => r.pid);
    try {
      expect(stop).not.toBeNull();
      await notifier.notifyReplicas('replica-a');
      await until(() => heard >= 1);
      const [first] = await listeners();
      await admin.query('select pg_terminate_backend($1)', [first]);
      await until(() => errors.length > 0);
      let replaced: number[] = [];
      await until(
        () => replaced.length === 1 && replaced[0] !== first,
        async () => (replaced = await listeners()),
      );
      const before = heard;
      await notifier.notifyReplicas('replica-a');
      await until(() => heard > before);
    } finally {
      await stop?.();
      await notifier.close();
    }
    expect(await listeners()).toEqual([]);
    await admin.end();
  });

  it('fails the in-flight append with nothing half-written, then reconnects', async () => {
    const sessionId = randomUUID();
    for (let i = 0; i < 3; i++) await store.appendContextEntry(sessionId, stepEntry(sessionId, i));
    const admin = new pg.Client({ connectionString: TEST_DATABASE_URL });
    const blocker = new pg.Client({ connectionString: TEST_DATABASE_URL, options: `-c search_path=${schema}` });
    await Promise.all([admin.connect(), blocker.connect()]);
    try {
      // Another transaction holds an uncommitted row at seq 3: our append gets as far as locking and
      // updating the head, then waits on the entry insert — mid-transaction — when its connection dies.
      await blocker.query('begin');
      await blocker.query(
        `insert into context_entries (session_id, seq, entry_id, step_id, step_type, content_jcs, entry_hash, params_jcs)
         values ($1, 3, 'x', 'x', 'x', '{}', $2, '{}')`,
        [sessionId, '0'.repeat(64)],
      );
      const pending = store.appendContextEntry(sessionId, stepEntry(sessionId, 3)).then(
        () => null,
        (e: unknown) => e,
      );
      const app = `guardian-test-${schema}`;
      for (let i = 0; i < 200; i++) {
        const waiting = await admin.query(
          `select count(*)::int as n from pg_stat_activity where application_name = $1 and wait_event_type = 'Lock'`,
          [app],
        );
        if (waiting.rows[0].n > 0) break;
        await new Promise((r) => setTimeout(r, 25));
      }
      const killed = await admin.query(
        'select pg_terminate_backend(pid) from pg_stat_activity where application_name = $1',
        [app],
      );
      expect(killed.rows.length).toBeGreaterThan(0);
      const err = await pending;
      expect(err).toBeInstanceOf(StoreError);
      expect((err as StoreError).code).toBe('unavailable');
      await blocker.query('rollback');
    } finally {
      await Promise.all([admin.end(), blocker.end()]);
    }
    // Nothing of the failed transaction remains: the head still points at seq 2.
    expect((await store.getChainHead(sessionId))?.seq).toBe(2);
    expect((await verifyChain(store, sessionId)).ok).toBe(true);
    // The pool reconnects on its own.
    const next = await store.appendContextEntry(sessionId, stepEntry(sessionId, 4));
    expect(next.seq).toBe(3);
    expect((await verifyChain(store, sessionId)).ok).toBe(true);
  });

  it('reports an unreachable database as unavailable, not a crash', async () => {
    const err = await openStore({ databaseUrl: 'postgres://postgres@127.0.0.1:1/test' }).then(
      () => null,
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(StoreError);
    expect((err as StoreError).code).toBe('unavailable');
  });
});
