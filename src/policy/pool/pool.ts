// A pool of Wasm policy engines in worker threads: evaluation runs off the event loop and can be pre-empted —
// an evaluation that overruns its deadline (plus a grace period) has its worker terminated and replaced, which
// the in-process engine cannot do (opa-wasm is synchronous). Costs a message round trip per decision; see
// bench/policy.ts for the figures.
import { Worker } from 'node:worker_threads';
import type { PolicyEngine, PolicyEvaluation, PolicyInput, RawPolicyDecision } from '../types.ts';
import { PolicyEvaluationError, PolicyLoadError, type PolicyEvaluationErrorCode } from '../engine.ts';

export interface PolicyEnginePoolOptions {
  /** A bundle tarball or a bare Wasm module (bytes are copied to every worker). */
  bundle: Uint8Array;
  /** Worker threads (default 2). */
  size?: number;
  entrypoint?: string;
  maxInputBytes?: number;
  /** Deadline per evaluation (default 250 ms), enforced inside the worker and, hard, by the pool. */
  timeoutMs?: number;
  /** Extra time before the pool terminates a worker that did not answer (default 250 ms). */
  terminateGraceMs?: number;
  maxMemoryPages?: number;
  revision?: string;
  /** Most evaluations queued or running (default 1024); beyond it evaluate rejects at once. */
  maxInFlight?: number;
}

interface Pending {
  resolve(v: PolicyEvaluation): void;
  reject(e: Error): void;
  timer: NodeJS.Timeout;
}

interface Slot {
  worker: Worker;
  ready: Promise<string>;
  pending: Map<number, Pending>;
}

const BOOTSTRAP = new URL('./worker-bootstrap.mjs', import.meta.url);

export interface PolicyEnginePool extends PolicyEngine {
  readonly size: number;
  /** Workers terminated and replaced after an overrun or a crash. */
  readonly workerRestarts: number;
  close(): Promise<void>;
}

class Pool implements PolicyEnginePool {
  readonly size: number;
  private readonly slots: Slot[] = [];
  private nextId = 1;
  private restarts = 0;
  private inFlight = 0;
  private closed = false;
  revision = '';

  constructor(private readonly options: PolicyEnginePoolOptions) {
    this.size = Math.max(1, Math.floor(options.size ?? 2));
  }

  get workerRestarts(): number {
    return this.restarts;
  }

  private spawn(index: number): Slot {
    const worker = new Worker(BOOTSTRAP);
    const pending = new Map<number, Pending>();
    const ready = new Promise<string>((resolve, reject) => {
      const onMessage = (msg: { type: string; revision?: string; message?: string; id?: number; ok?: boolean; code?: PolicyEvaluationErrorCode; decision?: RawPolicyDecision; durationMs?: number }) => {
        if (msg.type === 'ready') resolve(msg.revision ?? '');
        else if (msg.type === 'init-error') reject(new PolicyLoadError(msg.message ?? 'worker failed to load the bundle'));
        else if (msg.type === 'result' && msg.id !== undefined) {
          const p = pending.get(msg.id);
          if (!p) return;
          pending.delete(msg.id);
          clearTimeout(p.timer);
          this.inFlight--;
          if (msg.ok) p.resolve({ decision: msg.decision, revision: msg.revision ?? this.revision, durationMs: msg.durationMs ?? 0 });
          else p.reject(new PolicyEvaluationError(msg.code ?? 'module_aborted', msg.message ?? 'evaluation failed'));
        }
      };
      worker.on('message', onMessage);
      worker.on('error', (err) => {
        reject(new PolicyLoadError(`policy worker failed: ${err.message}`));
        this.failSlot(index, worker, `policy worker failed: ${err.message}`);
      });
      worker.on('exit', () => this.failSlot(index, worker, 'policy worker exited'));
    });
    ready.catch(() => undefined);
    const { bundle: _b, size: _s, terminateGraceMs: _g, maxInFlight: _m, ...engineOptions } = this.options;
    worker.postMessage({ type: 'init', bundle: this.options.bundle, options: engineOptions });
    const slot = { worker, ready, pending };
    this.slots[index] = slot;
    return slot;
  }

  /** Rejects everything a dead worker held and replaces it (unless the pool is closing). */
  private failSlot(index: number, worker: Worker, why: string, code: PolicyEvaluationErrorCode = 'module_aborted'): void {
    const slot = this.slots[index];
    if (!slot || slot.worker !== worker) return;
    for (const [, p] of slot.pending) {
      clearTimeout(p.timer);
      this.inFlight--;
      p.reject(new PolicyEvaluationError(code, why));
    }
    slot.pending.clear();
    if (!this.closed) {
      this.restarts++;
      this.spawn(index);
    }
  }

  async start(): Promise<void> {
    for (let i = 0; i < this.size; i++) this.spawn(i);
    const revisions = await Promise.all(this.slots.map((s) => s.ready));
    this.revision = revisions[0];
  }

  async evaluate(input: PolicyInput, options?: { entrypoint?: string; now?: Date }): Promise<PolicyEvaluation> {
    if (this.closed) throw new PolicyEvaluationError('module_aborted', 'policy engine pool is closed');
    if (this.inFlight >= (this.options.maxInFlight ?? 1024)) throw new PolicyEvaluationError('timeout', 'policy engine pool saturated');
    let index = 0;
    for (let i = 1; i < this.slots.length; i++) if (this.slots[i].pending.size < this.slots[index].pending.size) index = i;
    const slot = this.slots[index];
    await slot.ready;
    const id = this.nextId++;
    const hardMs = (this.options.timeoutMs ?? 250) + (this.options.terminateGraceMs ?? 250);
    return new Promise<PolicyEvaluation>((resolve, reject) => {
      const timer = setTimeout(() => {
        // The worker is stuck past its own deadline: pre-empt it. Every evaluation it held fails closed.
        const worker = slot.worker;
        this.failSlot(index, worker, `evaluation exceeded ${hardMs} ms; policy worker terminated`, 'timeout');
        void worker.terminate();
      }, hardMs);
      slot.pending.set(id, { resolve, reject, timer });
      this.inFlight++;
      slot.worker.postMessage({ type: 'eval', id, input, entrypoint: options?.entrypoint, now: (options?.now ?? new Date()).toISOString() });
    });
  }

  async close(): Promise<void> {
    this.closed = true;
    await Promise.all(this.slots.map((s) => s.worker.terminate()));
  }
}

/** Starts the workers and loads the bundle in each; rejects with PolicyLoadError when a worker cannot load it. */
export async function createPolicyEnginePool(options: PolicyEnginePoolOptions): Promise<PolicyEnginePool> {
  const pool = new Pool(options);
  try {
    await pool.start();
  } catch (err) {
    await pool.close();
    throw err;
  }
  return pool;
}
