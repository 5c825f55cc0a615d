// ML-DSA-65 signing costs ~6–10 ms and SLH-DSA-128s ~2 s of pure-JS CPU (engineering notes): done on the main
// thread that stalls every other request. This pool runs PQC sign/verify in node:worker_threads. Workers start
// lazily, take the least-loaded slot, are unref'd while idle (an idle pool never keeps the process alive) and are
// replaced if one dies; its in-flight jobs fail rather than hang.
import { availableParallelism } from 'node:os';
import { Worker } from 'node:worker_threads';
import type { PqcAlgorithm } from './algorithms.ts';

export interface PqcWorkerPoolOptions {
  /** Number of worker threads; default max(1, min(4, cores − 1)). */
  size?: number;
  /**
   * Most jobs waiting or running at once (default 4096). Beyond it new jobs reject at once with
   * PqcPoolSaturatedError instead of queueing without bound (a flood of SLH-DSA requests must not exhaust memory).
   */
  maxInFlight?: number;
  /** Worker script; default ./pq-worker.mjs. Tests use it to inject a worker that dies. */
  workerUrl?: URL;
}

/** Thrown when the pool already holds `maxInFlight` jobs. */
export class PqcPoolSaturatedError extends Error {
  constructor(limit: number) {
    super(`PQC worker pool saturated (${limit} jobs in flight)`);
    this.name = 'PqcPoolSaturatedError';
  }
}

interface PendingJob {
  resolve(value: WorkerReply): void;
  reject(err: Error): void;
}

interface WorkerReply {
  id: number;
  ok: boolean;
  signature?: Uint8Array;
  valid?: boolean;
  error?: string;
}

interface Slot {
  worker: Worker;
  pending: Map<number, PendingJob>;
}

export function defaultPoolSize(): number {
  return Math.max(1, Math.min(4, availableParallelism() - 1));
}

export class PqcWorkerPool {
  readonly size: number;
  readonly maxInFlight: number;
  readonly #workerUrl: URL;
  readonly #slots: (Slot | undefined)[];
  #nextId = 1;
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
    this.#workerUrl = options.workerUrl ?? new URL('./pq-worker.mjs', import.meta.url);
    this.#slots = new Array<Slot | undefined>(size).fill(undefined);
  }

  /** Jobs currently submitted and not yet answered, across all workers. */
  get inFlight(): number {
    return this.#slots.reduce((n, s) => n + (s?.pending.size ?? 0), 0);
  }

  async sign(algorithm: PqcAlgorithm, signingKey: Uint8Array, input: Uint8Array): Promise<Uint8Array> {
    const reply = await this.#run({ op: 'sign', algorithm, key: signingKey, input });
    if (!reply.signature) throw new Error('PQC worker returned no signature');
    return reply.signature;
  }

  /** Resolves false (never rejects) when the signature does not verify; rejects only if the pool itself fails. */
  async verify(
    algorithm: PqcAlgorithm,
    publicKey: Uint8Array,
    input: Uint8Array,
    signature: Uint8Array,
  ): Promise<boolean> {
    const reply = await this.#run({ op: 'verify', algorithm, key: publicKey, input, signature });
    return reply.valid === true;
  }

  /** Terminates every worker; pending jobs are rejected. */
  async close(): Promise<void> {
    this.#closed = true;
    const slots = this.#slots.splice(0, this.#slots.length, ...new Array<undefined>(this.size).fill(undefined));
    await Promise.all(
      slots.map(async (slot) => {
        if (!slot) return;
        this.#failAll(slot, new Error('PQC worker pool closed'));
        await slot.worker.terminate();
      }),
    );
  }

  async #run(job: {
    op: 'sign' | 'verify';
    algorithm: PqcAlgorithm;
    key: Uint8Array;
    input: Uint8Array;
    signature?: Uint8Array;
  }): Promise<WorkerReply> {
    if (this.#closed) throw new Error('PQC worker pool closed');
    if (this.inFlight >= this.maxInFlight) throw new PqcPoolSaturatedError(this.maxInFlight);
    const slot = this.#pickSlot();
    const id = this.#nextId++;
    const reply = await new Promise<WorkerReply>((resolve, reject) => {
      slot.pending.set(id, { resolve, reject });
      if (slot.pending.size === 1) slot.worker.ref();
      slot.worker.postMessage({ id, ...job });
    });
    if (!reply.ok) throw new Error(`PQC ${job.op} failed: ${reply.error ?? 'unknown error'}`);
    return reply;
  }

  #pickSlot(): Slot {
    let best = -1;
    let bestLoad = Infinity;
    for (let i = 0; i < this.#slots.length; i++) {
      const load = this.#slots[i]?.pending.size ?? 0;
      if (load < bestLoad) {
        best = i;
        bestLoad = load;
      }
      if (load === 0) break;
    }
    return this.#slots[best] ?? this.#spawn(best);
  }

  #spawn(index: number): Slot {
    const worker = new Worker(this.#workerUrl);
    worker.unref();
    const slot: Slot = { worker, pending: new Map() };
    worker.on('message', (reply: WorkerReply) => {
      const job = slot.pending.get(reply.id);
      if (!job) return;
      slot.pending.delete(reply.id);
      if (slot.pending.size === 0) worker.unref();
      job.resolve(reply);
    });
    const retire = (err: Error) => {
      if (this.#slots[index] === slot) this.#slots[index] = undefined;
      this.#failAll(slot, err);
    };
    worker.on('error', (err) => retire(err instanceof Error ? err : new Error(String(err))));
    worker.on('exit', (code) => retire(new Error(`PQC worker exited with code ${code}`)));
    this.#slots[index] = slot;
    return slot;
  }

  #failAll(slot: Slot, err: Error): void {
    for (const job of slot.pending.values()) job.reject(err);
    slot.pending.clear();
  }
}
