// Replay throughput and memory: entries replayed per second on PGlite and Postgres, against the ACS library
// (bundles/acs.tar.gz, else rego/ compiled) or a trivial one-rule policy (what replay costs besides policy
// evaluation), sequentially or over worker threads, with the share of time spent in evaluation and peak RSS.
//
//   npx tsx bench/replay.ts [--entries 20000] [--sessions 100] [--driver pglite|postgres|both]
//                           [--policy library|trivial|both] [--workers 0|N] [--runs 1] [--provenance]
//
// --cpu-prof DIR: writes a V8 CPU profile of each replay run (not the populate phase) into DIR (main thread only;
// profile in-process runs, --workers 0).
//
// BENCH_TRIVIAL_WHOLE_INPUT=1: the trivial bundle without recorded input paths (the whole input is serialised
// and parsed per step, as before 2026-11-30).
//
// --provenance: every user message and tool-call argument carries an ACS §7 Provenance object (user_input;
// agent_generated derived from the last user message), so the session state holds a provenance record per
// step, as real agent traffic does; without it the steps carry none.
//
// History is written in bulk with the live pipeline's row format (src/acs/pipeline/chain.ts appendStepEntry:
// entry_id = step_id = request_id, request_hash = SHA-256(JCS(params)), entry_hash chained per ACS §8.2,
// the delivered result stored with the entry); replay re-checks every hash, so a row the live store would not
// have written shows up as tampered and the bench fails. Recorded decisions are a fixed ALLOW, so under the
// library most steps show up as differences (the report keeps 1000 of them: its size is capped, not the walk).
import { randomUUID } from 'node:crypto';
import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { Session } from 'node:inspector/promises';
import { loadavg } from 'node:os';
import { canonicalJson, computeEntryHash, sha256Hex } from '../src/chain/index.ts';
import { buildLibraryBundle, DECISION_ENTRYPOINT } from '../src/policy/library.ts';
import { compileBundle } from '../src/rego/index.ts';
import { resolveReplayPolicy, runReplay } from '../src/replay/index.ts';
import { openStore } from '../src/store/index.ts';
import type { DurableStore } from '../src/store/types.ts';

function arg(name: string, dflt: string): string {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 && process.argv[i + 1] ? process.argv[i + 1] : dflt;
}

const ENTRIES = Number(arg('entries', '20000'));
const SESSIONS = Number(arg('sessions', '100'));
const DRIVER = arg('driver', 'both');
const POLICY = arg('policy', 'both');
const WORKERS = arg('workers', '0,2').split(',').map(Number);
const RUNS = Number(arg('runs', '1'));
const PROVENANCE = process.argv.includes('--provenance');
const CPU_PROF_DIR = arg('cpu-prof', '');
// --threads: also print each thread's CPU per entry (/proc/self/task; Linux only).
const THREADS = process.argv.includes('--threads');
const DATABASE_URL = process.env.TEST_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test';

const STEPS: [string, Record<string, unknown>][] = [
  ['steps/userMessage', { message: { content: 'please list the files and look up the weather' } }],
  ['steps/toolCallRequest', { tool: { name: 'shell' }, arguments: { command: { value: 'ls -la /workspace' } } }],
  ['steps/toolCallRequest', { tool: { name: 'web_search' }, arguments: { query: { value: 'weather lyon' } } }],
  ['steps/toolCallRequest', { tool: { name: 'shell' }, arguments: { command: { value: 'rm -rf /' } } }],
  ['steps/toolCallRequest', { tool: { name: 'read_file' }, arguments: { path: { value: '/workspace/notes.md' } } }],
];

/** The step's payload, with Provenance objects under --provenance (ids unique per session and step). */
function payloadOf(template: Record<string, unknown>, seq: number): Record<string, unknown> {
  if (!PROVENANCE) return template;
  if ('message' in template) {
    return {
      message: {
        ...(template.message as Record<string, unknown>),
        provenance: { provenance_id: `u${seq}`, origin: 'user_input' },
      },
    };
  }
  const args = template.arguments as Record<string, { value: unknown }> | undefined;
  if (!args) return template;
  const [name, data] = Object.entries(args)[0];
  const lastUser = seq - (seq % STEPS.length); // user messages are the steps at seq ≡ 0 (mod STEPS.length)
  return {
    ...template,
    arguments: {
      [name]: {
        ...data,
        provenance: {
          provenance_id: `g${seq}`,
          origin: 'agent_generated',
          derived_from: lastUser > 0 ? [`u${lastUser}`] : [],
        },
      },
    },
  };
}

const TRIVIAL_REGO = `package acs
decision := {"decision": "allow", "reasoning": "trivial", "reason_codes": [], "policy_references": []}
`;

const ROWS_PER_INSERT = 2000;

/** Writes sessions, entries (with their recorded decisions) and chain heads in bulk statements. */
async function populate(store: DurableStore): Promise<number> {
  const perSession = Math.ceil(ENTRIES / SESSIONS);
  const base = Date.parse('2026-06-01T08:00:00Z');
  const started = performance.now();
  const cols = () => ({
    sessionId: [] as string[],
    seq: [] as number[],
    id: [] as string[],
    type: [] as string[],
    requestHash: [] as string[],
    ts: [] as string[],
    content: [] as string[],
    prev: [] as (string | null)[],
    hash: [] as string[],
    params: [] as string[],
    result: [] as string[],
  });
  let c = cols();
  const flush = async (): Promise<void> => {
    if (c.seq.length === 0) return;
    await store.query(
      `insert into context_entries (session_id, seq, entry_id, step_id, step_type, request_hash, timestamp, content_jcs, previous_hash, entry_hash, params_jcs, result_jcs, bundle_revision, evaluation_duration_ms)
       select s, q, i, i, t, r, ts, c, p, h, pa, re, 'bench-recorded', 1
         from unnest($1::text[], $2::integer[], $3::text[], $4::text[], $5::text[], $6::text[], $7::text[], $8::text[], $9::text[], $10::text[], $11::text[]) as v(s, q, i, t, r, ts, c, p, h, pa, re)`,
      [c.sessionId, c.seq, c.id, c.type, c.requestHash, c.ts, c.content, c.prev, c.hash, c.params, c.result],
    );
    c = cols();
  };
  let written = 0;
  for (let s = 0; s < SESSIONS && written < ENTRIES; s++) {
    const sessionId = randomUUID();
    const agentId = `bench-agent-${s % 10}`;
    await store.createSession({
      id: sessionId,
      tenantId: null,
      agentId,
      keyId: 'default',
      hello: null,
      intent: null,
      state: null,
      parentSessionId: null,
    });
    let prev: string | null = null;
    let seq = 0;
    for (; seq < perSession && written < ENTRIES; seq++, written++) {
      const [method, template] =
        seq === 0 ? (['steps/sessionStart', {}] as [string, Record<string, unknown>]) : STEPS[seq % STEPS.length];
      const payload = payloadOf(template, seq);
      const requestId = randomUUID();
      const params = {
        acs_version: '0.1.0',
        request_id: requestId,
        timestamp: new Date(base + s * 60_000 + seq * 100).toISOString(),
        metadata: { agent_id: agentId, session_id: sessionId },
        payload,
        signature: { algorithm: 'HMAC-SHA256', value: 'AAAA', key_id: 'default' },
      };
      const paramsJcs = canonicalJson(params);
      const content = {
        entry_id: requestId,
        step_id: requestId,
        step_type: method,
        request_hash: sha256Hex(paramsJcs),
        timestamp: params.timestamp,
      };
      const hash = computeEntryHash(content, prev);
      c.sessionId.push(sessionId);
      c.seq.push(seq);
      c.id.push(requestId);
      c.type.push(method);
      c.requestHash.push(content.request_hash);
      c.ts.push(params.timestamp);
      c.content.push(canonicalJson(content));
      c.prev.push(prev);
      c.hash.push(hash);
      c.params.push(paramsJcs);
      c.result.push(
        canonicalJson({
          type: 'final',
          acs_version: '0.1.0',
          request_id: requestId,
          decision: 'allow',
          reason_codes: [],
          policy_references: [],
        }),
      );
      prev = hash;
      if (c.seq.length >= ROWS_PER_INSERT) await flush();
    }
    await flush();
    await store.query('insert into chain_heads (session_id, seq, head_hash) values ($1, $2, $3)', [
      sessionId,
      seq - 1,
      prev,
    ]);
  }
  console.log(
    `  populated ${written} entries in ${SESSIONS} sessions: ${((performance.now() - started) / 1000).toFixed(1)} s`,
  );
  return written;
}

async function policyBundle(which: 'library' | 'trivial'): Promise<Uint8Array> {
  // Input paths recorded as the library's are (none: the policy reads no input), so `trivial` measures what
  // replay costs besides evaluation rather than serialising and parsing a whole input nobody reads.
  if (which === 'trivial')
    return (
      await compileBundle({
        sources: [{ file: 'trivial.rego', text: TRIVIAL_REGO }],
        entrypoints: [DECISION_ENTRYPOINT],
        revision: 'trivial',
        recordInputPaths: !process.env.BENCH_TRIVIAL_WHOLE_INPUT,
      })
    ).bundle;
  if (existsSync('bundles/acs.tar.gz')) return new Uint8Array(readFileSync('bundles/acs.tar.gz'));
  return (await buildLibraryBundle()).bundle;
}

const mib = (bytes: number): string => (bytes / 2 ** 20).toFixed(0);

/** CPU ticks (utime + stime, 1/100 s) of each thread of this process, by thread id, with its name. */
function threadTicks(): Map<string, { name: string; ticks: number }> {
  const out = new Map<string, { name: string; ticks: number }>();
  for (const tid of readdirSync('/proc/self/task')) {
    try {
      const stat = readFileSync(`/proc/self/task/${tid}/stat`, 'utf8');
      const close = stat.lastIndexOf(')');
      const fields = stat.slice(close + 2).split(' ');
      out.set(tid, { name: stat.slice(stat.indexOf('(') + 1, close), ticks: Number(fields[11]) + Number(fields[12]) });
    } catch {
      /* thread ended */
    }
  }
  return out;
}

async function run(
  store: DurableStore,
  total: number,
  which: 'library' | 'trivial',
  bundle: Uint8Array,
  workers: number,
): Promise<number> {
  // From the registry, as `guardian replay --against <sha256>` does: a policy worker threads can load too.
  const sha256 = sha256Hex(bundle);
  if (!(await store.getPolicyBundle(sha256)))
    await store.putPolicyBundle({
      sha256,
      revision: which,
      manifest: { revision: which },
      bytes: bundle,
      source: null,
    });
  const policy = await resolveReplayPolicy(store, sha256);
  global.gc?.();
  const rssStart = process.memoryUsage.rss();
  let peak = rssStart;
  const samples: string[] = [];
  let nextMark = 0.2;
  // memoryUsage.rss() reads the RSS alone: memoryUsage() also walks the heap spaces (≈ 1 µs per entry at 50 ms).
  const sample = (): void => {
    peak = Math.max(peak, process.memoryUsage.rss());
  };
  // Every 200 ms and at every progress report (each page): RSS reads showed up in the main thread's profile at 50 ms.
  const timer = setInterval(sample, 200);
  const profiler = CPU_PROF_DIR ? new Session() : null;
  if (profiler) {
    profiler.connect();
    await profiler.post('Profiler.enable');
    await profiler.post('Profiler.start');
  }
  const ticksStart = THREADS ? threadTicks() : null;
  let ticksEnd: ReturnType<typeof threadTicks> | undefined;
  const cpuStart = process.cpuUsage();
  const report = await runReplay({
    store,
    policy,
    maxReportedSteps: 1000,
    countTotal: true,
    workers,
    onProgress: (p) => {
      sample();
      // Worker threads are gone once runReplay returns: their CPU is read when the last entry is counted.
      if (ticksStart && p.processed === p.total) ticksEnd ??= threadTicks();
      while (p.total && p.processed / p.total >= nextMark) {
        // With --expose-gc the heap is sampled after a full collection: live memory, not collection lag.
        global.gc?.();
        const m = process.memoryUsage();
        samples.push(`${Math.round((p.processed / p.total) * 100)}%: rss ${mib(m.rss)} heap ${mib(m.heapUsed)}`);
        nextMark += 0.2;
      }
    },
  });
  clearInterval(timer);
  const cpu = process.cpuUsage(cpuStart);
  if (ticksStart) {
    const byName = new Map<string, number>();
    for (const [tid, t] of ticksEnd ?? threadTicks()) {
      const d = t.ticks - (ticksStart.get(tid)?.ticks ?? 0);
      if (d > 0) byName.set(`${t.name}#${tid}`, d);
    }
    console.log(
      `  thread CPU µs per entry: ${[...byName]
        .sort((a, b) => b[1] - a[1])
        .map(([n, d]) => `${n} ${((d * 1e4) / total).toFixed(1)}`)
        .join(', ')}`,
    );
  }
  if (profiler) {
    const { profile } = await profiler.post('Profiler.stop');
    mkdirSync(CPU_PROF_DIR, { recursive: true });
    writeFileSync(`${CPU_PROF_DIR}/replay-${which}-${Date.now()}.cpuprofile`, JSON.stringify(profile));
    profiler.disconnect();
  }
  const s = report.summary;
  // CPU time of every thread of the process: on a loaded machine, entries per CPU second is the steadier figure.
  const perCpuSecond = Math.round(s.entriesScanned / ((cpu.user + cpu.system) / 1e6));
  if (s.tampered > 0 || s.entriesScanned !== total)
    throw new Error(
      `bench history is not what the live store writes: ${s.tampered} tampered, ${s.entriesScanned}/${total} scanned`,
    );
  const evalShare =
    s.durationMs > 0
      ? ` evaluation ${((s.evaluationMs / (s.durationMs * Math.max(1, workers))) * 100).toFixed(0)}% of ${workers > 0 ? 'worker' : 'wall'} time,`
      : '';
  console.log(
    `  ${which}, ${workers > 0 ? `${workers} workers` : 'in-process'}: ${s.entriesScanned} entries in ${(s.durationMs / 1000).toFixed(2)} s = ${s.entriesPerSecond} entries/s (${perCpuSecond} per CPU second, ${((cpu.user + cpu.system) / s.entriesScanned).toFixed(0)} µs CPU per entry),${evalShare} ${s.changed} changed; RSS start ${mib(rssStart)} peak ${mib(peak)} MiB (${samples.join(', ')}); load ${loadavg()
      .map((l) => l.toFixed(1))
      .join(' ')}`,
  );
  return s.entriesPerSecond;
}

async function bench(driver: 'pglite' | 'postgres', bundles: Map<'library' | 'trivial', Uint8Array>): Promise<void> {
  const schema = `replay_bench_${process.pid}`;
  const store =
    driver === 'pglite' ? await openStore({ inMemory: true }) : await openStore({ databaseUrl: DATABASE_URL, schema });
  try {
    console.log(`${driver}:`);
    const total = await populate(store);
    for (const [which, bundle] of bundles) {
      for (const workers of WORKERS) {
        const rates: number[] = [];
        for (let r = 0; r < RUNS; r++) rates.push(await run(store, total, which, bundle, workers));
        if (RUNS > 1)
          console.log(
            `  ${which}, ${workers > 0 ? `${workers} workers` : 'in-process'}: median ${rates.sort((a, b) => a - b)[Math.floor(rates.length / 2)]} entries/s over ${RUNS} runs`,
          );
      }
    }
  } finally {
    if (driver === 'postgres') await store.query(`drop schema if exists "${schema}" cascade`).catch(() => {});
    await store.close();
  }
}

const bundles = new Map<'library' | 'trivial', Uint8Array>();
for (const which of ['trivial', 'library'] as const)
  if (POLICY === which || POLICY === 'both') bundles.set(which, await policyBundle(which));
console.log(
  `replay bench: ${ENTRIES} entries, ${SESSIONS} sessions${PROVENANCE ? ' with provenance' : ''}, policies ${[...bundles.keys()].join(', ')}, workers ${WORKERS.join(', ')}`,
);
if (DRIVER === 'pglite' || DRIVER === 'both') await bench('pglite', bundles);
if (DRIVER === 'postgres' || DRIVER === 'both') await bench('postgres', bundles);
