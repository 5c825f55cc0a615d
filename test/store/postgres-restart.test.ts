// Postgres itself goes down under load and comes back: a crash (`pg_ctl stop -m immediate`: no shutdown
// checkpoint, WAL recovery on start) and then a clean restart, while `guardian serve` keeps running. On a private
// cluster of this test's own (initdb into a temporary directory, its own port), so the shared server the other
// test files use never goes down. Every decision an agent received survives (ACS §8.2: committed before the
// answer leaves), no step is half-written, requests during the outage fail closed, and the Guardian serves again
// as soon as Postgres is back, without a restart of its own.
import { execFile, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { chmodSync, existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { AcsClient, StepOutcome } from '../../src/client/index.ts';
import { openStore, type DurableStore } from '../../src/store/index.ts';
import { buildDecisionModule } from '../acs/fixtures/decision-module.ts';
import {
  agentClient,
  auditVerifyAll,
  drive,
  killAll,
  METHODS,
  MSG,
  startServe,
  stopServe,
  type Received,
  type Serving,
} from './fixtures/serve-process.ts';

/** The newest installed server's binaries (Debian: /usr/lib/postgresql/<major>/bin). */
function postgresBinDir(): string {
  const base = '/usr/lib/postgresql';
  const majors = existsSync(base)
    ? readdirSync(base)
        .filter((m) => existsSync(join(base, m, 'bin', 'initdb')))
        .sort((a, b) => Number(b) - Number(a))
    : [];
  if (majors.length === 0)
    throw new Error(`no PostgreSQL server binaries under ${base} (initdb, pg_ctl): this test runs its own cluster`);
  return join(base, majors[0], 'bin');
}

/**
 * Runs a Postgres tool, as the postgres user when we are root (Postgres refuses to run as root). Asynchronous, so
 * the agents' requests keep flowing while pg_ctl waits, and bounded: a tool that overruns is killed and the
 * failure names it, with the end of the server's log.
 */
function pgTool(tool: string, args: string[], timeoutMs = 90_000): Promise<string> {
  const bin = join(postgresBinDir(), tool);
  const asRoot = process.getuid?.() === 0;
  return new Promise((resolve, reject) => {
    execFile(
      asRoot ? 'runuser' : bin,
      asRoot ? ['-u', 'postgres', '--', bin, ...args] : args,
      { encoding: 'utf8', timeout: timeoutMs, killSignal: 'SIGKILL' },
      (err, stdout, stderr) => {
        if (err)
          reject(
            new Error(
              `${tool} ${args.join(' ')} failed (${err.killed ? `killed after ${timeoutMs} ms` : err.message}): ${stderr}${stdout}\n${postgresLogTail()}`,
            ),
          );
        else resolve(stdout);
      },
    );
  });
}

/** The end of the private cluster's server log, for failure messages. */
function postgresLogTail(): string {
  const log = dir ? join(dir, 'postgres.log') : '';
  return log && existsSync(log)
    ? `--- postgres.log (end) ---\n${readFileSync(log, 'utf8').slice(-4_000)}`
    : '(no postgres.log)';
}

/** Awaits `work`, or fails after `ms` naming the phase that stuck, with the server's log and the Guardian's stderr. */
async function phase<T>(what: string, ms: number, work: Promise<T>, server?: Serving): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const overrun = new Promise<never>((_, reject) => {
    timer = setTimeout(
      () =>
        reject(
          new Error(
            `${what}: not done after ${ms} ms\n${postgresLogTail()}\n--- guardian stderr (end) ---\n${server?.stderr().slice(-4_000) ?? ''}`,
          ),
        ),
      ms,
    );
  });
  try {
    return await Promise.race([work, overrun]);
  } finally {
    clearTimeout(timer);
  }
}

async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.once('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const { port } = srv.address() as { port: number };
      srv.close(() => resolve(port));
    });
  });
}

let dir: string;
let pgData: string;
let port: number;
let dbUrl: string;
const children: ChildProcessWithoutNullStreams[] = [];
const pgCtl = (...args: string[]) => pgTool('pg_ctl', ['-D', pgData, '-l', join(dir, 'postgres.log'), ...args]);
const startPostgres = () =>
  pgCtl('-w', '-t', '60', '-o', `-p ${port} -k ${dir} -c listen_addresses=127.0.0.1`, 'start');

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'acs-pg-restart-'));
  chmodSync(dir, 0o777); // the postgres user writes its data directory, socket and log here
  pgData = join(dir, 'pgdata');
  port = await freePort();
  await pgTool('initdb', ['-D', pgData, '-A', 'trust', '-U', 'postgres', '--no-sync', '-E', 'UTF8'], 120_000);
  await startPostgres();
  dbUrl = `postgres://postgres@127.0.0.1:${port}/postgres`;
  writeFileSync(
    join(dir, 'policy.wasm'),
    await buildDecisionModule({ constant: { decision: 'allow', reasoning: 'restart fixture' } }),
  );
}, 180_000);

afterAll(async () => {
  await killAll(children);
  if (pgData && existsSync(join(pgData, 'postmaster.pid')))
    await pgCtl('-m', 'immediate', 'stop').catch((e: unknown) => console.error(e));
  if (dir) rmSync(dir, { recursive: true, force: true });
}, 120_000);

/**
 * Drives 8 sessions until `outage` (which takes Postgres down and up again) returns, then a little longer.
 * Returns what the agents received and how each session's exchange ended.
 */
async function loadAcross(server: Serving, label: string, outage: () => Promise<void>) {
  const clients = Array.from({ length: 8 }, (_, i) => agentClient(() => server.url, `${label}-${i}`));
  await Promise.all(clients.map((c) => c.hello({ methods_implemented: METHODS })));
  const received: Received[] = [];
  let stop = false;
  const load = Promise.all(clients.map((c) => drive(c, received, () => stop)));
  const t0 = Date.now();
  while (received.length < 24 && Date.now() - t0 < 60_000) await new Promise((r) => setTimeout(r, 20));
  expect(
    received.length,
    `${label}: decisions before the outage\n${server.stderr().slice(-4_000)}`,
  ).toBeGreaterThanOrEqual(24);
  await phase(`${label}: the outage`, 150_000, outage(), server);
  await new Promise((r) => setTimeout(r, 300));
  stop = true;
  // Each request is bounded by the client's own 20 s timeout, so the sessions end well within this.
  const ends = await phase(`${label}: the agents' last requests`, 60_000, load, server);
  return { clients, received, ends };
}

/** What must hold after an outage: durability of every answer, whole steps only, and the sessions carry on. */
async function expectRecovered(
  store: DurableStore,
  clients: AcsClient[],
  received: Received[],
  ends: (StepOutcome | undefined)[],
) {
  // Requests during the outage were answered fail-closed: a signed DENY store_unavailable or an error applied as deny.
  for (const end of ends.filter((e): e is StepOutcome => e !== undefined)) {
    expect(end.decision).toBe('deny');
    if (end.failure) expect(end.failure.reason, JSON.stringify(end.failure)).toBe('error_response');
    else expect(end.result?.reason_codes, JSON.stringify(end.result)).toContain('store_unavailable');
  }
  for (const r of received) {
    const entries = await store.listContextEntries(r.sessionId, { limit: 10_000 });
    expect(entries.find((e) => e.content.entry_id === r.requestId)?.entryHash, `received ${r.requestId}`).toBe(
      r.chainHash,
    );
  }
  expect(await store.query('select count(*)::int as n from context_entries where result_jcs is null')).toEqual([
    { n: 0 },
  ]);
  // Every session carries on from the head its agent verified. The one exception is a commit in doubt (the
  // COMMIT reached the WAL but its acknowledgement died with the server): then the stored chain holds exactly one
  // more entry, linked to the agent's head, for the step the agent saw fail.
  let resumed = 0;
  for (const c of clients) {
    const head = await store.getChainHead(c.sessionId);
    if (head?.entryHash !== c.chainHash) {
      const last = (await store.listContextEntries(c.sessionId, { afterSeq: head!.seq - 1 }))[0];
      expect(last.previousHash).toBe(c.chainHash);
      expect(received.some((r) => r.requestId === last.content.entry_id)).toBe(false);
      continue;
    }
    const out = await c.step('steps/userMessage', MSG(1000));
    expect(out.failure, JSON.stringify(out.failure)).toBeUndefined();
    expect(out.result?.decision).toBe('allow');
    expect((await store.getChainHead(c.sessionId))?.entryHash).toBe(out.result?.chain_hash);
    resumed++;
  }
  // The group-commit batch in flight at a crash can hold a step of every session, so any number of them may be in
  // doubt (each checked above); the rest carry on.
  expect(resumed).toBeGreaterThan(0);
}

describe('guardian serve while its Postgres crashes and restarts', () => {
  it('a crash (immediate stop) and then a clean restart under load: nothing received is lost, the Guardian serves again by itself', async () => {
    const server = await startServe(dbUrl, dir, join(dir, 'policy.wasm'), children);
    const store = await openStore({ databaseUrl: dbUrl, skipMigrations: true });
    try {
      const crash = await loadAcross(server, 'crash', async () => {
        await pgCtl('-m', 'immediate', 'stop');
        await new Promise((r) => setTimeout(r, 500)); // requests arrive while the database is gone
        await startPostgres();
      });
      expect(server.child.exitCode).toBeNull();
      // The outage was felt: sessions whose step arrived while the database was gone stopped on a fail-closed answer.
      expect(crash.ends.filter((e) => e !== undefined).length).toBeGreaterThan(0);
      await phase(
        'crash: the checks after recovery',
        120_000,
        expectRecovered(store, crash.clients, crash.received, crash.ends),
        server,
      );

      const clean = await loadAcross(server, 'restart', async () => {
        await pgCtl(
          '-m',
          'fast',
          '-w',
          '-t',
          '60',
          'restart',
          '-o',
          `-p ${port} -k ${dir} -c listen_addresses=127.0.0.1`,
        );
      });
      expect(server.child.exitCode).toBeNull();
      await phase(
        'restart: the checks after recovery',
        120_000,
        expectRecovered(store, clean.clients, clean.received, clean.ends),
        server,
      );
    } finally {
      await store.close();
    }
    const verify = await phase('guardian audit verify --all', 60_000, auditVerifyAll(dbUrl, dir));
    expect(verify.out).toMatch(/\d+ chains, \d+ entries, 0 broken/);
    expect(verify.code).toBe(0);
    await phase('guardian serve stopping on SIGTERM', 30_000, stopServe(server, 'SIGTERM'), server);
  }, 420_000);
});
