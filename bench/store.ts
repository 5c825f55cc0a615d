// Durable chain appends per second, 64 sessions × 16 concurrent clients, on both drivers, with group commit
// and without it (one transaction per append); then `audit verify` speed over what was written.
// Run: `npm run bench store` (or `node --import tsx bench/store.ts`). BENCH_SECONDS (default 3) per run;
// TEST_DATABASE_URL / DATABASE_URL for Postgres (default postgres://postgres@127.0.0.1:5432/test).
// "cpu ms/op" is this process's CPU time per operation (PGlite's database work included, Postgres' not): it
// stays meaningful when the machine is shared and wall-clock rates are not.
import { randomUUID } from 'node:crypto';
import { verifyAllChains } from '../src/audit/index.ts';
import { computeRequestHash } from '../src/chain/index.ts';
import { openStore, type ChainHead, type DurableStore, type NewContextEntry } from '../src/store/index.ts';

const seconds = Number(process.env.BENCH_SECONDS ?? 3);
const databaseUrl = process.env.TEST_DATABASE_URL ?? process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test';
const SESSIONS = 64;
const CLIENTS = 16;

function entryFor(sessionId: string, n: number): NewContextEntry {
  const requestId = randomUUID();
  const params = {
    acs_version: '0.1.0', request_id: requestId, timestamp: new Date().toISOString(),
    metadata: { agent_id: 'bench-agent', session_id: sessionId, turn_id: 't1' },
    payload: { tool: { name: 'Bash' }, arguments: { command: { value: `echo ${n}` } }, note: 'x'.repeat(500) },
    signature: { algorithm: 'HMAC-SHA256', key_id: 'default', value: 'A'.repeat(44) },
  };
  return { content: { entry_id: requestId, step_id: requestId, step_type: 'steps/toolCallRequest', request_hash: computeRequestHash(params), timestamp: params.timestamp }, params };
}

function percentile(sorted: number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * p))] ?? NaN;
}

/** The session state the pipeline writes with each step (≈ the size of a few turns of policy state). */
const STATE = { counters: { steps_total: 12, tool_calls_total: 7 }, recent: Array.from({ length: 8 }, (_, i) => ({ step: i, method: 'steps/toolCallRequest', decision: 'allow' })), note: 'x'.repeat(1500) };
const heads = new Map<string, ChainHead | null>();

/** What the pipeline writes per step since commitStep: keys + entry + delivered decision + session state, one transaction. */
async function commitWholeStep(store: DurableStore, sessionId: string, n: number): Promise<void> {
  const entry = entryFor(sessionId, n);
  for (;;) {
    const outcome = await store.commitStep(sessionId, {
      expectedHead: heads.get(sessionId) ?? null,
      replayKeys: [{ kind: 'request_id', value: entry.content.entry_id }, { kind: 'nonce', value: randomUUID() }],
      replayKeysExpireAt: new Date(Date.now() + 600_000),
      entry,
      decision: { result: { type: 'final', decision: 'allow', request_id: entry.content.entry_id }, bundleRevision: 'bench', evaluationDurationMs: 0.05 },
      session: { state: STATE },
    });
    if (outcome.status === 'committed') {
      heads.set(sessionId, { seq: outcome.appended.seq, entryHash: outcome.appended.entryHash });
      return;
    }
    // Two clients on one session: the later one is re-placed at the new head (the pipeline re-evaluates it).
    if (outcome.status === 'stale_head') heads.set(sessionId, outcome.head);
    else throw new Error(`unexpected ${outcome.status}`);
  }
}

async function hammer(store: DurableStore, sessions: string[], withDecision: boolean | 'step'): Promise<{ perSec: number; n: number; p50: number; p99: number; cpuUs: number }> {
  const latencies: number[] = [];
  const cpu = process.cpuUsage();
  const deadline = performance.now() + seconds * 1000;
  let n = 0;
  await Promise.all(Array.from({ length: CLIENTS }, async (_, client) => {
    let i = client;
    while (performance.now() < deadline) {
      const sessionId = sessions[(i += 7) % sessions.length];
      const t = performance.now();
      if (withDecision === 'step') {
        await commitWholeStep(store, sessionId, n++);
        latencies.push(performance.now() - t);
        continue;
      }
      const a = await store.appendContextEntry(sessionId, entryFor(sessionId, n++));
      // The signed decision stored against the entry (what the pipeline wrote per step before commitStep).
      if (withDecision) await store.recordDecision(sessionId, a.seq, { result: { type: 'final', decision: 'allow', chain_hash: a.entryHash }, bundleRevision: 'bench', evaluationDurationMs: 0.05 });
      latencies.push(performance.now() - t);
    }
  }));
  const start = deadline - seconds * 1000;
  latencies.sort((a, b) => a - b);
  const used = process.cpuUsage(cpu);
  return { cpuUs: (used.user + used.system) / latencies.length, perSec: latencies.length / ((performance.now() - start) / 1000), n: latencies.length, p50: percentile(latencies, 0.5), p99: percentile(latencies, 0.99) };
}

async function run(label: string, open: (maxBatch: number) => Promise<DurableStore>): Promise<void> {
  const modes = [
    ['group commit: append', 256, false],
    ['group commit: append+decision', 256, true],
    ['group commit: whole step', 256, 'step'],
    ['1 tx per append: append', 1, false],
  ] as const;
  for (const [mode, maxBatch, withDecision] of modes) {
    const store = await open(maxBatch);
    try {
      const sessions = Array.from({ length: SESSIONS }, () => randomUUID());
      // Warm-up: create every chain head and the statement caches.
      if (withDecision === 'step') {
        await Promise.all(sessions.map(async (s) => {
          await store.createSession({ id: s, tenantId: null, agentId: 'bench-agent', keyId: 'default', hello: {}, intent: null, state: null, parentSessionId: null });
          await commitWholeStep(store, s, -1);
        }));
      } else await Promise.all(sessions.map((s) => store.appendContextEntry(s, entryFor(s, -1))));
      const r = await hammer(store, sessions, withDecision);
      const unit = withDecision ? 'steps/s  ' : 'appends/s';
      // 'whole step' = replay keys + entry + decision + session state in one transaction (GuardianStore.commitStep).
      console.log(`${label.padEnd(9)} ${mode.padEnd(30)} ${r.perSec.toFixed(0).padStart(6)} ${unit}  p50 ${r.p50.toFixed(2)} ms  p99 ${r.p99.toFixed(2)} ms  cpu ${(r.cpuUs / 1000).toFixed(2)} ms/op in this process  (${r.n} in ${seconds}s, ${SESSIONS} sessions × ${CLIENTS} clients)`);
      if (mode === 'group commit: append') {
        const t = performance.now();
        const summary = await verifyAllChains(store);
        const s = (performance.now() - t) / 1000;
        if (summary.broken) throw new Error(`${summary.broken} chains broken after the benchmark`);
        console.log(`${label.padEnd(9)} ${'audit verify'.padEnd(30)} ${(summary.entries / s).toFixed(0).padStart(6)} entries/s  (${summary.entries} entries, ${summary.chains} chains)`);
      }
    } finally {
      await store.close();
    }
  }
}

const schema = `bench_store_${process.pid}`;
await run('pglite', (maxBatch) => openStore({ inMemory: true, maxBatch }));
try {
  const probe = await openStore({ databaseUrl, schema, poolSize: 2 });
  const settings = await probe.query("select current_setting('fsync') as fsync, current_setting('synchronous_commit') as sync, version() as v");
  console.log(`postgres: fsync=${settings[0].fsync} synchronous_commit=${settings[0].sync} (${String(settings[0].v).split(' on ')[0]})`);
  await probe.close();
  await run('postgres', (maxBatch) => openStore({ databaseUrl, schema, maxBatch }));
} finally {
  const cleanup = await openStore({ databaseUrl, poolSize: 1, skipMigrations: true });
  await cleanup.query(`drop schema if exists "${schema}" cascade`);
  await cleanup.close();
}
