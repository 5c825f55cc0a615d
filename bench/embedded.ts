// bench/embedded.ts — the embedded default as `npm start` runs it: `node bin/guardian.mjs serve` (compiled dist/,
// PGlite on disk under a fresh data dir, bundles/acs.tar.gz) in a process of its own, driven by the load generator
// in another (bench/fixtures/acs-load.ts: signed steps/toolCallRequest over keep-alive HTTP, BENCH_SESSIONS
// sessions, default 64). Prints, beside their targets:
//   - the Guardian's RSS and V8 heap idle after start, peak under load, and idle after the load;
//   - one client: durable decision p50/p99;
//   - BENCH_CLIENTS clients (default 16): decisions/s, p50/p99, and the Guardian's CPU per decision (all its
//     threads, and its main thread alone), the steadier measure on a shared machine.
// BENCH_SECONDS (default 5) per run, BENCH_CLIENTS, BENCH_NODE_ARGS (node flags for the Guardian). Heap is read from the Guardian's own /metrics (prom-client's process metrics).
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { load, pct } from './fixtures/figures.ts';
import {
  distBuilt,
  drive as driveServe,
  heapMb,
  rssMbOf,
  type Serving,
  startServe,
  stopServe,
} from './fixtures/serve-process.ts';

const SECONDS = Number(process.env.BENCH_SECONDS ?? 5);
const SESSIONS = Number(process.env.BENCH_SESSIONS ?? 64);
const CLIENTS = Number(process.env.BENCH_CLIENTS ?? 16);
const TARGETS = {
  idleRssMb: 300,
  loadRssMb: 400,
  oneClientP50Ms: 4,
  rate: 800,
  p99Ms: 60,
} as const;
const ikm = new Uint8Array(32).fill(9);
const tool = { tool: { name: 'shell' }, arguments: { command: { value: 'ls -la /tmp' } } };

const verdict = (ok: boolean): string => (ok ? 'PASS' : 'FAIL');
const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

if (!distBuilt()) {
  console.error('bench/embedded: dist/ is missing; run `npm run build` first (this bench runs what `npm start` runs)');
  process.exit(2);
}

const startGuardian = (dataDir: string): Promise<Serving> =>
  startServe(['--data-dir', dataDir], { DATABASE_URL: '', GUARDIAN_HMAC_IKM: Buffer.from(ikm).toString('base64') });

const drive = (guardian: Serving, clients: number) =>
  driveServe(guardian, {
    ikmBase64: Buffer.from(ikm).toString('base64'),
    sessions: SESSIONS,
    clients,
    seconds: SECONDS,
    maxRate: Number(process.env.BENCH_MAX_RATE ?? 4000),
    payload: tool,
  });

const dataDir = mkdtempSync(join(tmpdir(), 'bench-embedded-'));
let failed = false;
const report = (label: string, figure: string, ok: boolean | null, target = ''): void => {
  if (ok === false) failed = true;
  console.log(
    `${label.padEnd(34)} ${figure.padEnd(52)} ${target ? `target ${target}`.padEnd(18) : ''.padEnd(18)} ${ok === null ? '' : verdict(ok)}`,
  );
};
const guardian = await startGuardian(join(dataDir, 'data'));
try {
  const pid = guardian.child.pid as number;
  console.log(`embedded default (PGlite on disk), ${SESSIONS} sessions, ${SECONDS} s per run, load ${load()}`);
  await sleep(2000);
  const idle = rssMbOf(pid);
  const idleHeap = await heapMb(guardian.url);
  report(
    'idle after start: RSS',
    `${idle.toFixed(0)} MB (heap ${idleHeap.used.toFixed(0)} of ${idleHeap.total.toFixed(0)} MB)`,
    idle < TARGETS.idleRssMb,
    `< ${TARGETS.idleRssMb} MB`,
  );

  const one = await drive(guardian, 1);
  report(
    '1 client: durable decision',
    `p50 ${pct(one.latenciesMs, 50).toFixed(2)} ms  p99 ${pct(one.latenciesMs, 99).toFixed(2)} ms  (${(one.done / one.seconds).toFixed(0)}/s)`,
    pct(one.latenciesMs, 50) <= TARGETS.oneClientP50Ms,
    `p50 ≤ ${TARGETS.oneClientP50Ms} ms`,
  );
  report(
    '1 client: Guardian CPU/decision',
    `${one.cpuMsPerDecision.toFixed(3)} ms (main thread ${one.mainThreadMsPerDecision.toFixed(3)} ms)`,
    null,
  );

  const many = await drive(guardian, CLIENTS);
  const rate = many.done / many.seconds;
  report(
    `${CLIENTS} clients: throughput`,
    `${rate.toFixed(0)} decisions/s  p50 ${pct(many.latenciesMs, 50).toFixed(2)} ms  p99 ${pct(many.latenciesMs, 99).toFixed(2)} ms`,
    rate >= TARGETS.rate && pct(many.latenciesMs, 99) <= TARGETS.p99Ms,
    `≥ ${TARGETS.rate}/s, p99 ≤ ${TARGETS.p99Ms} ms`,
  );
  report(
    `${CLIENTS} clients: Guardian CPU/decision`,
    `${many.cpuMsPerDecision.toFixed(3)} ms (main thread ${many.mainThreadMsPerDecision.toFixed(3)} ms = ${((many.mainThreadMsPerDecision * rate) / 10).toFixed(0)}% of a core)`,
    null,
  );
  report(
    `${CLIENTS} clients: peak RSS`,
    `${many.peakRssMb.toFixed(0)} MB`,
    many.peakRssMb < TARGETS.loadRssMb,
    `< ${TARGETS.loadRssMb} MB`,
  );
  await sleep(2000);
  const after = await heapMb(guardian.url);
  report(
    'idle after the load: RSS',
    `${rssMbOf(pid).toFixed(0)} MB (heap ${after.used.toFixed(0)} of ${after.total.toFixed(0)} MB)`,
    null,
  );
  console.log(`load ${load()} (a loaded machine lowers throughput; CPU per decision moves less)`);
} finally {
  await stopServe(guardian);
  rmSync(dataDir, { recursive: true, force: true });
}
process.exit(failed ? 1 : 0);
