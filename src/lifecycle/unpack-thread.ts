// One long-lived worker thread per process that unpacks bundles (unpack.ts) off the event loop, so evaluations
// keep being served while a bundle is gunzipped, parsed, hashed and verified. The worker holds the process open
// only while a request is pending, and is replaced if it dies (its pending requests are rejected).
import { Worker } from 'node:worker_threads';
import { LifecycleError, type LifecycleErrorCode } from './errors.ts';
import type { BundleVerificationConfig } from './signing.ts';
import type { UnpackedBundle, UnpackOptions } from './unpack.ts';
import type { BundleManifest } from '../rego/bundle/index.ts';

const BOOTSTRAP = new URL('./unpack-worker-bootstrap.mjs', import.meta.url);

interface UnpackReply {
  id: number;
  ok: boolean;
  result?: UnpackedBundle | BundleManifest;
  /** Answer to a ping. */
  pong?: true;
  code?: LifecycleErrorCode;
  message?: string;
}

interface PendingUnpack {
  resolve(result: UnpackedBundle | BundleManifest): void;
  reject(e: Error): void;
}

export class BundleUnpackThread {
  #worker: Worker | undefined;
  #pending = new Map<number, PendingUnpack>();
  #nextId = 1;

  /**
   * Starts the worker ahead of the first unpack and resolves once it answers (its modules are loaded), so the
   * start-up cost is paid before serving rather than during the first activation.
   */
  async warm(): Promise<void> {
    await this.#request({ op: 'ping' });
  }

  #ensure(): Worker {
    if (this.#worker) return this.#worker;
    const worker = new Worker(BOOTSTRAP);
    worker.unref();
    const fail = (why: string): void => {
      if (this.#worker !== worker) return;
      this.#worker = undefined;
      const pending = [...this.#pending.values()];
      this.#pending.clear();
      for (const p of pending) p.reject(new LifecycleError('load_failed', `bundle unpacking failed: ${why}`));
    };
    worker.on('message', (msg: UnpackReply) => {
      const p = this.#pending.get(msg.id);
      if (!p) return;
      this.#pending.delete(msg.id);
      if (this.#pending.size === 0) worker.unref();
      if (msg.ok && (msg.result || msg.pong)) p.resolve(msg.result ?? {});
      else if (msg.code) p.reject(new LifecycleError(msg.code, msg.message ?? msg.code));
      else p.reject(new Error(msg.message ?? 'bundle unpacking failed'));
    });
    worker.on('error', (err) => fail(err.message));
    worker.on('exit', (code) => fail(`unpack worker exited with code ${code}`));
    this.#worker = worker;
    return worker;
  }

  /** unpackBundle(bytes, verification, options) in the worker; the caller's bytes are copied, not transferred. */
  unpack(
    bytes: Uint8Array,
    verification: BundleVerificationConfig | undefined,
    options: UnpackOptions = {},
  ): Promise<UnpackedBundle> {
    return this.#request({
      op: 'unpack',
      bytes,
      options,
      ...(verification ? { verification } : {}),
    }) as Promise<UnpackedBundle>;
  }

  /** The manifest of a well-formed bundle (readBundleManifest in the worker); LifecycleError('invalid_bundle') otherwise. */
  readManifest(bytes: Uint8Array): Promise<BundleManifest> {
    return this.#request({ op: 'manifest', bytes }) as Promise<BundleManifest>;
  }

  #request(
    message:
      | { op: 'ping' }
      | {
          op: 'unpack' | 'manifest';
          bytes: Uint8Array;
          verification?: BundleVerificationConfig;
          options?: UnpackOptions;
        },
  ): Promise<UnpackedBundle | BundleManifest> {
    const worker = this.#ensure();
    const id = this.#nextId++;
    return new Promise<UnpackedBundle | BundleManifest>((resolve, reject) => {
      this.#pending.set(id, { resolve, reject });
      // Keep the process alive while an answer is due (nothing else may be running).
      worker.ref();
      worker.postMessage({ id, ...message });
    });
  }

  /** Stops the worker; pending unpacks are rejected. */
  async close(): Promise<void> {
    const worker = this.#worker;
    if (!worker) return;
    await worker.terminate();
  }
}

let shared: BundleUnpackThread | undefined;

/** The process-wide unpack thread (one worker for every lifecycle node in the process). */
export function sharedUnpackThread(): BundleUnpackThread {
  shared ??= new BundleUnpackThread();
  return shared;
}
