// Crash durability of `guardian serve` on Postgres and on the embedded store (PGlite on disk), with real processes:
// SIGKILL mid-load, restart on the same database, every decision an agent received is in the chain (ACS §8.2: the entry is appended before the answer
// leaves), `audit verify --all` is clean, and sessions carry on. Then Postgres backends terminated mid-load:
// requests fail closed or with an error, never a crash, and the server keeps answering.
//
// Isolation: a database of its own per run (not a schema): `serve` ignores GUARDIAN_DB_SCHEMA and drizzle's
// migration journal lives in the global "drizzle" schema, so a schema alone would not isolate the tables.
import type { ChildProcessWithoutNullStreams } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { AcsClient, StepOutcome } from '../../src/client/index.ts';
import { type DurableStore, openStore } from '../../src/store/index.ts';
import { buildDecisionModule } from '../acs/fixtures/decision-module.ts';
import {
  agentClient,
  auditVerifyAll,
  drive,
  killAll,
  METHODS,
  MSG,
  startServe as startServeOn,
  stopServe as stop,
  TOOL,
  type Received,
  type Serving,
} from './fixtures/serve-process.ts';
import { TEST_DATABASE_URL } from './postgres-schema.ts';
import { foldRecordedStep, initialReplayState, requestOf } from '../../src/replay/live-step.ts';

const DB = `acs_crash_${process.pid}_${Math.floor(Math.random() * 1e6)}`;
const APP_NAME = `acs_crash_${process.pid}`;
const dbUrl = (() => {
  const u = new URL(TEST_DATABASE_URL);
  u.pathname = `/${DB}`;
  // The connection string's application_name wins over the pool default: only this test's backends get killed.
  u.searchParams.set('application_name', APP_NAME);
  return u.toString();
})();

let dir: string;
const children: ChildProcessWithoutNullStreams[] = [];
const startServe = (): Promise<Serving> => startServeOn(dbUrl, dir, join(dir, 'policy.wasm'), children);
const auditVerify = () => auditVerifyAll(dbUrl, dir);

async function admin<T>(work: (c: pg.Client) => Promise<T>, database = 'test'): Promise<T> {
  const u = new URL(TEST_DATABASE_URL);
  u.pathname = `/${database}`;
  const c = new pg.Client({ connectionString: u.toString() });
  await c.connect();
  try {
    return await work(c);
  } finally {
    await c.end();
  }
}

/** Where clients send: switched to the restarted server so sessions keep the chain head they verified. */
let target = '';
const newClient = (agent: string) => agentClient(() => target, agent);

beforeAll(async () => {
  // The served Guardians (children inherit this environment) store a whole session state every 3 steps: the
  // restart then finds sessions with whole states and with changes after them.
  process.env.GUARDIAN_STATE_CHECKPOINT_EVERY = '3';
  dir = mkdtempSync(join(tmpdir(), 'acs-crash-'));
  writeFileSync(
    join(dir, 'policy.wasm'),
    await buildDecisionModule({ constant: { decision: 'allow', reasoning: 'crash fixture' } }),
  );
  await admin((c) => c.query(`create database "${DB}"`));
}, 60_000);

afterAll(async () => {
  await killAll(children);
  await admin((c) => c.query(`drop database if exists "${DB}" with (force)`)).catch(() => undefined);
  rmSync(dir, { recursive: true, force: true });
}, 60_000);

/**
 * Where a crash test's Guardian keeps its store: Postgres (a database of its own), or the embedded default (PGlite
 * on disk under `<dir>/data`, a directory of its own: one process opens it at a time, so the test reads it only
 * while no server runs).
 */
interface StoreUnderTest {
  name: string;
  /** DATABASE_URL of the served Guardian; empty for the embedded store. */
  databaseUrl: string;
  dir: () => string;
  open: () => Promise<DurableStore>;
}

const STORES: StoreUnderTest[] = [
  {
    name: 'Postgres',
    databaseUrl: dbUrl,
    dir: () => dir,
    open: () => openStore({ databaseUrl: dbUrl.replace(/\?.*$/, ''), skipMigrations: true }),
  },
  {
    name: 'the embedded store (PGlite on disk)',
    databaseUrl: '',
    dir: () => join(dir, 'embedded'),
    open: () => openStore({ dataDir: join(dir, 'embedded', 'data'), skipMigrations: true }),
  },
];

describe.each(STORES)('guardian serve on $name: crash and restart', (under) => {
  it('SIGKILL mid-load: every received decision is chained, audit verify is clean, sessions continue after restart', async () => {
    const home = under.dir();
    mkdirSync(home, { recursive: true });
    const serveHere = (): Promise<Serving> => startServeOn(under.databaseUrl, home, join(dir, 'policy.wasm'), children);
    const first = await serveHere();
    target = first.url;
    // An idle session whose last answer certainly arrived: it must carry on after the restart.
    const idle = newClient('idle-agent');
    await idle.hello({ methods_implemented: METHODS });
    const received: Received[] = [];
    expect(await drive(idle, received, () => received.length >= 3)).toBeUndefined();

    const clients = Array.from({ length: 8 }, (_, i) => newClient(`agent-${i}`));
    await Promise.all(clients.map((c) => c.hello({ methods_implemented: METHODS })));
    const load = Promise.all(clients.map((c) => drive(c, received, () => false)));
    // Kill once the load is well under way (decisions arriving from several sessions).
    const t0 = Date.now();
    while (received.length < 40 && Date.now() - t0 < 60_000) await new Promise((r) => setTimeout(r, 20));
    expect(received.length).toBeGreaterThanOrEqual(40);
    first.child.kill('SIGKILL');
    const ends = await load;
    // Every session stopped on a failed exchange, and the posture (fail closed) applied.
    for (const end of ends) {
      expect(end?.failure?.reason).toBe('transport_failed');
      expect(end?.decision).toBe('deny');
    }
    await new Promise((resolve) =>
      first.child.exitCode !== null || first.child.signalCode !== null
        ? resolve(null)
        : first.child.once('exit', resolve),
    );
    expect(first.child.signalCode).toBe('SIGKILL');

    // Every decision an agent received has its entry, with the very hash the agent was given.
    const resumable: { client: AcsClient; seq: number }[] = [];
    let store = await under.open();
    try {
      const bySession = new Map<string, Map<string, string>>();
      for (const sid of new Set(received.map((r) => r.sessionId))) {
        const entries = await store.listContextEntries(sid, { limit: 10_000 });
        // seq is dense and each entry links to the previous one.
        entries.forEach((e, i) => {
          expect(e.seq).toBe(entries[0].seq + i);
          if (i > 0) expect(e.previousHash).toBe(entries[i - 1].entryHash);
        });
        bySession.set(sid, new Map(entries.map((e) => [e.content.entry_id, e.entryHash])));
      }
      const missing = received.filter((r) => bySession.get(r.sessionId)?.get(r.requestId) !== r.chainHash);
      expect(missing).toEqual([]);
      // The session state after the restart (the last whole state plus the changes stored with the entries after
      // it) is the state the recorded steps fold to, as replay rebuilds it.
      for (const sid of bySession.keys()) {
        const session = await store.getSession(sid);
        let state = initialReplayState(session!);
        for (const e of await store.listContextEntries(sid, { limit: 10_000 })) {
          state = foldRecordedStep(
            state,
            requestOf(e.content.step_type, e.params),
            String((e.result as { decision: string }).decision),
          );
        }
        expect(JSON.stringify(session?.state)).toBe(JSON.stringify(state));
      }
      // A step is committed whole (entry with its delivered decision) or not at all, even under SIGKILL.
      expect(await store.query('select count(*)::int as n from context_entries where result_jcs is null')).toEqual([
        { n: 0 },
      ]);
      // The sessions whose stored head is the head the agent last verified (an in-flight request may have been
      // chained without its answer arriving) can carry on.
      for (const c of [idle, ...clients]) {
        const head = await store.getChainHead(c.sessionId);
        if (head?.entryHash === c.chainHash) resumable.push({ client: c, seq: head.seq });
      }
    } finally {
      await store.close();
    }
    expect(resumable.length).toBeGreaterThanOrEqual(1);

    // Sessions continue on the restarted server.
    const second = await serveHere();
    target = second.url;
    const answered = new Map<string, string | undefined>();
    for (const { client } of resumable) {
      const out = await client.step('steps/userMessage', MSG(999));
      expect(out.failure).toBeUndefined();
      expect(out.result?.decision).toBe('allow');
      answered.set(client.sessionId, out.result?.chain_hash);
    }
    await stop(second, 'SIGTERM');
    store = await under.open();
    try {
      for (const { client, seq } of resumable) {
        const after = await store.getChainHead(client.sessionId);
        expect(after?.seq).toBe(seq + 1);
        expect(after?.entryHash).toBe(answered.get(client.sessionId));
      }
    } finally {
      await store.close();
    }

    const verify = await auditVerifyAll(under.databaseUrl, home);
    expect(verify.out).toMatch(/\d+ chains, \d+ entries, 0 broken/);
    expect(verify.code).toBe(0);
  }, 180_000);
});

describe('guardian serve on Postgres: lost connections', () => {
  it('Postgres backends terminated mid-load: failed requests get an error (fail closed), the server keeps answering, verify clean', async () => {
    const server = await startServe();
    target = server.url;
    const received: Received[] = [];
    const clients = Array.from({ length: 8 }, (_, i) => newClient(`pg-loss-${i}`));
    await Promise.all(clients.map((c) => c.hello({ methods_implemented: METHODS })));
    let stopLoad = false;
    const load = Promise.all(clients.map((c) => drive(c, received, () => stopLoad)));
    const t0 = Date.now();
    while (received.length < 16 && Date.now() - t0 < 60_000) await new Promise((r) => setTimeout(r, 20));
    // Several rounds while requests are in flight: the pool's connections die under appends and decisions.
    let terminated = 0;
    for (let round = 0; round < 6; round++) {
      terminated += await admin(
        async (c) =>
          (
            await c.query('select pg_terminate_backend(pid) from pg_stat_activity where application_name = $1', [
              APP_NAME,
            ])
          ).rowCount ?? 0,
      );
      await new Promise((r) => setTimeout(r, 150));
    }
    stopLoad = true;
    const ends = await load;
    expect(terminated).toBeGreaterThan(0);
    // A lost database connection is a signed fail-closed deny (or an answered error applied as deny), never a
    // dropped or garbled exchange.
    const stopped = ends.filter((e): e is StepOutcome => e !== undefined);
    for (const f of stopped) {
      expect(f.decision).toBe('deny');
      if (f.failure) expect(f.failure.reason, JSON.stringify(f.failure)).toBe('error_response');
      else expect(f.result?.reason_codes, JSON.stringify(f.result)).toContain('store_unavailable');
    }
    expect(server.child.exitCode).toBeNull();
    expect(server.child.signalCode).toBeNull();

    const store = await openStore({ databaseUrl: dbUrl.replace(/\?.*$/, ''), skipMigrations: true });
    try {
      for (const r of received) {
        const entries = await store.listContextEntries(r.sessionId, { limit: 10_000 });
        expect(entries.find((e) => e.content.entry_id === r.requestId)?.entryHash).toBe(r.chainHash);
      }
      // No half-written step: a lost connection rolls back the whole transaction (entry, decision, keys, state).
      expect(await store.query('select count(*)::int as n from context_entries where result_jcs is null')).toEqual([
        { n: 0 },
      ]);
      // The server answers later steps: a fresh session, and every session whose stored head the agent verified.
      const fresh = newClient('pg-loss-fresh');
      await fresh.hello({ methods_implemented: METHODS });
      const out = await fresh.step('steps/toolCallRequest', TOOL(1));
      expect(out.failure).toBeUndefined();
      expect(out.result?.decision).toBe('allow');
      let resumed = 0;
      for (const c of clients) {
        const head = await store.getChainHead(c.sessionId);
        if (head?.entryHash !== c.chainHash) continue;
        const next = await c.step('steps/userMessage', MSG(1000));
        expect(next.failure).toBeUndefined();
        expect((await store.getChainHead(c.sessionId))?.entryHash).toBe(next.result?.chain_hash);
        resumed++;
      }
      expect(resumed).toBeGreaterThanOrEqual(1);
    } finally {
      await store.close();
    }
    const verify = await auditVerify();
    expect(verify.out).toMatch(/\d+ chains, \d+ entries, 0 broken/);
    expect(verify.code).toBe(0);
    await stop(server, 'SIGTERM');
  }, 180_000);
});
