// Signature costs per ACS §10.1 algorithm, and what PQC signing does to the event loop with and without the
// worker pool. Run: `npm run bench crypto` (or `node --import tsx bench/crypto.ts`). BENCH_SECONDS scales the
// time spent per measurement (default 1).
import { monitorEventLoopDelay } from 'node:perf_hooks';
import {
  createSignatureRegistry,
  envelopeSigningInput,
  generateKeyFile,
  SIGNATURE_ALGORITHMS,
  type SignatureAlgorithm,
} from '../src/crypto/index.ts';

const budgetMs = 1000 * Number(process.env.BENCH_SECONDS ?? 1);
const sessionId = '5c3f1b8e-9a0d-4c2e-8f4b-2d6a7e9c1b30';
const input = envelopeSigningInput({
  jsonrpc: '2.0',
  id: 1,
  method: 'steps/toolCallRequest',
  params: {
    acs_version: '0.1.0',
    request_id: '0b6e8f0e-2f7c-4f43-9d6f-6c7d2d1f9a10',
    timestamp: '2026-11-29T12:00:00.000Z',
    metadata: { agent_id: 'agent-7', session_id: sessionId },
    payload: { tool: { name: 'shell', arguments: { cmd: 'ls -la /tmp' } }, note: 'x'.repeat(400) },
  },
});

const keys = SIGNATURE_ALGORITHMS.filter((a) => a !== 'HMAC-SHA256').map((a) =>
  generateKeyFile(a, { keyId: `bench-${a}`, rsaModulusBits: 3072 }),
);
const hmacIkm = new Uint8Array(32).fill(7);

/** Runs `op` sequentially until the budget is spent (at least `min` times); returns ops/s and p50. */
async function measure(op: () => Promise<unknown>, min = 3): Promise<{ opsPerSec: number; p50Ms: number; n: number }> {
  const times: number[] = [];
  const start = performance.now();
  while (times.length < min || performance.now() - start < budgetMs) {
    const t = performance.now();
    await op();
    times.push(performance.now() - t);
    if (times.length >= 100_000) break;
  }
  const total = performance.now() - start;
  times.sort((a, b) => a - b);
  return { opsPerSec: (times.length * 1000) / total, p50Ms: times[times.length >> 1], n: times.length };
}

const fmt = (n: number) => (n >= 100 ? n.toFixed(0) : n >= 10 ? n.toFixed(1) : n.toFixed(2));

async function perAlgorithm(): Promise<void> {
  // In-thread figures: the raw cost of each algorithm (what the pool moves off the event loop).
  const registry = createSignatureRegistry({ keys, hmacIkm, workerPool: false });
  console.log(`\nper algorithm, in-thread, ${input.length}-byte canonical envelope (sequential)`);
  console.log('algorithm                  sign ops/s  sign p50 ms  verify ops/s  verify p50 ms  signature bytes');
  for (const alg of SIGNATURE_ALGORITHMS) {
    const sig = await registry.sign(alg, input, { sessionId });
    const slow = alg === 'SLH-DSA-128s';
    const s = await measure(() => registry.sign(alg, input, { sessionId }), slow ? 2 : 3);
    const v = await measure(() => registry.verify(sig, input, { sessionId }));
    const bytes = Buffer.from(sig.value, 'base64').length;
    console.log(
      `${alg.padEnd(26)} ${fmt(s.opsPerSec).padStart(10)}  ${fmt(s.p50Ms).padStart(11)}  ${fmt(v.opsPerSec).padStart(12)}  ${fmt(v.p50Ms).padStart(13)}  ${String(bytes).padStart(15)}`,
    );
  }
  await registry.close();
}

/**
 * Event-loop delay while a stream of ML-DSA-65 signatures is produced, the way a server signing responses would:
 * `concurrency` requests in flight. With the pool the main thread only posts messages.
 */
async function eventLoop(
  algorithm: SignatureAlgorithm,
  workerPool: boolean | { size: number },
  total: number,
  concurrency: number,
): Promise<void> {
  const registry = createSignatureRegistry({ keys, hmacIkm, workerPool });
  await registry.sign(algorithm, input, { sessionId }); // warm-up (worker start, JIT)
  const histogram = monitorEventLoopDelay({ resolution: 1 });
  histogram.enable();
  const start = performance.now();
  let next = 0;
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next < total) {
        next++;
        await registry.sign(algorithm, input, { sessionId });
        // Yield like a server between requests so timers can run when the thread is free.
        await new Promise((r) => setImmediate(r));
      }
    }),
  );
  const elapsed = performance.now() - start;
  histogram.disable();
  const ms = (ns: number) => (ns / 1e6).toFixed(1);
  const label =
    workerPool === false ? 'in-thread' : `pool(${typeof workerPool === 'object' ? workerPool.size : 'default'})`;
  console.log(
    `${algorithm.padEnd(12)} ${label.padEnd(10)} ${String(total).padStart(5)} signs, ${concurrency} in flight: ${fmt((total * 1000) / elapsed).padStart(6)} signs/s   event-loop delay p50 ${ms(histogram.percentile(50))} ms  p99 ${ms(histogram.percentile(99))} ms  max ${ms(histogram.max)} ms`,
  );
  await registry.close();
}

console.log(`crypto bench: node ${process.version}, budget ${budgetMs} ms per measurement`);
await perAlgorithm();
console.log('\nevent-loop delay while signing (monitorEventLoopDelay, 1 ms resolution)');
const n = Math.max(20, Math.round(60 * (budgetMs / 1000)));
await eventLoop('ML-DSA-65', false, n, 8);
await eventLoop('ML-DSA-65', { size: 1 }, n, 8);
await eventLoop('ML-DSA-65', { size: 2 }, n, 8);
await eventLoop('SLH-DSA-128f', false, 6, 2);
await eventLoop('SLH-DSA-128f', { size: 2 }, 6, 2);
