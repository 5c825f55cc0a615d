// bench/soak.ts — the Guardian on Postgres under a long run as agents come and go (issue 26 item 6): 16 clients
// drive 64 live sessions with signed steps/toolCallRequest (fresh request_id and nonce each) over keep-alive HTTP,
// and 64 new sessions a minute replace old ones. The Guardian runs in its own process (--expose-gc,
// bench/fixtures/guardian-process.ts); this process is the load generator. Every minute it prints decisions/s,
// p99, and the Guardian's RSS and heap after a full collection; at the end PASS when, after the warm-up minute,
// decisions/s and RSS each stay within 10 % of their first measured minute.
//   npm run bench soak [-- --minutes N]   (default 30; or BENCH_SOAK_MINUTES); BENCH_DATABASE_URL (default local test db)
import { fork } from 'node:child_process';
import { performance } from 'node:perf_hooks';
import { AcsClient, type AcsTransport } from '../src/client/index.ts';
import type { ResponseEnvelope } from '../src/acs/types.ts';
import { RawConnection } from './fixtures/acs-load.ts';
import type { GuardianProcessMessage } from './fixtures/guardian-process.ts';
import { load } from './fixtures/figures.ts';

const args = process.argv.slice(2);
if (args.includes('--help')) {
  console.log('usage: npm run bench soak [-- --minutes N]   (env: BENCH_SOAK_MINUTES, BENCH_DATABASE_URL)');
  process.exit(0);
}
const flag = args.indexOf('--minutes');
const MINUTES = Number(flag >= 0 ? args[flag + 1] : (process.env.BENCH_SOAK_MINUTES ?? 30));
if (!Number.isInteger(MINUTES) || MINUTES < 2) {
  console.error('soak: --minutes must be an integer ≥ 2 (one warm-up minute, then the measured ones)');
  process.exit(2);
}
const CLIENTS = 16;
const LIVE = 64;
const NEW_PER_MINUTE = 64;
const DB_URL = process.env.BENCH_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test';
const ikm = new Uint8Array(32).fill(7);

const child = fork(new URL('./fixtures/guardian-process.ts', import.meta.url).pathname, [], {
  execArgv: ['--expose-gc', '--import', 'tsx'],
  env: { ...process.env, BENCH_DATABASE_URL: DB_URL, BENCH_IKM_BASE64: Buffer.from(ikm).toString('base64') },
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
const stats = async (): Promise<{ rssMb: number; heapMb: number }> => {
  const reply = next((m) => 'stats' in m);
  child.send('stats');
  return ((await reply) as { stats: { rssMb: number; heapMb: number } }).stats;
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

const rows: { minute: number; rate: number; p99: number; rssMb: number; heapMb: number }[] = [];
console.log(
  `soak: ${MINUTES} min, ${CLIENTS} clients, ${LIVE} live sessions, ${NEW_PER_MINUTE} new a minute; load ${load()}`,
);
console.log('minute  decisions/s    p99 ms   RSS MB  heap MB (after full GC)  load');
for (let minute = 1; minute <= MINUTES; minute++) {
  await new Promise((resolve) => setTimeout(resolve, Math.max(0, started + minute * 60_000 - performance.now())));
  const window = latencies;
  latencies = [];
  const sorted = window.sort((a, b) => a - b);
  const p99 = sorted[Math.min(sorted.length - 1, Math.floor(0.99 * sorted.length))] ?? 0;
  const mem = await stats();
  const row = { minute, rate: window.length / 60, p99, rssMb: mem.rssMb, heapMb: mem.heapMb };
  rows.push(row);
  console.log(
    `${String(minute).padStart(6)}  ${row.rate.toFixed(0).padStart(11)}  ${p99.toFixed(1).padStart(8)}  ${row.rssMb.toFixed(0).padStart(7)}  ${row.heapMb.toFixed(0).padStart(7)}                  ${load()}`,
  );
}
clearInterval(churn);
await Promise.all(workers);
for (const c of connections) c.close();
stopping = true;
const stopped = next((m) => 'stopped' in m);
child.send('stop');
await stopped;

const measured = rows.slice(1);
const within = (values: number[]): { spread: number; ok: boolean } => {
  const base = values[0];
  const spread = Math.max(...values.map((v) => Math.abs(v - base) / base));
  return { spread, ok: spread <= 0.1 };
};
const rate = within(measured.map((r) => r.rate));
const rss = within(measured.map((r) => r.rssMb));
const heap = within(measured.map((r) => r.heapMb));
console.log(
  `after the warm-up minute: decisions/s within ${(100 * rate.spread).toFixed(1)}% of minute 2 (target ≤ 10%) ${rate.ok ? 'PASS' : 'FAIL'}; RSS within ${(100 * rss.spread).toFixed(1)}% ${rss.ok ? 'PASS' : 'FAIL'} (heap ${(100 * heap.spread).toFixed(1)}%); ${failed} failed answers (target 0) ${failed === 0 ? 'PASS' : 'FAIL'}; ${replaced} sessions replaced; load ${load()}`,
);
process.exit(rate.ok && rss.ok && failed === 0 ? 0 : 1);
