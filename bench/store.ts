// Durable chain appends per second, 64 sessions × 16 concurrent clients, on both drivers, with group commit
// and without it (one transaction per append); then `audit verify` speed over what was written.
// Run: `npm run bench store` (or `node --import tsx bench/store.ts`). BENCH_SECONDS (default 3) per run;
// TEST_DATABASE_URL / DATABASE_URL for Postgres (default postgres://postgres@127.0.0.1:5432/test);
// BENCH_DRIVERS=pglite,postgres and BENCH_MODES=append,decision,step,single pick what runs (default: all).
// Every Postgres mode runs in a schema of its own, created empty and dropped afterwards, so no run inherits
// another's rows, dead tuples or bloat.
// "cpu ms/op" is this process's CPU time per operation (PGlite's database work included, Postgres' not): it
// stays meaningful when the machine is shared and wall-clock rates are not. "pg cpu" is the CPU time of this
// run's own Postgres backends (from /proc, so only with Postgres on this host; WAL writer and checkpointer
// are not included).
import { randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { loadavg } from 'node:os';
import { verifyAllChains } from '../src/audit/index.ts';
import { canonicalJson, sha256Hex } from '../src/chain/index.ts';
import type { Json } from '../src/json.ts';
import { openStore, type ChainHead, type DurableStore, type NewContextEntry } from '../src/store/index.ts';

const seconds = Number(process.env.BENCH_SECONDS ?? 3);
const databaseUrl =
  process.env.TEST_DATABASE_URL ?? process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test';
const SESSIONS = 64;
const CLIENTS = Number(process.env.BENCH_CLIENTS ?? 16);
const drivers = (process.env.BENCH_DRIVERS ?? 'pglite,postgres').split(',');
const wantedModes = (process.env.BENCH_MODES ?? 'append,decision,step,single').split(',');
const APPLICATION_NAME = `bench-store-${process.pid}`;
const TICKS_PER_SECOND = 100; // USER_HZ on Linux

/** CPU seconds used so far by each of this run's Postgres backends, by pid (empty when /proc can't tell). */
/** WAL bytes written so far by the whole cluster (pg_stat_wal; other databases' writes count too): null on PGlite. */
async function walBytes(store: DurableStore): Promise<number | null> {
  if (store.driver !== 'postgres') return null;
  const rows = await store.query('select wal_bytes::text as b from pg_stat_wal');
  return Number(rows[0].b);
}

async function backendCpu(store: DurableStore): Promise<Map<number, number>> {
  const cpu = new Map<number, number>();
  if (store.driver !== 'postgres') return cpu;
  const rows = await store.query('select pid from pg_stat_activity where application_name = $1', [APPLICATION_NAME]);
  for (const { pid } of rows) {
    try {
      // Fields after the ")" of comm: state is 3rd, utime 14th and stime 15th of the whole line.
      const fields = readFileSync(`/proc/${Number(pid)}/stat`, 'utf8')
        .split(') ')[1]
        .split(' ');
      cpu.set(Number(pid), (Number(fields[11]) + Number(fields[12])) / TICKS_PER_SECOND);
    } catch {
      // Postgres on another host (or the backend just exited): no figure.
    }
  }
  return cpu;
}

function entryFor(sessionId: string, n: number): NewContextEntry {
  const requestId = randomUUID();
  const params = {
    acs_version: '0.1.0',
    request_id: requestId,
    timestamp: new Date().toISOString(),
    metadata: { agent_id: 'bench-agent', session_id: sessionId, turn_id: 't1' },
    payload: { tool: { name: 'Bash' }, arguments: { command: { value: `echo ${n}` } }, note: 'x'.repeat(500) },
    signature: { algorithm: 'HMAC-SHA256', key_id: 'default', value: 'A'.repeat(44) },
  };
  // As the pipeline hands it over (src/acs/pipeline/chain.ts): the JCS text request_hash was computed from comes along.
  const paramsJcs = canonicalJson(params);
  return {
    content: {
      entry_id: requestId,
      step_id: requestId,
      step_type: 'steps/toolCallRequest',
      request_hash: sha256Hex(paramsJcs),
      timestamp: params.timestamp,
    },
    params,
    paramsJcs,
  };
}

function percentile(sorted: number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * p))] ?? NaN;
}

/** The session state the pipeline writes with each step (≈ the size of a few turns of policy state). */
/**
 * The session state a step writes, shaped like the policy state of bench/server.ts's 100–200-step sessions (8–10 KB:
 * a 200-pair tool-call queue, 20 recent steps, counters) and edited copy-on-write as the policy code does.
 * BENCH_STATE=whole hands the store no stateBase (the whole state is written every step, as before state changes
 * were kept with the entries); BENCH_STATE=none writes no state.
 */
const STATE_MODE = process.env.BENCH_STATE ?? 'delta';
type BenchState = {
  counters: { steps_total: number; tool_calls_total: number };
  recent_tool_calls: [string, number][];
  recent_steps: Json[];
  note: string;
};
const states = new Map<string, BenchState>();
function nextState(prior: BenchState | undefined, n: number): BenchState {
  const base = prior ?? {
    counters: { steps_total: 0, tool_calls_total: 0 },
    recent_tool_calls: Array.from({ length: 200 }, (_, i): [string, number] => ['shell', 1_800_000_000_000 + i]),
    recent_steps: Array.from({ length: 20 }, (_, i) => ({
      step_id: randomUUID(),
      method: 'steps/toolCallRequest',
      tool: 'shell',
      decision: 'allow',
      at: i,
    })),
    note: 'x'.repeat(1000),
  };
  return {
    ...base,
    counters: { steps_total: base.counters.steps_total + 1, tool_calls_total: base.counters.tool_calls_total + 1 },
    recent_tool_calls: [...base.recent_tool_calls.slice(1), ['shell', 1_800_000_000_000 + n]],
    recent_steps: [
      ...base.recent_steps.slice(1),
      { step_id: randomUUID(), method: 'steps/toolCallRequest', tool: 'shell', decision: 'allow', at: n },
    ],
  };
}
const heads = new Map<string, ChainHead | null>();

/** What the pipeline writes per step since commitStep: keys + entry + delivered decision + session state, one transaction. */
async function commitWholeStep(store: DurableStore, sessionId: string, n: number): Promise<void> {
  const entry = entryFor(sessionId, n);
  for (;;) {
    // Placed at the head this process last wrote, with the state as of that head.
    const prior = states.get(sessionId);
    const state = nextState(prior, n);
    const outcome = await store.commitStep(sessionId, {
      expectedHead: heads.get(sessionId) ?? null,
      replayKeys: [
        { kind: 'request_id', value: entry.content.entry_id },
        { kind: 'nonce', value: randomUUID() },
      ],
      replayKeysExpireAt: new Date(Date.now() + 600_000),
      entry,
      decision: {
        result: { type: 'final', decision: 'allow', request_id: entry.content.entry_id },
        bundleRevision: 'bench',
        evaluationDurationMs: 0.05,
      },
      session:
        STATE_MODE === 'none'
          ? {}
          : STATE_MODE === 'whole'
            ? { state: state as unknown as Json }
            : { state: state as unknown as Json, stateBase: (prior ?? null) as unknown as Json },
    });
    if (outcome.status === 'committed') {
      heads.set(sessionId, { seq: outcome.appended.seq, entryHash: outcome.appended.entryHash });
      states.set(sessionId, state);
      return;
    }
    // Two clients on one session: the later one is re-placed at the new head (the pipeline re-evaluates it).
    if (outcome.status === 'stale_head') heads.set(sessionId, outcome.head);
    else throw new Error(`unexpected ${outcome.status}`);
  }
}

async function hammer(
  store: DurableStore,
  sessions: string[],
  withDecision: boolean | 'step',
): Promise<{
  perSec: number;
  n: number;
  p50: number;
  p99: number;
  cpuUs: number;
  pgCpuUs: number | null;
  walBytes: number | null;
}> {
  const latencies: number[] = [];
  const pgBefore = await backendCpu(store);
  const walBefore = await walBytes(store);
  const cpu = process.cpuUsage();
  const deadline = performance.now() + seconds * 1000;
  let n = 0;
  await Promise.all(
    Array.from({ length: CLIENTS }, async (_, client) => {
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
        if (withDecision)
          await store.recordDecision(sessionId, a.seq, {
            result: { type: 'final', decision: 'allow', chain_hash: a.entryHash },
            bundleRevision: 'bench',
            evaluationDurationMs: 0.05,
          });
        latencies.push(performance.now() - t);
      }
    }),
  );
  const start = deadline - seconds * 1000;
  latencies.sort((a, b) => a - b);
  const used = process.cpuUsage(cpu);
  const pgAfter = await backendCpu(store);
  const walAfter = await walBytes(store);
  const pgSeconds = [...pgAfter].reduce((sum, [pid, s]) => sum + s - (pgBefore.get(pid) ?? 0), 0);
  return {
    cpuUs: (used.user + used.system) / latencies.length,
    pgCpuUs: pgAfter.size ? (pgSeconds * 1e6) / latencies.length : null,
    walBytes: walAfter === null || walBefore === null ? null : (walAfter - walBefore) / latencies.length,
    perSec: latencies.length / ((performance.now() - start) / 1000),
    n: latencies.length,
    p50: percentile(latencies, 0.5),
    p99: percentile(latencies, 0.99),
  };
}

async function run(
  label: string,
  open: (maxBatch: number) => Promise<{ store: DurableStore; dispose(): Promise<void> }>,
): Promise<void> {
  const modes = (
    [
      ['append', 'group commit: append', 256, false],
      ['decision', 'group commit: append+decision', 256, true],
      ['step', 'group commit: whole step', 256, 'step'],
      ['single', '1 tx per append: append', 1, false],
    ] as const
  ).filter(([key]) => wantedModes.includes(key));
  for (const [, mode, maxBatch, withDecision] of modes) {
    const { store, dispose } = await open(maxBatch);
    try {
      const sessions = Array.from({ length: SESSIONS }, () => randomUUID());
      // Warm-up: create every chain head and the statement caches.
      if (withDecision === 'step') {
        await Promise.all(
          sessions.map(async (s) => {
            await store.createSession({
              id: s,
              tenantId: null,
              agentId: 'bench-agent',
              keyId: 'default',
              hello: {},
              intent: null,
              state: null,
              parentSessionId: null,
            });
            await commitWholeStep(store, s, -1);
          }),
        );
      } else await Promise.all(sessions.map((s) => store.appendContextEntry(s, entryFor(s, -1))));
      const r = await hammer(store, sessions, withDecision);
      const unit = withDecision ? 'steps/s  ' : 'appends/s';
      // 'whole step' = replay keys + entry + decision + session state in one transaction (GuardianStore.commitStep).
      const pg =
        (r.pgCpuUs === null ? '' : `  pg cpu ${(r.pgCpuUs / 1000).toFixed(3)} ms/op`) +
        (r.walBytes === null ? '' : `  WAL ${(r.walBytes / 1024).toFixed(1)} KiB/op`);
      const load = loadavg()
        .map((l) => l.toFixed(2))
        .join(' ');
      console.log(
        `${label.padEnd(9)} ${mode.padEnd(30)} ${r.perSec.toFixed(0).padStart(6)} ${unit}  p50 ${r.p50.toFixed(2)} ms  p99 ${r.p99.toFixed(2)} ms  cpu ${(r.cpuUs / 1000).toFixed(2)} ms/op in this process${pg}  (${r.n} in ${seconds}s, ${SESSIONS} sessions × ${CLIENTS} clients, load ${load})`,
      );
      if (mode === 'group commit: append') {
        const t = performance.now();
        const summary = await verifyAllChains(store);
        const s = (performance.now() - t) / 1000;
        if (summary.broken) throw new Error(`${summary.broken} chains broken after the benchmark`);
        console.log(
          `${label.padEnd(9)} ${'audit verify'.padEnd(30)} ${(summary.entries / s).toFixed(0).padStart(6)} entries/s  (${summary.entries} entries, ${summary.chains} chains)`,
        );
      }
    } finally {
      await store.close();
      await dispose();
    }
  }
}

if (drivers.includes('pglite')) {
  await run('pglite', async (maxBatch) => ({
    store: await openStore({ inMemory: true, maxBatch }),
    dispose: async () => {},
  }));
}
if (drivers.includes('postgres')) {
  const probe = await openStore({ databaseUrl, poolSize: 1, skipMigrations: true });
  try {
    const settings = await probe.query(
      "select current_setting('fsync') as fsync, current_setting('synchronous_commit') as sync, version() as v",
    );
    console.log(
      `postgres: fsync=${settings[0].fsync} synchronous_commit=${settings[0].sync} (${String(settings[0].v).split(' on ')[0]})`,
    );
    let runs = 0;
    await run('postgres', async (maxBatch) => {
      // A fresh, empty schema per mode: the figures must not depend on what earlier runs left behind.
      const schema = `bench_store_${process.pid}_${runs++}`;
      const dispose = () => probe.query(`drop schema if exists "${schema}" cascade`).then(() => {});
      try {
        return {
          store: await openStore({ databaseUrl, schema, maxBatch, applicationName: APPLICATION_NAME }),
          dispose,
        };
      } catch (err) {
        await dispose();
        throw err;
      }
    });
  } finally {
    await probe.close();
  }
}
