// PQC signing off the event loop (node:worker_threads): correctness under concurrent load, the worker's
// algorithm table agreeing with the main thread's, the event loop staying free, failure and shutdown behaviour.
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  createSignatureRegistry,
  generateKeyFile,
  PqcPoolSaturatedError,
  PqcWorkerPool,
  type PqcAlgorithm,
} from '../../src/crypto/index.ts';
import { generatePqcKeyPair, signPqc, verifyPqc, type PqcKeyPair } from '../../src/crypto/pqc.ts';

const msg = (i: number) => new TextEncoder().encode(`{"request_id":"r-${i}","payload":{"n":${i}}}`);
let pool: PqcWorkerPool;
const keys = new Map<PqcAlgorithm, PqcKeyPair>();

beforeAll(() => {
  pool = new PqcWorkerPool({ size: 2 });
  for (const alg of ['ML-DSA-44', 'ML-DSA-65', 'ML-DSA-87', 'SLH-DSA-128f', 'SLH-DSA-128s'] as const) {
    keys.set(alg, generatePqcKeyPair(alg, new Uint8Array(alg.startsWith('ML') ? 32 : 48).fill(3)));
  }
});
afterAll(async () => {
  await pool?.close();
});

describe('worker and main thread agree on every PQC algorithm', () => {
  for (const alg of ['ML-DSA-44', 'ML-DSA-65', 'ML-DSA-87', 'SLH-DSA-128f', 'SLH-DSA-128s'] as const) {
    it(`${alg}: signed in a worker verifies in the main thread${alg === 'SLH-DSA-128s' ? '' : ', and the reverse'}`, async () => {
      const k = keys.get(alg)!;
      const sig = await pool.sign(alg, k.signingKey, msg(1));
      expect(verifyPqc(alg, k.publicKey, msg(1), sig)).toBe(true);
      expect(await pool.verify(alg, k.publicKey, msg(2), sig)).toBe(false);
      if (alg !== 'SLH-DSA-128s') {
        // 128s signing costs ~2 s in-thread; one direction is enough for it.
        const local = signPqc(alg, k.signingKey, msg(3));
        expect(await pool.verify(alg, k.publicKey, msg(3), local)).toBe(true);
      }
    }, 240_000);
  }
});

describe('under load', () => {
  it('48 concurrent ML-DSA-65 signatures over distinct inputs all verify, spread over both workers', async () => {
    const k = keys.get('ML-DSA-65')!;
    const jobs = Array.from({ length: 48 }, (_, i) => pool.sign('ML-DSA-65', k.signingKey, msg(i)));
    expect(pool.inFlight).toBe(48);
    const sigs = await Promise.all(jobs);
    expect(pool.inFlight).toBe(0);
    sigs.forEach((sig, i) => {
      expect(verifyPqc('ML-DSA-65', k.publicKey, msg(i), sig)).toBe(true);
      // Replies are matched to their job: signature i must not verify input i+1.
      expect(verifyPqc('ML-DSA-65', k.publicKey, msg(i + 1), sig)).toBe(false);
    });
  });

  it('the event loop keeps running while the pool signs; in-thread signing blocks it', async () => {
    const file = generateKeyFile('SLH-DSA-128f', { keyId: 'slh' });
    const input = msg(0);
    const run = async (workerPool: boolean) => {
      const registry = createSignatureRegistry({ keys: [file], workerPool: workerPool ? { size: 1 } : false });
      let ticks = 0;
      const timer = setInterval(() => ticks++, 1);
      let ticksWhenFirstDone = -1;
      const jobs = Array.from({ length: 3 }, () =>
        registry.sign('SLH-DSA-128f', input, { sessionId: 's' }).then((sig) => {
          if (ticksWhenFirstDone < 0) ticksWhenFirstDone = ticks;
          return sig;
        }),
      );
      const sigs = await Promise.all(jobs);
      clearInterval(timer);
      for (const sig of sigs) expect(await registry.verify(sig, input, { sessionId: 's' })).toBe(true);
      await registry.close();
      return ticksWhenFirstDone;
    };
    // In-thread: all three signatures are computed before any timer callback can run.
    expect(await run(false)).toBe(0);
    // Pool: each ~100 ms signature runs in the worker while 1 ms timers keep firing on the main thread.
    expect(await run(true)).toBeGreaterThan(5);
  });
});

describe('failure and shutdown', () => {
  it('a job the worker refuses rejects with a message, and the pool keeps working', async () => {
    await expect(pool.sign('ML-DSA-99' as PqcAlgorithm, new Uint8Array(4), msg(0))).rejects.toThrow(
      /unsupported PQC algorithm ML-DSA-99/,
    );
    await expect(pool.sign('ML-DSA-65', new Uint8Array(5), msg(0))).rejects.toThrow(/PQC sign failed/);
    const k = keys.get('ML-DSA-44')!;
    expect(verifyPqc('ML-DSA-44', k.publicKey, msg(5), await pool.sign('ML-DSA-44', k.signingKey, msg(5)))).toBe(true);
  });

  it('a worker that dies fails its in-flight jobs and is replaced for the next ones', async () => {
    const p = new PqcWorkerPool({ size: 1, workerUrl: new URL('./fixtures/dying-pq-worker.ts', import.meta.url) });
    const k = keys.get('ML-DSA-44')!;
    expect(verifyPqc('ML-DSA-44', k.publicKey, msg(1), await p.sign('ML-DSA-44', k.signingKey, msg(1)))).toBe(true);
    const poison = new Uint8Array([0xff, 1, 2]);
    const doomed = [p.sign('ML-DSA-44', k.signingKey, poison), p.sign('ML-DSA-44', k.signingKey, msg(2))];
    const settled = await Promise.allSettled(doomed);
    expect(settled.map((r) => r.status)).toEqual(['rejected', 'rejected']);
    expect(String((settled[0] as PromiseRejectedResult).reason)).toMatch(/PQC worker exited with code 3/);
    expect(p.inFlight).toBe(0);
    expect(verifyPqc('ML-DSA-44', k.publicKey, msg(4), await p.sign('ML-DSA-44', k.signingKey, msg(4)))).toBe(true);
    await p.close();
  });

  it('close() rejects in-flight jobs and later calls', async () => {
    const p = new PqcWorkerPool({ size: 1 });
    const k = keys.get('ML-DSA-87')!;
    const pending = expect(p.sign('ML-DSA-87', k.signingKey, msg(0))).rejects.toThrow(/closed/);
    await p.close();
    await pending;
    await expect(p.sign('ML-DSA-87', k.signingKey, msg(0))).rejects.toThrow(/closed/);
  });

  it('rejects at once beyond maxInFlight instead of queueing without bound', async () => {
    const p = new PqcWorkerPool({ size: 1, maxInFlight: 2 });
    const k = keys.get('ML-DSA-44')!;
    const first = [p.sign('ML-DSA-44', k.signingKey, msg(1)), p.sign('ML-DSA-44', k.signingKey, msg(2))];
    await expect(p.sign('ML-DSA-44', k.signingKey, msg(3))).rejects.toThrow(PqcPoolSaturatedError);
    const sigs = await Promise.all(first);
    expect(verifyPqc('ML-DSA-44', k.publicKey, msg(2), sigs[1])).toBe(true);
    // Capacity frees up once jobs finish.
    expect(verifyPqc('ML-DSA-44', k.publicKey, msg(3), await p.sign('ML-DSA-44', k.signingKey, msg(3)))).toBe(true);
    await p.close();
  });

  it('a saturated pool still verifies correctly (falls back to the calling thread)', async () => {
    const file = generateKeyFile('ML-DSA-65', { keyId: 'sat' });
    const registry = createSignatureRegistry({ keys: [file], workerPool: { size: 1, maxInFlight: 1 } });
    const sig = await registry.sign('ML-DSA-65', msg(0), { sessionId: 's' });
    const results = await Promise.all(
      Array.from({ length: 6 }, (_, i) => registry.verify(sig, msg(i % 2), { sessionId: 's' })),
    );
    expect(results).toEqual([true, false, true, false, true, false]);
    // Signing, in contrast, refuses when saturated.
    const signs = await Promise.allSettled([
      registry.sign('ML-DSA-65', msg(1), { sessionId: 's' }),
      registry.sign('ML-DSA-65', msg(2), { sessionId: 's' }),
    ]);
    expect(signs.map((r) => r.status)).toEqual(['fulfilled', 'rejected']);
    await registry.close();
  });

  it('refuses nonsensical pool sizes', () => {
    expect(() => new PqcWorkerPool({ maxInFlight: 0 })).toThrow(/maxInFlight/);
    expect(() => new PqcWorkerPool({ size: 0 })).toThrow(/1\.\.64/);
    expect(() => new PqcWorkerPool({ size: 1.5 })).toThrow(/1\.\.64/);
  });

  it('an idle pool does not keep the process alive', () => {
    const dir = mkdtempSync(join(tmpdir(), 'acs-pool-'));
    try {
      const registryUrl = new URL('../../src/crypto/index.ts', import.meta.url).href;
      const script = join(dir, 'idle.mts');
      writeFileSync(
        script,
        `import { createSignatureRegistry, generateKeyFile } from ${JSON.stringify(registryUrl)};\n` +
          `const r = createSignatureRegistry({ keys: [generateKeyFile('ML-DSA-65', { keyId: 'k' })] });\n` +
          `const sig = await r.sign('ML-DSA-65', 'x', { sessionId: 's' });\n` +
          `console.log(await r.verify(sig, 'x', { sessionId: 's' }));\n`, // no close(): the process must still exit
      );
      const root = fileURLToPath(new URL('../../', import.meta.url));
      const run = spawnSync(process.execPath, ['--import', 'tsx', script], {
        cwd: root,
        encoding: 'utf8',
        timeout: 30_000,
      });
      expect(run.signal).toBeNull();
      expect(run.stdout.trim()).toBe('true');
      expect(run.status).toBe(0);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
