// bench/startup.ts — how long `guardian serve` takes to be able to answer, run as the user runs it
// (`node bin/guardian.mjs serve`, PGlite under a data dir, bundles/acs.tar.gz, from the repository root; when
// bin/guardian.mjs runs compiled code, that is what is measured). Three cases, BENCH_RUNS each (default 5):
//   fresh    a new data dir (no database, no key yet) → first 200 from GET /healthz;
//   restart  the same data dir again → first 200 from GET /healthz;
//   stdio    `serve --stdio` on an existing data dir, a signed handshake written at spawn → its answer read.
// The server reports its own phases (GUARDIAN_STARTUP_TIMINGS=1: one {"startup":…} line on stderr, ms since
// its process started, wall and CPU of all its threads); the total is measured here, from spawn to the answer.
// After each HTTP start one handshake over POST /acs checks that a 200 /healthz meant a Guardian that answers.
import { spawn } from 'node:child_process';
import { createServer } from 'node:net';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { AcsClient, httpTransport } from '../src/client/index.ts';
import { decodeBase64Strict } from '../src/crypto/index.ts';
import { encodeFrame, FrameParser } from '../src/server/stdio.ts';
import type { StartupPhase, StartupReport } from '../src/server/startup-timings.ts';

const ROOT = new URL('../', import.meta.url).pathname;
const RUNS = Number(process.env.BENCH_RUNS ?? 5);
const TARGET_MS = { fresh: 3000, restart: 1000, stdio: 1500 } as const;
const PHASES: { name: StartupPhase; label: string }[] = [
  { name: 'modules', label: 'module load' },
  { name: 'keys', label: 'keys' },
  { name: 'store', label: 'store open + migrations' },
  { name: 'bundle', label: 'bundle load' },
  { name: 'guardian', label: 'pipeline (schemas)' },
  { name: 'listen', label: 'listen' },
  { name: 'first_answer', label: 'first answer' },
];

interface Run {
  /** Spawn → 200 /healthz, or spawn → first stdio answer, measured here. */
  totalMs: number;
  report: StartupReport;
}

const childEnv = (): NodeJS.ProcessEnv => {
  const env: NodeJS.ProcessEnv = { ...process.env, GUARDIAN_STARTUP_TIMINGS: '1', DATABASE_URL: '' };
  delete env.GUARDIAN_HMAC_IKM;
  delete env.GUARDIAN_HMAC_IKM_FILE;
  return env;
};

function startupLine(stderr: string): StartupReport | undefined {
  const line = stderr.split('\n').find((l) => l.startsWith('{"startup":'));
  return line ? (JSON.parse(line) as { startup: StartupReport }).startup : undefined;
}

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/** One HTTP start: spawn → 200 /healthz, then a handshake, then SIGTERM and wait for the exit. */
async function httpStart(dataDir: string, port: number): Promise<Run> {
  const t0 = performance.now();
  const child = spawn(process.execPath, ['bin/guardian.mjs', 'serve', '--data-dir', dataDir, '--port', String(port)], {
    cwd: ROOT,
    env: childEnv(),
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  let stderr = '';
  child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
  const exited = new Promise<number | null>((r) => child.once('exit', (code) => r(code)));
  let totalMs = 0;
  try {
    for (;;) {
      if (child.exitCode !== null) throw new Error(`guardian exited with ${child.exitCode}: ${stderr}`);
      const ok = await fetch(`http://127.0.0.1:${port}/healthz`).then(
        (r) => r.status === 200,
        () => false,
      );
      if (ok) break;
      await sleep(5);
    }
    totalMs = performance.now() - t0;
    const ikm = decodeBase64Strict(readFileSync(join(dataDir, 'hmac-ikm.key'), 'utf8').trim());
    if (!ikm) throw new Error('unreadable dev key');
    const client = new AcsClient({
      transport: httpTransport(`http://127.0.0.1:${port}/acs`),
      ikm,
      agentId: 'bench-startup',
    });
    const hello = await client.hello({ transports_supported: ['http'] });
    if (hello.selected_transport !== 'http') throw new Error('handshake after /healthz did not select http');
  } finally {
    child.kill('SIGTERM');
    await exited;
  }
  const report = startupLine(stderr);
  if (!report) throw new Error(`no startup line on stderr: ${stderr}`);
  return { totalMs, report };
}

/** One stdio start on an existing data dir: a signed handshake written at spawn, timed to its answer. */
async function stdioStart(dataDir: string): Promise<Run> {
  const ikm = decodeBase64Strict(readFileSync(join(dataDir, 'hmac-ikm.key'), 'utf8').trim());
  if (!ikm) throw new Error('unreadable dev key');
  const t0 = performance.now();
  const child = spawn(process.execPath, ['bin/guardian.mjs', 'serve', '--stdio', '--data-dir', dataDir], {
    cwd: ROOT,
    env: childEnv(),
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  let stderr = '';
  child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
  const parser = new FrameParser(64 * 1024 * 1024);
  const answers: string[] = [];
  let answered: (() => void) | undefined;
  child.stdout.on('data', (chunk: Buffer) => {
    for (const ev of parser.push(chunk))
      if (ev.kind === 'message') {
        answers.push(ev.body.toString('utf8'));
        answered?.();
      }
  });
  const exited = new Promise<number | null>((r) => child.once('exit', (code) => r(code)));
  const transport = async (message: string): Promise<string> => {
    child.stdin.write(encodeFrame(JSON.parse(message)));
    while (answers.length === 0) {
      if (child.exitCode !== null) throw new Error(`guardian exited with ${child.exitCode}: ${stderr}`);
      await new Promise<void>((r) => {
        answered = r;
        setTimeout(r, 50);
      });
    }
    return answers.shift() as string;
  };
  let totalMs = 0;
  try {
    const client = new AcsClient({ transport, ikm, agentId: 'bench-startup' });
    const hello = await client.hello({ transports_supported: ['stdio'] });
    totalMs = performance.now() - t0;
    if (hello.selected_transport !== 'stdio') throw new Error('stdio handshake did not select stdio');
  } finally {
    child.stdin.end();
    await exited;
  }
  const report = startupLine(stderr);
  if (!report) throw new Error(`no startup line on stderr: ${stderr}`);
  return { totalMs, report };
}

const median = (xs: number[]): number => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
};
const ms = (x: number): string => `${x.toFixed(0).padStart(6)} ms`;
const load1 = (): string => loadavg()[0].toFixed(2);

function print(name: keyof typeof TARGET_MS, what: string, runs: Run[]): boolean {
  const total = median(runs.map((r) => r.totalMs));
  const pass = total < TARGET_MS[name];
  console.log(`\n${name}: ${what} (median of ${runs.length})`);
  for (const { name: phase, label } of PHASES) {
    const timed = runs.map((r) => r.report.phases[phase]).filter((p) => p !== undefined);
    if (timed.length === 0) continue;
    const wall = median(timed.map((p) => p.endMs - p.startMs));
    const cpu = median(timed.map((p) => p.cpuMs));
    console.log(`  ${label.padEnd(26)} ${ms(wall)}   cpu ${ms(cpu)}`);
  }
  console.log(
    `  ${'ready (server clock)'.padEnd(26)} ${ms(median(runs.map((r) => r.report.readyMs)))}   cpu ${ms(median(runs.map((r) => r.report.cpuMs)))}`,
  );
  console.log(
    `  ${'total (spawn → answer)'.padEnd(26)} ${ms(total)}   target < ${TARGET_MS[name]} ms   ${pass ? 'PASS' : 'FAIL'}   (runs: ${runs.map((r) => r.totalMs.toFixed(0)).join(', ')} ms)`,
  );
  return pass;
}

/** A port nothing listens on now: the kernel's pick for a listener on port 0 (a fixed guess can be an ephemeral port in use). */
function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const probe = createServer();
    probe.once('error', reject);
    probe.listen(0, '127.0.0.1', () => {
      const { port } = probe.address() as { port: number };
      probe.close(() => resolve(port));
    });
  });
}

const work = mkdtempSync(join(tmpdir(), 'guardian-bench-startup-'));
console.log(`guardian serve start-up, ${RUNS} runs per case, load average ${load1()} (2-core figures vary with load)`);
try {
  const fresh: Run[] = [];
  for (let i = 0; i < RUNS; i++) fresh.push(await httpStart(join(work, `fresh-${i}`), await freePort()));
  const dataDir = join(work, 'fresh-0');
  const restart: Run[] = [];
  for (let i = 0; i < RUNS; i++) restart.push(await httpStart(dataDir, await freePort()));
  const stdio: Run[] = [];
  for (let i = 0; i < RUNS; i++) stdio.push(await stdioStart(dataDir));
  const passed = [
    print('fresh', 'new data dir → 200 GET /healthz', fresh),
    print('restart', 'existing data dir → 200 GET /healthz', restart),
    print('stdio', 'serve --stdio on an existing data dir → handshake answered', stdio),
  ];
  console.log(`\nload average at the end ${load1()}; ${passed.filter(Boolean).length}/3 targets met`);
} finally {
  rmSync(work, { recursive: true, force: true });
}
