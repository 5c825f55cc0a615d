// ML-DSA-65 and above all SLH-DSA signing are long stretches of pure-JS CPU (`npm run bench` times them): done on
// the main thread that stalls every other request. This pool runs PQC sign/verify in node:worker_threads. Workers start
// lazily, take the least-loaded slot, are unref'd while idle (an idle pool never keeps the process alive) and are
// replaced if one dies; its in-flight jobs fail rather than hang.
import { availableParallelism } from 'node:os';
import { WorkerRemoteError, WorkerThread } from '../worker-thread/index.ts';
import type { PqcAlgorithm } from './algorithms.ts';
import type { PqcWorkerProtocol } from './pq-worker.ts';

export interface PqcWorkerPoolOptions {
  /** Number of worker threads; default max(1, min(4, cores − 1)). */
  size?: number;
  /**
   * Most jobs waiting or running at once (default 4096). Beyond it new jobs reject at once with
   * PqcPoolSaturatedError instead of queueing without bound (a flood of SLH-DSA requests must not exhaust memory).
   */
  maxInFlight?: number;
  /** Worker entry; default ./pq-worker.ts (its compiled .js once built). Tests use it to inject a worker that dies. */
  workerUrl?: URL;
}

/** Thrown when the pool already holds `maxInFlight` jobs. */
export class PqcPoolSaturatedError extends Error {
  constructor(limit: number) {
    super(`PQC worker pool saturated (${limit} jobs in flight)`);
    this.name = 'PqcPoolSaturatedError';
  }
}

type Slot = WorkerThread<PqcWorkerProtocol>;

export function defaultPoolSize(): number {
  return Math.max(1, Math.min(4, availableParallelism() - 1));
}

export class PqcWorkerPool {
  readonly size: number;
  readonly maxInFlight: number;
  readonly #workerUrl: URL;
  readonly #slots: (Slot | undefined)[];
  #closed = false;

  constructor(options: PqcWorkerPoolOptions = {}) {
    const size = options.size ?? defaultPoolSize();
    if (!Number.isInteger(size) || size < 1 || size > 64)
      throw new Error(`worker pool size must be an integer 1..64, got ${size}`);
    this.size = size;
    const max = options.maxInFlight ?? 4096;
    if (!Number.isInteger(max) || max < 1)
      throw new Error(`worker pool maxInFlight must be a positive integer, got ${max}`);
    this.maxInFlight = max;
    this.#workerUrl = options.workerUrl ?? new URL('./pq-worker.ts', import.meta.url);
    this.#slots = new Array<Slot | undefined>(size).fill(undefined);
  }

  /** Jobs currently submitted and not yet answered, across all workers. */
  get inFlight(): number {
    return this.#slots.reduce((n, s) => n + (s?.pending ?? 0), 0);
  }

  sign(algorithm: PqcAlgorithm, signingKey: Uint8Array, input: Uint8Array): Promise<Uint8Array> {
    return this.#run('sign', { algorithm, key: signingKey, input });
  }

  /** Resolves false (never rejects) when the signature does not verify; rejects only if the pool itself fails. */
  verify(algorithm: PqcAlgorithm, publicKey: Uint8Array, input: Uint8Array, signature: Uint8Array): Promise<boolean> {
    return this.#run('verify', { algorithm, key: publicKey, input, signature });
  }

  /** Terminates every worker; pending jobs are rejected. */
  async close(): Promise<void> {
    this.#closed = true;
    const slots = this.#slots.splice(0, this.#slots.length, ...new Array<undefined>(this.size).fill(undefined));
    await Promise.all(slots.map((slot) => slot?.terminate(new Error('PQC worker pool closed'))));
  }

  async #run<K extends keyof PqcWorkerProtocol>(
    op: K,
    job: PqcWorkerProtocol[K]['request'],
  ): Promise<PqcWorkerProtocol[K]['response']> {
    if (this.#closed) throw new Error('PQC worker pool closed');
    if (this.inFlight >= this.maxInFlight) throw new PqcPoolSaturatedError(this.maxInFlight);
    try {
      return await this.#pickSlot().request(op, job);
    } catch (err) {
      if (err instanceof WorkerRemoteError) throw new Error(`PQC ${op} failed: ${err.message}`);
      throw err;
    }
  }

  #pickSlot(): Slot {
    let best = -1;
    let bestLoad = Infinity;
    for (let i = 0; i < this.#slots.length; i++) {
      const load = this.#slots[i]?.pending ?? 0;
      if (load < bestLoad) {
        best = i;
        bestLoad = load;
      }
      if (load === 0) break;
    }
    return this.#slots[best] ?? this.#spawn(best);
  }

  #spawn(index: number): Slot {
    const slot: Slot = new WorkerThread<PqcWorkerProtocol>(this.#workerUrl, {
      name: 'PQC worker',
      unrefWhenIdle: true,
      // A dead worker's jobs have failed; the next job starts a fresh one in this slot.
      onCrash: () => {
        if (this.#slots[index] === slot) this.#slots[index] = undefined;
      },
    });
    this.#slots[index] = slot;
    return slot;
  }
}
