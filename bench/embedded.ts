// bench/embedded.ts — the embedded default as `npm start` runs it: `node bin/guardian.mjs serve` (compiled dist/,
// PGlite on disk under a fresh data dir, bundles/acs.tar.gz) in a process of its own, driven by the load generator
// in another (bench/fixtures/acs-load.ts: signed steps/toolCallRequest over keep-alive HTTP, BENCH_SESSIONS
// sessions, default 64). Prints, beside their targets:
//   - the Guardian's RSS and V8 heap idle after start, peak under load, and idle after the load;
//   - one client: durable decision p50/p99;
//   - BENCH_CLIENTS clients (default 16): decisions/s, p50/p99, and the Guardian's CPU per decision (all its
//     threads, and its main thread alone), the steadier measure on a shared machine.
// BENCH_SECONDS (default 5) per run, BENCH_CLIENTS, BENCH_NODE_ARGS (node flags for the Guardian). Heap is read from the Guardian's own /metrics (prom-client's process metrics).
import { spawn, fork, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { LoadOrder, LoadReport } from './fixtures/acs-load.ts';
import { load, pct } from './fixtures/figures.ts';

const ROOT = new URL('../', import.meta.url).pathname;
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

if (!existsSync(join(ROOT, 'dist/cli/main.js'))) {
  console.error('bench/embedded: dist/ is missing; run `npm run build` first (this bench runs what `npm start` runs)');
  process.exit(2);
}

/** Clock ticks (USER_HZ 100 on Linux) → ms of CPU: utime + stime of /proc/<pid>[/task/<tid>]/stat. */
function cpuMsOf(path: string): number {
  const stat = readFileSync(path, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return (Number(fields[11]) + Number(fields[12])) * 10;
}

function rssMbOf(pid: number): number {
  const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  return m ? Number(m[1]) / 1024 : Number.NaN;
}

/** The Guardian's V8 heap in use and total (MB), from its /metrics after a while idle. */
async function heapMb(url: string): Promise<{ used: number; total: number }> {
  const text = await (await fetch(new URL('/metrics', url))).text();
  const read = (name: string): number => {
    const m = new RegExp(`^${name} (\\S+)$`, 'm').exec(text);
    return m ? Number(m[1]) / 1024 / 1024 : Number.NaN;
  };
  return { used: read('nodejs_heap_size_used_bytes'), total: read('nodejs_heap_size_total_bytes') };
}

interface Serving {
  child: ChildProcess;
  url: string;
}

async function startGuardian(dataDir: string): Promise<Serving> {
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    DATABASE_URL: '',
    GUARDIAN_HMAC_IKM: Buffer.from(ikm).toString('base64'),
  };
  // BENCH_NODE_ARGS: extra node flags for the Guardian alone (e.g. --cpu-prof --cpu-prof-dir=/tmp/prof).
  const nodeArgs = (process.env.BENCH_NODE_ARGS ?? '').split(' ').filter(Boolean);
  const args = [...nodeArgs, 'bin/guardian.mjs', 'serve', '--data-dir', dataDir, '--port', '0'];
  const child = spawn(process.execPath, args, {
    cwd: ROOT,
    env,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stderr?.on('data', (d: Buffer) => (stderr = (stderr + d.toString()).slice(-10_000)));
  const url = await new Promise<string>((resolve, reject) => {
    child.stdout?.on('data', (d: Buffer) => {
      stdout += d.toString();
      const m = /listening on (http:\/\/\S+)/.exec(stdout);
      if (m) resolve(m[1]);
    });
    child.once('exit', (code) => reject(new Error(`guardian exited with ${code}: ${stderr}`)));
  });
  return { child, url };
}

interface Measured extends LoadReport {
  cpuMsPerDecision: number;
  mainThreadMsPerDecision: number;
  peakRssMb: number;
}

/** One closed-loop run of the load generator against the Guardian, with the Guardian's CPU and RSS over the window. */
async function drive(guardian: Serving, clients: number): Promise<Measured> {
  const pid = guardian.child.pid as number;
  const loader = fork(new URL('./fixtures/acs-load.ts', import.meta.url).pathname, [], {
    execArgv: ['--import', 'tsx'],
    stdio: 'inherit',
  });
  const order: LoadOrder = {
    url: guardian.url,
    ikmBase64: Buffer.from(ikm).toString('base64'),
    sessions: SESSIONS,
    clients,
    seconds: SECONDS,
    warmupSeconds: 1,
    perSession: Math.ceil((Number(process.env.BENCH_MAX_RATE ?? 4000) * (SECONDS + 1)) / SESSIONS),
    payload: tool,
  };
  let cpuAtOpen = Number.NaN;
  let mainAtOpen = Number.NaN;
  let cpu = Number.NaN;
  let main = Number.NaN;
  let peakRssMb = 0;
  const sampler = setInterval(() => (peakRssMb = Math.max(peakRssMb, rssMbOf(pid))), 100);
  try {
    const answer = await new Promise<{ ok: boolean; report?: LoadReport; error?: string }>((resolve, reject) => {
      loader.on('message', (m: { window?: 'open' | 'close'; ok?: boolean }) => {
        if (m.window === 'open') {
          cpuAtOpen = cpuMsOf(`/proc/${pid}/stat`);
          mainAtOpen = cpuMsOf(`/proc/${pid}/task/${pid}/stat`);
        } else if (m.window === 'close') {
          cpu = cpuMsOf(`/proc/${pid}/stat`) - cpuAtOpen;
          main = cpuMsOf(`/proc/${pid}/task/${pid}/stat`) - mainAtOpen;
        } else if (m.ok !== undefined) resolve(m as { ok: boolean; report?: LoadReport; error?: string });
      });
      loader.once('exit', (code) => reject(new Error(`load generator exited with ${code}`)));
      loader.send(order);
    });
    if (!answer.ok || !answer.report) throw new Error(`load generator failed: ${answer.error}`);
    // Both ends of the window or no CPU figure: a window left open must not read as zero CPU.
    if (!Number.isFinite(cpu) || !Number.isFinite(main)) throw new Error('the measured window never closed');
    const done = Math.max(1, answer.report.done);
    return { ...answer.report, cpuMsPerDecision: cpu / done, mainThreadMsPerDecision: main / done, peakRssMb };
  } finally {
    clearInterval(sampler);
  }
}

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
  const exited = new Promise((r) => guardian.child.once('exit', r));
  guardian.child.kill('SIGTERM');
  await exited;
  rmSync(dataDir, { recursive: true, force: true });
}
process.exit(failed ? 1 : 0);
