// bench/soak.ts — the Guardian under a long run as agents come and go (issue 26 item 6), on Postgres or on the
// embedded store (PGlite on disk): 16 clients drive 64 live sessions with signed steps/toolCallRequest (fresh
// request_id and nonce each) over keep-alive HTTP, and 64 new sessions a minute replace old ones. The Guardian runs
// in its own process (--expose-gc, bench/fixtures/guardian-process.ts); this process is the load generator. Every
// minute it prints decisions/s, p99, the Guardian's CPU per decision, its RSS, and its heap after a full collection
// (live, and committed by V8); on Postgres also the hot tables' dead rows and size.
//
// Warm-up lasts until the store reaches its steady size: replay keys are kept two skew windows (10 min with the
// default 5-min window, ACS §10.3) and only then start to expire, so the replay-key table grows for the first 10
// minutes whatever the Guardian does. The default warm-up is 11 minutes of a 30-minute run. After it, RSS, heap and
// CPU per decision PASS when the mean of the last third of the measured minutes is at most 10 % above the mean of
// the first third (a leak or a bloating table shows as such a rise; V8 sizing its heap up and down from one
// collection to the next does not), and no answer failed. Each minute's spread is printed too. Decisions/s is
// printed but not judged: on a shared machine the wall-clock rate follows the other processes.
//   npm run bench soak [-- --minutes N] [--warmup N] [--store embedded]   (default 30 min, 11 warm-up, Postgres; or
//   BENCH_SOAK_MINUTES, BENCH_SOAK_WARMUP, BENCH_SOAK_STORE); BENCH_DATABASE_URL (default local test db)
import { fork } from 'node:child_process';
import { performance } from 'node:perf_hooks';
import { AcsClient, type AcsTransport } from '../src/client/index.ts';
import type { ResponseEnvelope } from '../src/acs/types.ts';
import { RawConnection } from './fixtures/acs-load.ts';
import type { GuardianProcessMessage, GuardianStats, TableActivity } from './fixtures/guardian-process.ts';
import { load } from './fixtures/figures.ts';

const args = process.argv.slice(2);
if (args.includes('--help')) {
  console.log(
    'usage: npm run bench soak [-- --minutes N] [--warmup N] [--store postgres|embedded]   (env: BENCH_SOAK_MINUTES, BENCH_SOAK_WARMUP, BENCH_SOAK_STORE, BENCH_DATABASE_URL)',
  );
  process.exit(0);
}
const option = (name: string): string | undefined => {
  const at = args.indexOf(name);
  return at >= 0 ? args[at + 1] : undefined;
};
const MINUTES = Number(option('--minutes') ?? process.env.BENCH_SOAK_MINUTES ?? 30);
const WARMUP = Number(option('--warmup') ?? process.env.BENCH_SOAK_WARMUP ?? 11);
if (!Number.isInteger(WARMUP) || WARMUP < 1) {
  console.error('soak: --warmup must be an integer ≥ 1 (minutes)');
  process.exit(2);
}
if (!Number.isInteger(MINUTES) || MINUTES < WARMUP + 3) {
  console.error(
    `soak: --minutes must be an integer ≥ ${WARMUP + 3} (${WARMUP} warm-up minutes, then at least 3 measured ones; --warmup sets the warm-up)`,
  );
  process.exit(2);
}
const STORE = option('--store') ?? process.env.BENCH_SOAK_STORE ?? 'postgres';
if (STORE !== 'postgres' && STORE !== 'embedded') {
  console.error('soak: --store is postgres or embedded');
  process.exit(2);
}
const CLIENTS = 16;
const LIVE = 64;
const NEW_PER_MINUTE = 64;
const DB_URL = process.env.BENCH_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test';
const ikm = new Uint8Array(32).fill(7);

const child = fork(new URL('./fixtures/guardian-process.ts', import.meta.url).pathname, [], {
  execArgv: ['--expose-gc', '--import', 'tsx'],
  env: {
    ...process.env,
    BENCH_STORE: STORE,
    BENCH_DATABASE_URL: DB_URL,
    BENCH_IKM_BASE64: Buffer.from(ikm).toString('base64'),
  },
  stdio: 'inherit',
});
child.once('exit', (code) => {
  if (!stopping) {
    console.error(`soak: the Guardian process exited with ${code}`);
    process.exit(1);
  }
});
let stopping = false;
const next = (pick: (m: GuardianProcessMessage) => boolean): Promise<GuardianProcessMessage> =>
  new Promise((resolve) => {
    const on = (m: GuardianProcessMessage): void => {
      if ('failed' in m) throw new Error(`Guardian process: ${m.failed}`);
      if (pick(m)) {
        child.off('message', on);
        resolve(m);
      }
    };
    child.on('message', on);
  });
const url = ((await next((m) => 'listening' in m)) as { listening: string }).listening;
const stats = async (): Promise<GuardianStats> => {
  const reply = next((m) => 'stats' in m);
  child.send('stats');
  return ((await reply) as { stats: GuardianStats }).stats;
};

// Session set-up over node's fetch; the steps over one raw keep-alive connection per client.
const setupTransport: AcsTransport = async (message) =>
  (await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: message })).text();
const tool = { tool: { name: 'shell' }, arguments: { command: { value: 'ls -la /tmp' } } };
async function openSession(): Promise<AcsClient> {
  const k = new AcsClient({ transport: setupTransport, ikm, agentId: 'soak', sendChainHint: false });
  await k.hello({ methods_implemented: ['steps/sessionStart', 'steps/toolCallRequest'] });
  const start = await k.step('steps/sessionStart', {});
  if (start.failure) throw new Error(`sessionStart failed: ${start.failure.detail}`);
  return k;
}
const live: AcsClient[] = [];
for (let i = 0; i < LIVE; i++) live.push(await openSession());

// The CPU baseline: the Guardian's time up to the start of the run (start-up, session set-up).
let lastStats = await stats();
const started = performance.now();
const end = started + MINUTES * 60_000;
let latencies: number[] = [];
let failed = 0;
let replaced = 0;
// A new session every 60/64 s takes the place of the oldest one (its slot keeps its client, so a session is
// never driven by two clients at once).
const churn = setInterval(() => {
  const slot = replaced++ % LIVE;
  openSession().then(
    (k) => {
      live[slot] = k;
    },
    (err: unknown) => {
      failed++;
      console.error(`soak: opening a session failed: ${String(err)}`);
    },
  );
}, 60_000 / NEW_PER_MINUTE);
const connections = Array.from({ length: CLIENTS }, () => new RawConnection(new URL(url)));
const workers = connections.map(async (connection, w) => {
  for (let n = 0; performance.now() < end; n++) {
    const slots = live.map((_, i) => i).filter((i) => i % CLIENTS === w);
    const k = live[slots[n % slots.length]];
    const request = await k.buildRequest('steps/toolCallRequest', tool);
    const t = performance.now();
    const answer = JSON.parse(await connection.post(JSON.stringify(request))) as ResponseEnvelope;
    const r = (answer as { result?: { type?: string; request_id?: string; chain_hash?: unknown } }).result;
    if (r?.type !== 'final' || r.request_id !== request.params.request_id || typeof r.chain_hash !== 'string') {
      failed++;
      if (failed < 5) console.error(`soak: not a signed final decision: ${JSON.stringify(answer).slice(0, 300)}`);
    } else latencies.push(performance.now() - t);
  }
});

interface Minute {
  minute: number;
  rate: number;
  p99: number;
  cpuMsPerDecision: number;
  mainMsPerDecision: number;
  rssMb: number;
  heapMb: number;
  heapCommittedMb: number;
}
const rows: Minute[] = [];
/** The tables every step writes (chain_heads on every one; sessions every stateCheckpointEvery steps). */
const HOT_TABLES = ['chain_heads', 'context_entries', 'replay_keys', 'sessions'];
/** chain_heads (updated by every step) and replay_keys (two rows inserted by every step, kept 10 minutes). */
const storeColumns = (tables: TableActivity[] | undefined): string => {
  const heads = tables?.find((x) => x.table === 'chain_heads');
  const keys = tables?.find((x) => x.table === 'replay_keys');
  if (!heads || !keys) return '';
  return `${`${heads.dead}/${heads.live} dead, ${heads.sizeKb.toFixed(0)} kB`.padEnd(24)} ${`${keys.live} rows, ${(keys.sizeKb / 1024).toFixed(0)} MB`.padEnd(20)}`;
};
console.log(
  `soak on ${STORE === 'embedded' ? 'the embedded store (PGlite on disk)' : 'Postgres'}: ${MINUTES} min, ${CLIENTS} clients, ${LIVE} live sessions, ${NEW_PER_MINUTE} new a minute; load ${load()}`,
);
if (lastStats.vacuumed)
  console.log(
    "this server's autovacuum is off: a stand-in vacuums and analyzes the soak's tables at the daemon's default thresholds and throttle, as a deployment's autovacuum would",
  );
console.log(
  `minute  decisions/s  p99 ms  CPU ms/decision (main)  RSS MB  heap MB live/committed${STORE === 'postgres' ? `  ${'chain_heads'.padEnd(24)} ${'replay_keys'.padEnd(20)}` : ''}  load`,
);
for (let minute = 1; minute <= MINUTES; minute++) {
  await new Promise((resolve) => setTimeout(resolve, Math.max(0, started + minute * 60_000 - performance.now())));
  const window = latencies;
  latencies = [];
  const sorted = window.sort((a, b) => a - b);
  const p99 = sorted[Math.min(sorted.length - 1, Math.floor(0.99 * sorted.length))] ?? 0;
  const mem = await stats();
  const decisions = Math.max(1, window.length);
  const row: Minute = {
    minute,
    rate: window.length / 60,
    p99,
    // The previous reading's full collection is not this minute's work.
    cpuMsPerDecision: (mem.cpuMs - lastStats.cpuMs - lastStats.gcCpuMs) / decisions,
    mainMsPerDecision: (mem.mainThreadCpuMs - lastStats.mainThreadCpuMs) / decisions,
    rssMb: mem.rssMb,
    heapMb: mem.heapMb,
    heapCommittedMb: mem.heapCommittedMb,
  };
  lastStats = mem;
  rows.push(row);
  console.log(
    `${String(minute).padStart(6)}  ${row.rate.toFixed(0).padStart(11)}  ${p99.toFixed(1).padStart(6)}  ${row.cpuMsPerDecision.toFixed(3).padStart(15)} (${row.mainMsPerDecision.toFixed(3)})  ${row.rssMb.toFixed(0).padStart(6)}  ${`${row.heapMb.toFixed(0)}/${row.heapCommittedMb.toFixed(0)}`.padStart(22)}  ${storeColumns(mem.tables)}${minute <= WARMUP ? ' (warm-up)' : ''}  ${load()}`,
  );
}
clearInterval(churn);
await Promise.all(workers);
for (const c of connections) c.close();
if (lastStats.tables) {
  if (lastStats.vacuumed) console.log(`autovacuum stand-in: ${lastStats.vacuums ?? 0} vacuums and analyzes`);
  console.log('hot tables at the end: live rows, dead rows, updates (HOT), autovacuums/autoanalyzes, size');
  for (const t of lastStats.tables.filter((x) => HOT_TABLES.includes(x.table)))
    console.log(
      `  ${t.table.padEnd(16)} ${String(t.live).padStart(9)} ${String(t.dead).padStart(8)} ${String(t.updates).padStart(9)} (${t.hotUpdates}) ${t.autovacuums}/${t.autoanalyzes} ${(t.sizeKb / 1024).toFixed(1)} MB`,
    );
}
stopping = true;
const stopped = next((m) => 'stopped' in m);
child.send('stop');
await stopped;

const measured = rows.slice(WARMUP);
// Judged on growth from the first third of the measured minutes to the last (what a leak or a bloating table shows
// as); each minute's spread around the first third's mean is printed beside it.
const third = Math.max(1, Math.floor(measured.length / 3));
const mean = (xs: number[]): number => xs.reduce((a, b) => a + b, 0) / xs.length;
const within = (values: number[]): { growth: number; spread: number; ok: boolean } => {
  const base = mean(values.slice(0, third));
  const growth = (mean(values.slice(-third)) - base) / base;
  const spread = Math.max(...values.map((v) => Math.abs(v - base) / base));
  return { growth, spread, ok: growth <= 0.1 };
};
const percent = (x: number): string => `${x >= 0 ? '+' : ''}${(100 * x).toFixed(1)}%`;
const verdict = (ok: boolean): string => (ok ? 'PASS' : 'FAIL');
const judged = (w: { growth: number; spread: number; ok: boolean }): string =>
  `${percent(w.growth)} (minutes within ±${(100 * w.spread).toFixed(1)}%) ${verdict(w.ok)}`;
const rss = within(measured.map((r) => r.rssMb));
const heap = within(measured.map((r) => r.heapMb));
const cpu = within(measured.map((r) => r.cpuMsPerDecision));
const rate = within(measured.map((r) => r.rate));
const p99s = measured.map((r) => r.p99);
console.log(
  `after ${WARMUP} warm-up minute${WARMUP === 1 ? '' : 's'}, minutes ${WARMUP + measured.length - third + 1}–${WARMUP + measured.length} against minutes ${WARMUP + 1}–${WARMUP + third} (target ≤ +10 %): RSS ${judged(rss)}; heap after full GC ${judged(heap)}; CPU per decision ${judged(cpu)}`,
);
console.log(
  `not judged (wall clock on a shared machine): decisions/s ${percent(rate.growth)} (${Math.min(...measured.map((r) => r.rate)).toFixed(0)}–${Math.max(...measured.map((r) => r.rate)).toFixed(0)}/s); p99 ${Math.min(...p99s).toFixed(1)}–${Math.max(...p99s).toFixed(1)} ms`,
);
console.log(
  `${failed} failed answers (target 0) ${verdict(failed === 0)}; ${replaced} sessions replaced; load ${load()}`,
);
process.exit(rss.ok && heap.ok && cpu.ok && failed === 0 ? 0 : 1);
