// Replay throughput and memory: entries replayed per second against the ACS library (bundles/acs.tar.gz, else
// rego/ compiled), on PGlite and Postgres, and RSS sampled along the run (flat = bounded memory).
//
//   npx tsx bench/replay.ts [--entries 20000] [--sessions 100] [--driver pglite|postgres|both]
//
// History is written as the live pipeline writes it (src/acs/pipeline/chain.ts appendStepEntry: entry_id =
// step_id = request_id, request_hash over params, then recordDecision with the delivered result), with
// realistic step params; recorded decisions are a fixed ALLOW, so most steps show up as differences (the
// report keeps 1000 of them: its size is capped, not the walk).
import { randomUUID } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import { computeRequestHash } from '../src/chain/index.ts';
import { buildLibraryBundle } from '../src/policy/library.ts';
import { createWasmPolicyEngine } from '../src/policy/index.ts';
import { resolveReplayPolicy, runReplay } from '../src/replay/index.ts';
import { openStore } from '../src/store/index.ts';
import type { DurableStore, Json } from '../src/store/types.ts';

function arg(name: string, dflt: string): string {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 && process.argv[i + 1] ? process.argv[i + 1] : dflt;
}

const ENTRIES = Number(arg('entries', '20000'));
const SESSIONS = Number(arg('sessions', '100'));
const DRIVER = arg('driver', 'both');
const DATABASE_URL = process.env.TEST_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test';

const STEPS: [string, Record<string, unknown>][] = [
  ['steps/userMessage', { message: { content: 'please list the files and look up the weather' } }],
  ['steps/toolCallRequest', { tool: { name: 'shell' }, arguments: { command: { value: 'ls -la /workspace' } } }],
  ['steps/toolCallRequest', { tool: { name: 'web_search' }, arguments: { query: { value: 'weather lyon' } } }],
  ['steps/toolCallRequest', { tool: { name: 'shell' }, arguments: { command: { value: 'rm -rf /' } } }],
  ['steps/toolCallRequest', { tool: { name: 'read_file' }, arguments: { path: { value: '/workspace/notes.md' } } }],
];

async function populate(store: DurableStore): Promise<number> {
  const perSession = Math.ceil(ENTRIES / SESSIONS);
  const base = Date.parse('2026-06-01T08:00:00Z');
  let written = 0;
  const started = performance.now();
  for (let s = 0; s < SESSIONS && written < ENTRIES; s++) {
    const sessionId = randomUUID();
    await store.createSession({ id: sessionId, tenantId: null, agentId: `bench-agent-${s % 10}`, keyId: 'default', hello: null, intent: null, state: null, parentSessionId: null });
    const batch: Promise<unknown>[] = [];
    for (let i = 0; i < perSession && written < ENTRIES; i++, written++) {
      const [method, payload] = i === 0 ? ['steps/sessionStart', {}] as [string, Record<string, unknown>] : STEPS[i % STEPS.length];
      const requestId = randomUUID();
      const params = {
        acs_version: '0.1.0', request_id: requestId, timestamp: new Date(base + s * 60_000 + i * 100).toISOString(),
        metadata: { agent_id: `bench-agent-${s % 10}`, session_id: sessionId }, payload,
        signature: { algorithm: 'HMAC-SHA256', value: 'AAAA', key_id: 'default' },
      };
      batch.push(store.appendContextEntry(sessionId, {
        content: { entry_id: requestId, step_id: requestId, step_type: method, request_hash: computeRequestHash(params), timestamp: params.timestamp },
        params: params as unknown as Json,
      }).then((a) => store.recordDecision(sessionId, a.seq, {
        result: { type: 'final', acs_version: '0.1.0', request_id: requestId, decision: 'allow', reason_codes: [], policy_references: [] },
        bundleRevision: 'bench-recorded', evaluationDurationMs: 1,
      })));
    }
    await Promise.all(batch);
  }
  await store.flush();
  console.log(`  populated ${written} entries in ${SESSIONS} sessions: ${((performance.now() - started) / 1000).toFixed(1)} s`);
  return written;
}

async function libraryBundle(): Promise<Uint8Array> {
  if (existsSync('bundles/acs.tar.gz')) return new Uint8Array(readFileSync('bundles/acs.tar.gz'));
  return (await buildLibraryBundle()).bundle;
}

async function bench(driver: 'pglite' | 'postgres', bundle: Uint8Array): Promise<void> {
  const schema = `replay_bench_${process.pid}`;
  const store = driver === 'pglite' ? await openStore({ inMemory: true }) : await openStore({ databaseUrl: DATABASE_URL, schema });
  try {
    console.log(`${driver}:`);
    const total = await populate(store);
    const engine = await createWasmPolicyEngine({ bundle, timeoutMs: 2000 });
    const policy = await resolveReplayPolicy(store, engine);
    global.gc?.();
    const rssStart = process.memoryUsage().rss;
    let peak = rssStart;
    const samples: string[] = [];
    let nextMark = 0.1;
    const timer = setInterval(() => (peak = Math.max(peak, process.memoryUsage().rss)), 50);
    const report = await runReplay({
      store, policy, maxReportedSteps: 1000, pageSize: 500,
      onProgress: (p) => {
        peak = Math.max(peak, process.memoryUsage().rss);
        while (p.total && p.processed / p.total >= nextMark) {
          const m = process.memoryUsage();
          samples.push(`${Math.round((p.processed / p.total) * 100)}%: rss ${(m.rss / 2 ** 20).toFixed(0)} heap ${(m.heapUsed / 2 ** 20).toFixed(0)} MiB`);
          nextMark += 0.2;
        }
      },
    });
    clearInterval(timer);
    const s = report.summary;
    console.log(`  replayed ${s.entriesScanned}/${total} entries in ${(s.durationMs / 1000).toFixed(1)} s: ${s.entriesPerSecond} entries/s (${s.changed} changed, ${report.stepsOmitted} steps beyond the report cap)`);
    console.log(`  RSS start ${(rssStart / 2 ** 20).toFixed(0)} MiB, peak ${(peak / 2 ** 20).toFixed(0)} MiB; along the run: ${samples.join(', ')}`);
  } finally {
    if (driver === 'postgres') await store.query(`drop schema if exists "${schema}" cascade`).catch(() => {});
    await store.close();
  }
}

const bundle = await libraryBundle();
console.log(`replay bench: ${ENTRIES} entries, ${SESSIONS} sessions, ACS library bundle`);
if (DRIVER === 'pglite' || DRIVER === 'both') await bench('pglite', bundle);
if (DRIVER === 'postgres' || DRIVER === 'both') await bench('postgres', bundle);
