// A pool of Wasm policy engines in worker threads: evaluation runs off the event loop and can be pre-empted —
// an evaluation that overruns its deadline (plus a grace period) has its worker terminated and replaced, which
// the in-process engine cannot do (opa-wasm is synchronous). Costs a message round trip per decision
// (`npm run bench policy` compares the two).
//
// Bundle versions: every worker keeps an engine per loaded version. `loadVersion` loads a bundle into every
// worker and returns a handle whose evaluations run on that version only; `replaceBundle` (and the lifecycle's
// PolicySlot, through handles) switch which version new evaluations use in one synchronous step. An evaluation
// names its version when it is sent, so it finishes on the version it started with even if a swap happens
// meanwhile; a retired version is unloaded from the workers once its last evaluation has answered. A worker
// replaced after a crash or an overrun reloads every version still live.
import { WorkerCrashedError, WorkerRemoteError, WorkerThread } from '../../worker-thread/index.ts';
import type { PolicyEngine, PolicyEvaluation, PolicyInput } from '../types.ts';
import {
  PolicyEvaluationError,
  PolicyLoadError,
  type PolicyEvaluationErrorCode,
  type WasmBundleParts,
} from '../engine.ts';
import type { PolicyWorkerProtocol, WorkerEngineOptions } from './worker.ts';

export interface PolicyEnginePoolOptions {
  /**
   * A bundle tarball, a bare Wasm module, or parts already extracted (e.g. by the lifecycle's unpack worker:
   * module + base document text, so no worker reads the tarball again). Copied to every worker.
   */
  bundle: Uint8Array | WasmBundleParts;
  /** Worker threads (default 2). */
  size?: number;
  entrypoint?: string;
  maxInputBytes?: number;
  /** Deadline per evaluation (default 250 ms), enforced inside the worker and, hard, by the pool. */
  timeoutMs?: number;
  /** Extra time before the pool terminates a worker that did not answer (default 250 ms). */
  terminateGraceMs?: number;
  maxMemoryPages?: number;
  /** A deployment's custom builtins module (WasmPolicyEngineOptions.customBuiltinsModule): every worker imports it. */
  customBuiltinsModule?: string;
  revision?: string;
  /** Most evaluations queued or running (default 1024); beyond it evaluate rejects at once. */
  maxInFlight?: number;
}

/** One bundle version loaded in every worker of a pool. */
export interface PooledPolicyVersion extends PolicyEngine {
  /** Pool-wide version number (1 = the bundle the pool started with). */
  readonly id: number;
  /** Evaluations sent on this version that have not answered yet. */
  readonly inFlight: number;
  /** True once unloaded from the workers (after retire() and its last evaluation). */
  readonly unloaded: boolean;
  /** No new evaluations after this; unloaded from the workers once those in flight have answered. */
  retire(): void;
}

interface Deferred {
  promise: Promise<void>;
  resolve(): void;
  reject(e: Error): void;
}

interface WorkerSlot {
  thread: WorkerThread<PolicyWorkerProtocol>;
  /** Per version: settles when this worker has loaded it. */
  loads: Map<number, Deferred>;
  /** Evaluations sent to this worker and not answered yet. */
  evaluating: number;
}

interface VersionEntry {
  id: number;
  bundle: Uint8Array | WasmBundleParts;
  revisionOverride: string | undefined;
  revision: string;
  inFlight: number;
  retired: boolean;
  unloaded: boolean;
}

const ENTRY = new URL('./worker.ts', import.meta.url);

function deferred(): Deferred {
  let resolve!: () => void;
  let reject!: (e: Error) => void;
  const promise = new Promise<void>((res, rej) => {
    resolve = res;
    reject = rej;
  });
  promise.catch(() => undefined);
  return { promise, resolve, reject };
}

export interface PolicyEnginePool extends PolicyEngine {
  readonly size: number;
  /** Workers terminated and replaced after an overrun or a crash. */
  readonly workerRestarts: number;
  /** The version new evaluations of `evaluate` run on. */
  readonly current: PooledPolicyVersion;
  /** Versions loaded in the workers (the current one, retired ones still answering, loaded but unused ones). */
  readonly loadedVersions: number;
  /** Loads a bundle into every worker; rejects with PolicyLoadError (nothing stays loaded) when one cannot load it. */
  loadVersion(bundle: Uint8Array | WasmBundleParts, options?: { revision?: string }): Promise<PooledPolicyVersion>;
  /** Loads a bundle and makes it current; the previous version finishes its evaluations, then is unloaded. */
  replaceBundle(bundle: Uint8Array | WasmBundleParts, options?: { revision?: string }): Promise<void>;
  close(): Promise<void>;
}

class PooledVersion implements PooledPolicyVersion {
  constructor(
    private readonly pool: Pool,
    readonly entry: VersionEntry,
  ) {}
  get id(): number {
    return this.entry.id;
  }
  get revision(): string {
    return this.entry.revision;
  }
  get inFlight(): number {
    return this.entry.inFlight;
  }
  get unloaded(): boolean {
    return this.entry.unloaded;
  }
  evaluate(input: PolicyInput, options?: { entrypoint?: string; now?: Date }): Promise<PolicyEvaluation> {
    return this.pool.evaluateOn(this.entry, input, options);
  }
  retire(): void {
    this.pool.retire(this.entry);
  }
}

class Pool implements PolicyEnginePool {
  readonly size: number;
  private readonly slots: WorkerSlot[] = [];
  private readonly versions = new Map<number, VersionEntry>();
  private currentVersion!: PooledVersion;
  private nextVersion = 1;
  private restarts = 0;
  private inFlight = 0;
  private closed = false;

  constructor(private readonly options: PolicyEnginePoolOptions) {
    this.size = Math.max(1, Math.floor(options.size ?? 2));
  }

  get workerRestarts(): number {
    return this.restarts;
  }
  get revision(): string {
    return this.currentVersion.revision;
  }
  get current(): PooledPolicyVersion {
    return this.currentVersion;
  }
  get loadedVersions(): number {
    return this.versions.size;
  }

  private engineOptions(revision: string | undefined): WorkerEngineOptions {
    const { entrypoint, maxInputBytes, timeoutMs, maxMemoryPages, customBuiltinsModule } = this.options;
    return {
      ...(customBuiltinsModule !== undefined ? { customBuiltinsModule } : {}),
      ...(entrypoint !== undefined ? { entrypoint } : {}),
      ...(maxInputBytes !== undefined ? { maxInputBytes } : {}),
      ...(timeoutMs !== undefined ? { timeoutMs } : {}),
      ...(maxMemoryPages !== undefined ? { maxMemoryPages } : {}),
      ...(revision !== undefined ? { revision } : {}),
    };
  }

  private postLoad(slot: WorkerSlot, v: VersionEntry): Deferred {
    const d = deferred();
    slot.loads.set(v.id, d);
    slot.thread
      .request('load', { version: v.id, bundle: v.bundle, options: this.engineOptions(v.revisionOverride) })
      .then(
        ({ revision }) => {
          const live = this.versions.get(v.id);
          if (live && revision) live.revision = revision;
          d.resolve();
        },
        (err: Error) => d.reject(err instanceof PolicyLoadError ? err : new PolicyLoadError(err.message)),
      );
    return d;
  }

  private spawn(index: number): WorkerSlot {
    const thread: WorkerThread<PolicyWorkerProtocol> = new WorkerThread(ENTRY, {
      name: 'policy worker',
      onCrash: () => this.replaceSlot(index, thread),
    });
    const slot: WorkerSlot = { thread, loads: new Map(), evaluating: 0 };
    this.slots[index] = slot;
    // A replacement worker reloads every version still live (the current one and those still answering).
    for (const v of this.versions.values()) this.postLoad(slot, v);
    return slot;
  }

  /** Replaces a dead (or pre-empted) worker unless the pool is closing; its requests have already failed. */
  private replaceSlot(index: number, thread: WorkerThread<PolicyWorkerProtocol>): void {
    if (this.slots[index]?.thread !== thread || this.closed) return;
    this.restarts++;
    this.spawn(index);
  }

  async start(): Promise<void> {
    const first: VersionEntry = {
      id: this.nextVersion++,
      bundle: this.options.bundle,
      revisionOverride: this.options.revision,
      revision: '',
      inFlight: 0,
      retired: false,
      unloaded: false,
    };
    this.versions.set(first.id, first);
    for (let i = 0; i < this.size; i++) this.spawn(i);
    await Promise.all(this.slots.map((s) => s.loads.get(first.id)?.promise));
    this.currentVersion = new PooledVersion(this, first);
  }

  async loadVersion(
    bundle: Uint8Array | WasmBundleParts,
    options?: { revision?: string },
  ): Promise<PooledPolicyVersion> {
    if (this.closed) throw new PolicyLoadError('policy engine pool is closed');
    const v: VersionEntry = {
      id: this.nextVersion++,
      bundle,
      revisionOverride: options?.revision,
      revision: '',
      inFlight: 0,
      retired: false,
      unloaded: false,
    };
    this.versions.set(v.id, v);
    try {
      await Promise.all(this.slots.map((s) => this.postLoad(s, v).promise));
    } catch (err) {
      this.unload(v);
      throw err;
    }
    return new PooledVersion(this, v);
  }

  async replaceBundle(bundle: Uint8Array | WasmBundleParts, options?: { revision?: string }): Promise<void> {
    const next = (await this.loadVersion(bundle, options)) as PooledVersion;
    const previous = this.currentVersion;
    this.currentVersion = next;
    previous.retire();
  }

  retire(v: VersionEntry): void {
    v.retired = true;
    if (v.inFlight === 0) this.unload(v);
  }

  private finished(v: VersionEntry): void {
    this.inFlight--;
    v.inFlight--;
    if (v.retired && v.inFlight === 0) this.unload(v);
  }

  private unload(v: VersionEntry): void {
    if (v.unloaded) return;
    v.unloaded = true;
    this.versions.delete(v.id);
    for (const s of this.slots) {
      s.loads.delete(v.id);
      if (!this.closed && !s.thread.failure) s.thread.notify('unload', { version: v.id });
    }
  }

  evaluate(input: PolicyInput, options?: { entrypoint?: string; now?: Date }): Promise<PolicyEvaluation> {
    // The version is picked synchronously: a swap after this line does not affect this evaluation.
    return this.evaluateOn(this.currentVersion.entry, input, options);
  }

  async evaluateOn(
    v: VersionEntry,
    input: PolicyInput,
    options?: { entrypoint?: string; now?: Date },
  ): Promise<PolicyEvaluation> {
    if (this.closed) throw new PolicyEvaluationError('module_aborted', 'policy engine pool is closed');
    if (v.unloaded) throw new PolicyEvaluationError('module_aborted', `policy version ${v.revision} was retired`);
    if (this.inFlight >= (this.options.maxInFlight ?? 1024))
      throw new PolicyEvaluationError('timeout', 'policy engine pool saturated');
    // Counted from here, so the version cannot be unloaded while this evaluation waits for its worker.
    this.inFlight++;
    v.inFlight++;
    try {
      let index = 0;
      for (let i = 1; i < this.slots.length; i++)
        if (this.slots[i].evaluating < this.slots[index].evaluating) index = i;
      let slot = this.slots[index];
      let loaded = slot.loads.get(v.id);
      // A worker replaced meanwhile has its own load of this version: wait on the slot's current worker.
      for (let attempt = 0; attempt < 3 && loaded; attempt++) {
        try {
          await loaded.promise;
          break;
        } catch (err) {
          if (this.slots[index] === slot) throw err;
          slot = this.slots[index];
          loaded = slot.loads.get(v.id);
        }
      }
      if (!loaded) throw new PolicyEvaluationError('module_aborted', `policy version ${v.revision} is not loaded`);
      const hardMs = (this.options.timeoutMs ?? 250) + (this.options.terminateGraceMs ?? 250);
      const timer = setTimeout(() => {
        // The worker is stuck past its own deadline: pre-empt it. Every evaluation it held fails closed.
        const stuck = slot.thread;
        this.replaceSlot(index, stuck);
        void stuck.terminate(
          new PolicyEvaluationError('timeout', `evaluation exceeded ${hardMs} ms; policy worker terminated`),
        );
      }, hardMs);
      slot.evaluating++;
      try {
        return await slot.thread.request('eval', {
          version: v.id,
          input,
          ...(options?.entrypoint ? { entrypoint: options.entrypoint } : {}),
          now: (options?.now ?? new Date()).toISOString(),
        });
      } finally {
        clearTimeout(timer);
        slot.evaluating--;
      }
    } catch (err) {
      if (err instanceof PolicyLoadError || err instanceof WorkerCrashedError)
        throw new PolicyEvaluationError('module_aborted', err.message);
      if (err instanceof WorkerRemoteError)
        throw new PolicyEvaluationError(
          (err.code as PolicyEvaluationErrorCode | undefined) ?? 'module_aborted',
          err.message,
        );
      throw err;
    } finally {
      this.finished(v);
    }
  }

  async close(): Promise<void> {
    this.closed = true;
    await Promise.all(
      this.slots.map((s) =>
        s.thread.terminate(new PolicyEvaluationError('module_aborted', 'policy engine pool is closed')),
      ),
    );
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
