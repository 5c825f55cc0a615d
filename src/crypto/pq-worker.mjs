// Worker thread for PQC sign/verify (see worker-pool.ts). Plain JavaScript so it starts without a TypeScript
// loader in every runtime (tsx CLI, vitest, plain node). The algorithm table must match pqc.ts; the tests
// cross-check by signing here and verifying in the main thread and vice versa.
import { parentPort } from 'node:worker_threads';
import { ml_dsa44, ml_dsa65, ml_dsa87 } from '@noble/post-quantum/ml-dsa.js';
import { slh_dsa_sha2_128f, slh_dsa_sha2_128s } from '@noble/post-quantum/slh-dsa.js';

const NOBLE = {
  'ML-DSA-44': ml_dsa44,
  'ML-DSA-65': ml_dsa65,
  'ML-DSA-87': ml_dsa87,
  'SLH-DSA-128s': slh_dsa_sha2_128s,
  'SLH-DSA-128f': slh_dsa_sha2_128f,
};

parentPort.on('message', (job) => {
  try {
    const noble = NOBLE[job.algorithm];
    if (!noble) throw new Error(`unsupported PQC algorithm ${String(job.algorithm)}`);
    if (job.op === 'sign') {
      const signature = noble.sign(job.input, job.key);
      parentPort.postMessage({ id: job.id, ok: true, signature }, [signature.buffer]);
    } else if (job.op === 'verify') {
      let valid = false;
      try {
        valid = noble.verify(job.signature, job.input, job.key) === true;
      } catch {
        valid = false;
      }
      parentPort.postMessage({ id: job.id, ok: true, valid });
    } else {
      throw new Error(`unknown operation ${String(job.op)}`);
    }
  } catch (err) {
    // Only the message crosses the thread boundary: no key material is ever echoed back.
    parentPort.postMessage({ id: job.id, ok: false, error: err instanceof Error ? err.message : String(err) });
  }
});
