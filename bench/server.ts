// bench/server.ts — the ACS front door end to end: SDK client → HTTP POST /acs → validate → verify HMAC →
// session/replay → chain append → Wasm policy → sign → answer. Store: Postgres when BENCH_DATABASE_URL is set,
// else PGlite in memory. Policy: bundles/acs.tar.gz (the compiled rego/ library).
// Env: BENCH_STEPS (sequential steps, default 300), BENCH_SESSIONS × BENCH_STEPS_PER_SESSION for the
// concurrent run (default 8 × 50).
import { performance } from 'node:perf_hooks';
import { AcsClient, httpTransport } from '../src/client/index.ts';
import { createSignatureRegistry } from '../src/crypto/index.ts';
import { createGuardian } from '../src/acs/pipeline/index.ts';
import { cryptoEnvelopeSignatures } from '../src/acs/signing/index.ts';
import { loadPolicyEngine } from '../src/server/app.ts';
import { startHttpServer } from '../src/server/http.ts';
import { openStore } from '../src/store/index.ts';

const STEPS = Number(process.env.BENCH_STEPS ?? 300);
const SESSIONS = Number(process.env.BENCH_SESSIONS ?? 8);
const PER_SESSION = Number(process.env.BENCH_STEPS_PER_SESSION ?? 50);
const ikm = new Uint8Array(32).fill(7);

const pct = (xs: number[], p: number): number => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))];
};
const fmt = (xs: number[]): string => `p50 ${pct(xs, 50).toFixed(2)} ms  p95 ${pct(xs, 95).toFixed(2)} ms  p99 ${pct(xs, 99).toFixed(2)} ms  (n=${xs.length})`;

const store = await openStore(process.env.BENCH_DATABASE_URL ? { databaseUrl: process.env.BENCH_DATABASE_URL, schema: `bench_server_${process.pid}` } : { inMemory: true });
const registry = createSignatureRegistry({ hmacIkm: ikm, workerPool: false });
const { engine, source } = await loadPolicyEngine({});
const guardian = createGuardian({ store, engine, signatures: cryptoEnvelopeSignatures(registry) });
const server = await startHttpServer(guardian, { port: 0 });
console.log(`store ${store.driver}, policy ${source}`);

const METHODS = ['steps/sessionStart', 'steps/userMessage', 'steps/toolCallRequest', 'system/ping'];
const tool = { tool: { name: 'shell' }, arguments: { command: { value: 'ls -la /tmp' } } };
const newClient = (): AcsClient => new AcsClient({ transport: httpTransport(server.url), ikm, agentId: 'bench' });

// Warm-up (JIT, Wasm, connection pool).
{
  const c = newClient();
  await c.hello({ methods_implemented: METHODS });
  for (let i = 0; i < 30; i++) await c.step('steps/toolCallRequest', tool);
}

const hello: number[] = [];
for (let i = 0; i < 30; i++) {
  const c = newClient();
  const t = performance.now();
  await c.hello({ methods_implemented: METHODS });
  hello.push(performance.now() - t);
}
console.log(`handshake/hello            ${fmt(hello)}`);

const ping: number[] = [];
const pc = newClient();
for (let i = 0; i < 200; i++) {
  const t = performance.now();
  await pc.ping(i);
  ping.push(performance.now() - t);
}
console.log(`system/ping                ${fmt(ping)}`);

const seq: number[] = [];
const evalMs: number[] = [];
const c = newClient();
await c.hello({ methods_implemented: METHODS });
await c.step('steps/sessionStart', {});
for (let i = 0; i < STEPS; i++) {
  const t = performance.now();
  const out = await c.step('steps/toolCallRequest', tool);
  seq.push(performance.now() - t);
  if (out.failure) throw new Error(`step failed: ${out.failure.detail}`);
  evalMs.push(out.result?.metadata?.evaluation_duration_ms ?? 0);
}
console.log(`toolCallRequest sequential ${fmt(seq)}`);
console.log(`  of which policy eval     ${fmt(evalMs)} (result.metadata, whole ms)`);

const clients = await Promise.all(
  Array.from({ length: SESSIONS }, async () => {
    const k = newClient();
    await k.hello({ methods_implemented: METHODS });
    return k;
  }),
);
const t0 = performance.now();
await Promise.all(
  clients.map(async (k) => {
    for (let i = 0; i < PER_SESSION; i++) {
      const out = await k.step('steps/toolCallRequest', tool);
      if (out.failure) throw new Error(`step failed: ${out.failure.detail}`);
    }
  }),
);
const elapsed = (performance.now() - t0) / 1000;
console.log(`concurrent ${SESSIONS} sessions × ${PER_SESSION} steps: ${(SESSIONS * PER_SESSION / elapsed).toFixed(0)} steps/s (${elapsed.toFixed(2)} s)`);

await server.close();
await store.close();
await registry.close();
