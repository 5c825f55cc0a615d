// bench/crypto-e2e.ts — decisions/s end to end (SDK client → HTTP → verify → pipeline → sign → answer, durable
// PGlite store, the compiled rego/ library) with requests and answers signed under HMAC-SHA256, ECDSA-P256 and
// ML-DSA-65; then HMAC-signed traffic while chain checkpoints are signed with HMAC vs ML-DSA-65 (signed off the
// event loop by the PQC worker pool), to show the pool keeps HMAC traffic's latency where it was.
// Loopback only; each phase runs BENCH_SECONDS (default 5) and stops by itself.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { AcsClient, httpTransport } from '../src/client/index.ts';
import { cryptoEnvelopeSignatures } from '../src/acs/signing/index.ts';
import { createSignatureRegistry, generateKeyFile, publicPart, type SignatureAlgorithm } from '../src/crypto/index.ts';
import { openGuardianRuntime } from '../src/server/app.ts';
import { startHttpServer } from '../src/server/http.ts';
import { load, pct } from './fixtures/figures.ts';

const SECONDS = Number(process.env.BENCH_SECONDS ?? 5);
const SESSIONS = 16;
const CLIENTS = 16;
const IKM = new Uint8Array(32).fill(3);
const METHODS = ['steps/sessionStart', 'steps/toolCallRequest'];
const TOOL = { tool: { name: 'search' }, arguments: { q: { value: 'benchmarks' } } };

const agentKeys = {
  'ECDSA-P256': generateKeyFile('ECDSA-P256', { keyId: 'agent-ec', agentId: 'bench' }),
  'ML-DSA-65': generateKeyFile('ML-DSA-65', { keyId: 'agent-pq', agentId: 'bench' }),
};
const guardianKeys = {
  'ECDSA-P256': generateKeyFile('ECDSA-P256', { keyId: 'guardian-ec' }),
  'ML-DSA-65': generateKeyFile('ML-DSA-65', { keyId: 'guardian-pq' }),
};
const agentRegistry = createSignatureRegistry({
  hmacIkm: IKM,
  keys: [...Object.values(agentKeys), ...Object.values(guardianKeys).map(publicPart)],
});

async function run(
  label: string,
  requestAlgorithm: SignatureAlgorithm,
  checkpointAlgorithm: SignatureAlgorithm,
): Promise<void> {
  const dataDir = mkdtempSync(join(tmpdir(), 'bench-crypto-e2e-'));
  const env = {
    GUARDIAN_HMAC_IKM: Buffer.from(IKM).toString('base64'),
    GUARDIAN_KEYS: JSON.stringify([...Object.values(agentKeys).map(publicPart), ...Object.values(guardianKeys)]),
    GUARDIAN_CHECKPOINT_ALGORITHM: checkpointAlgorithm,
    // A checkpoint every 8 entries per chain: a few signatures per second at these rates.
    GUARDIAN_CHECKPOINT_EVERY_ENTRIES: '8',
    GUARDIAN_LIFECYCLE: 'off',
  };
  const runtime = await openGuardianRuntime({ dataDir, env, onAudit: () => {} });
  const server = await startHttpServer(runtime.guardian, { host: '127.0.0.1', port: 0 });
  try {
    const signatures =
      requestAlgorithm === 'HMAC-SHA256'
        ? { ikm: IKM }
        : {
            signatures: cryptoEnvelopeSignatures(agentRegistry, requestAlgorithm),
            keyId: requestAlgorithm === 'ML-DSA-65' ? 'agent-pq' : 'agent-ec',
          };
    const sessions: AcsClient[] = [];
    for (let i = 0; i < SESSIONS; i++) {
      const c = new AcsClient({ transport: httpTransport(server.url), agentId: 'bench', ...signatures });
      await c.hello({ methods_implemented: METHODS });
      await c.step('steps/sessionStart', {});
      sessions.push(c);
    }
    const latencies: number[] = [];
    const deadline = performance.now() + SECONDS * 1000;
    const t0 = performance.now();
    await Promise.all(
      sessions.slice(0, CLIENTS).map(async (c) => {
        while (performance.now() < deadline) {
          const t = performance.now();
          const out = await c.step('steps/toolCallRequest', TOOL);
          if (out.failure) throw new Error(`${label}: ${JSON.stringify(out.failure).slice(0, 200)}`);
          latencies.push(performance.now() - t);
        }
      }),
    );
    const rate = latencies.length / ((performance.now() - t0) / 1000);
    console.log(
      `${label.padEnd(44)} ${rate.toFixed(0).padStart(5)} decisions/s  p50 ${pct(latencies, 50).toFixed(1)} ms  p99 ${pct(latencies, 99).toFixed(1)} ms  (load ${load()})`,
    );
  } finally {
    await server.close();
    await runtime.close();
    rmSync(dataDir, { recursive: true, force: true });
  }
}

console.log(
  `${SESSIONS} sessions, ${CLIENTS} concurrent clients, ${SECONDS} s per run, PGlite, answers verified by the SDK`,
);
await run('requests+answers HMAC-SHA256', 'HMAC-SHA256', 'HMAC-SHA256');
await run('requests+answers ECDSA-P256', 'ECDSA-P256', 'HMAC-SHA256');
await run('requests+answers ML-DSA-65', 'ML-DSA-65', 'HMAC-SHA256');
await run('HMAC traffic, HMAC checkpoints', 'HMAC-SHA256', 'HMAC-SHA256');
await run('HMAC traffic, ML-DSA-65 checkpoints (pool)', 'HMAC-SHA256', 'ML-DSA-65');
await agentRegistry.close();
