// The embedded store after its PGlite worker dies (src/store/pglite/driver.ts): a new worker opens the same data
// dir (PGlite's start replays the WAL), calls fail at once meanwhile, and a transaction that was in flight is
// reported failed and never finished on the new worker. Under load through the real pipeline and HTTP: every
// answer is a signed decision (a DENY store_unavailable while the store is down, ACS §6.4 fail closed), every
// decision that carried a chain_hash is in the chain afterwards (ACS §8.2), the service resumes, and
// `audit verify --all` is clean.
//
// The worker is killed as any fatal error would kill it: a bounded worker heap and a result far past it.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import type { StepOutcome } from '../../src/client/index.ts';
import type { StoreDriver } from '../../src/store/driver.ts';
import { DrizzleGuardianStore } from '../../src/store/drizzle-store.ts';
import { openPgliteDriver, type PgliteWorkerEvent } from '../../src/store/pglite/driver.ts';
import { WorkerCrashedError } from '../../src/worker-thread/index.ts';
import { type Harness, startHarness } from '../acs/fixtures/harness.ts';
import { auditVerifyAll, METHODS, type Received, TOOL } from './fixtures/serve-process.ts';

/** Far past a 64 MB worker heap once PGlite's rows become strings on the worker: the thread dies. */
const HEAP_BOMB = "select repeat('x', 8000000) as big from generate_series(1, 40)";
const WORKER_HEAP_MB = 64;

const dirs: string[] = [];
const drivers: StoreDriver[] = [];
const harnesses: Harness[] = [];
afterEach(async () => {
  await Promise.all(harnesses.splice(0).map((h) => h.close().catch(() => {})));
  await Promise.all(drivers.splice(0).map((d) => d.close().catch(() => {})));
  await Promise.all(dirs.splice(0).map((d) => rm(d, { recursive: true, force: true })));
});

async function tempDir(): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'guardian-pglite-restart-'));
  dirs.push(dir);
  return dir;
}

async function until(what: string, done: () => boolean, timeoutMs = 60_000): Promise<void> {
  const t0 = Date.now();
  while (!done()) {
    if (Date.now() - t0 > timeoutMs) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

describe('PGlite worker restart', () => {
  it('a transaction in flight at the crash fails and is not finished on the new worker; calls fail meanwhile', async () => {
    const events: PgliteWorkerEvent[] = [];
    const driver = await openPgliteDriver({
      dataDir: join(await tempDir(), 'data'),
      maxWorkerHeapMb: WORKER_HEAP_MB,
      onWorkerEvent: (e) => events.push(e),
    });
    drivers.push(driver);
    await driver.query('create table restart_t (n integer not null)');
    await driver.transaction((query) =>
      query({ text: 'insert into restart_t values (0)', params: [] }, { last: true }),
    );

    let resume!: () => void;
    const resumed = new Promise<void>((r) => (resume = r));
    let bombed!: (err: unknown) => void;
    const crashedInside = new Promise<unknown>((r) => (bombed = r));
    const inFlight = driver.transaction(async (query) => {
      await query({ text: 'insert into restart_t values (1)', params: [] });
      // The worker dies inside this transaction (PGlite's one connection is its own until it ends).
      bombed(await query({ text: HEAP_BOMB, params: [] }).catch((e: unknown) => e));
      // Its work carries on: the last statement and COMMIT are sent once a new worker answers, and must not land.
      await resumed;
      return query({ text: 'insert into restart_t values (2)', params: [] }, { last: true });
    });
    expect(await crashedInside).toBeInstanceOf(WorkerCrashedError);
    await until('the crash report', () => events.some((e) => e.kind === 'crashed'));
    // Down: a call fails at once (fail closed) rather than waiting for the new worker.
    const refused = await driver.query('select 1').catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(WorkerCrashedError);
    expect((refused as Error).message).toMatch(/restarting/);

    await until('the restart', () => events.some((e) => e.kind === 'restarted'));
    resume();
    await expect(inFlight).rejects.toBeInstanceOf(WorkerCrashedError);
    // The committed row survived the crash (WAL replay); nothing of the in-flight transaction did.
    expect(await driver.query('select n from restart_t order by n')).toEqual([{ n: 0 }]);
    await driver.transaction((query) =>
      query({ text: 'insert into restart_t values (3)', params: [] }, { last: true }),
    );
    expect(await driver.query('select n from restart_t order by n')).toEqual([{ n: 0 }, { n: 3 }]);

    expect(events.map((e) => e.kind)).toEqual(['crashed', 'restarted']);
    const crashed = events[0] as Extract<PgliteWorkerEvent, { kind: 'crashed' }>;
    expect(crashed.error).toBeInstanceOf(WorkerCrashedError);
    expect(crashed.restartInMs).toBeGreaterThan(0);
    expect(crashed.message).toMatch(/fail closed/);
  }, 120_000);

  it('a worker that keeps crashing is restarted a bounded number of times, each after a longer pause, then left down', async () => {
    const events: PgliteWorkerEvent[] = [];
    const driver = await openPgliteDriver({
      dataDir: join(await tempDir(), 'data'),
      maxWorkerHeapMb: WORKER_HEAP_MB,
      onWorkerEvent: (e) => events.push(e),
      restarts: { max: 2, windowMs: 600_000, firstMs: 50 },
    });
    drivers.push(driver);
    for (let crash = 1; crash <= 3; crash++) {
      await expect(driver.query(HEAP_BOMB)).rejects.toBeInstanceOf(WorkerCrashedError);
      if (crash < 3) {
        await until(`restart ${crash}`, () => events.filter((e) => e.kind === 'restarted').length === crash);
        expect(await driver.query('select 1 as one')).toEqual([{ one: 1 }]);
      }
    }
    await until('the give-up', () => events.some((e) => e.kind === 'gave_up'));
    expect(events.map((e) => e.kind)).toEqual(['crashed', 'restarted', 'crashed', 'restarted', 'gave_up']);
    expect(
      events.flatMap((e) => (e.kind === 'crashed' ? [e.restartInMs] : [])),
      'the pause doubles',
    ).toEqual([50, 100]);
    const refused = await driver.query('select 1').catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(WorkerCrashedError);
    expect((refused as Error).message).toMatch(/stays down/);
  }, 120_000);

  it('under load: signed DENY store_unavailable while down, no chained decision lost, service resumes, audit verify clean', async () => {
    const dir = await tempDir();
    const events: PgliteWorkerEvent[] = [];
    // Where `audit verify` (auditVerifyAll) looks for the embedded store: <dir>/data.
    const driver = await openPgliteDriver({
      dataDir: join(dir, 'data'),
      maxWorkerHeapMb: WORKER_HEAP_MB,
      onWorkerEvent: (e) => events.push(e),
    });
    const store = new DrizzleGuardianStore(driver);
    await store.migrate();
    const h = await startHarness({ store });
    harnesses.push(h);

    const received: Received[] = [];
    const unchained: StepOutcome[] = [];
    let stop = false;
    // Eight agents; one whose step was not chained starts a new session (its head may not be the Guardian's).
    const agents = Array.from({ length: 8 }, async (_, slot) => {
      for (let generation = 0; !stop; generation++) {
        const client = h.client({ agentId: `restart-agent-${slot}-${generation}` });
        try {
          await client.hello({ methods_implemented: METHODS });
        } catch {
          // A handshake while the store is down gets an error answer (it records nothing to deny): try again.
          await new Promise((r) => setTimeout(r, 20));
          continue;
        }
        for (let i = 0; !stop; i++) {
          const out = await client.step('steps/toolCallRequest', TOOL(i));
          if (out.failure === undefined && out.result?.chain_hash) {
            received.push({
              sessionId: client.sessionId,
              requestId: out.result.request_id,
              chainHash: out.result.chain_hash,
              decision: out.result.decision,
            });
            continue;
          }
          unchained.push(out);
          break;
        }
      }
    });

    await until('load under way', () => received.length >= 40);
    await expect(store.query(HEAP_BOMB)).rejects.toBeInstanceOf(WorkerCrashedError);
    const atCrash = received.length;
    await until('the restart', () => events.some((e) => e.kind === 'restarted'));
    await until('decisions after the restart', () => received.length >= atCrash + 40);
    stop = true;
    await Promise.all(agents);

    expect(events.map((e) => e.kind)).toEqual(['crashed', 'restarted']);
    // While the store was down every step was answered, signed (the client verified it), and denied fail-closed.
    expect(unchained.length).toBeGreaterThan(0);
    for (const out of unchained) {
      expect(out.failure, JSON.stringify(out.failure)).toBeUndefined();
      expect(out.result?.decision).toBe('deny');
      expect(out.result?.reason_codes).toEqual(['store_unavailable']);
    }

    // Every decision that carried a chain_hash is in the chain with that hash, seq dense and linked.
    for (const sessionId of new Set(received.map((r) => r.sessionId))) {
      const entries = await store.listContextEntries(sessionId, { limit: 10_000 });
      entries.forEach((e, i) => {
        expect(e.seq).toBe(entries[0].seq + i);
        if (i > 0) expect(e.previousHash).toBe(entries[i - 1].entryHash);
      });
      const hashes = new Map(entries.map((e) => [e.content.entry_id, e.entryHash]));
      const missing = received.filter((r) => r.sessionId === sessionId && hashes.get(r.requestId) !== r.chainHash);
      expect(missing).toEqual([]);
    }
    // A step is committed whole (entry with its delivered decision) or not at all.
    expect(await store.query('select count(*)::int as n from context_entries where result_jcs is null')).toEqual([
      { n: 0 },
    ]);

    await h.close();
    harnesses.splice(0);
    const verify = await auditVerifyAll('', dir);
    expect(verify.out).toMatch(/\d+ chains, \d+ entries, 0 broken/);
    expect(verify.code).toBe(0);
  }, 180_000);
});
