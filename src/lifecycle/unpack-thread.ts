// One long-lived worker thread per process that unpacks bundles (unpack.ts) off the event loop, so evaluations
// keep being served while a bundle is gunzipped, parsed, hashed and verified. The worker holds the process open
// only while a request is pending, and is replaced if it dies (its pending requests are rejected).
import type { BundleManifest } from '../rego/bundle/index.ts';
import { WorkerRemoteError, WorkerThread } from '../worker-thread/index.ts';
import { LifecycleError, type LifecycleErrorCode } from './errors.ts';
import type { BundleVerificationConfig } from './signing.ts';
import type { UnpackedBundle, UnpackOptions } from './unpack.ts';
import type { UnpackWorkerProtocol } from './unpack-worker.ts';

const ENTRY = new URL('./unpack-worker.ts', import.meta.url);

export class BundleUnpackThread {
  #worker: WorkerThread<UnpackWorkerProtocol> | undefined;

  /**
   * Starts the worker ahead of the first unpack and resolves once it answers (its modules are loaded): called at
   * start-up, its boot overlaps the store opening instead of delaying the first activation.
   */
  async warm(): Promise<void> {
    await this.#request('ping', null);
  }

  /** unpackBundle(bytes, verification, options) in the worker; the caller's bytes are copied, not transferred. */
  unpack(
    bytes: Uint8Array,
    verification: BundleVerificationConfig | undefined,
    options: UnpackOptions = {},
  ): Promise<UnpackedBundle> {
    return this.#request('unpack', { bytes, options, ...(verification ? { verification } : {}) });
  }

  /** The manifest of a well-formed bundle (readBundleManifest in the worker); LifecycleError('invalid_bundle') otherwise. */
  readManifest(bytes: Uint8Array): Promise<BundleManifest> {
    return this.#request('manifest', { bytes });
  }

  async #request<K extends keyof UnpackWorkerProtocol>(
    op: K,
    body: UnpackWorkerProtocol[K]['request'],
  ): Promise<UnpackWorkerProtocol[K]['response']> {
    // A dead worker is replaced by the next request (its own pending requests have failed).
    if (!this.#worker || this.#worker.failure)
      this.#worker = new WorkerThread(ENTRY, { name: 'unpack worker', unrefWhenIdle: true });
    try {
      return await this.#worker.request(op, body);
    } catch (err) {
      // The worker's LifecycleErrors keep their code; anything else it threw is an unexpected failure.
      if (err instanceof WorkerRemoteError)
        throw err.name === 'LifecycleError' && err.code
          ? new LifecycleError(err.code as LifecycleErrorCode, err.message)
          : new Error(err.message);
      throw new LifecycleError(
        'load_failed',
        `bundle unpacking failed: ${err instanceof Error ? err.message : String(err)}`,
      );
    }
  }

  /** Stops the worker; pending unpacks are rejected. */
  async close(): Promise<void> {
    await this.#worker?.terminate();
  }
}

let shared: BundleUnpackThread | undefined;

/** The process-wide unpack thread (one worker for every lifecycle node in the process). */
export function sharedUnpackThread(): BundleUnpackThread {
  shared ??= new BundleUnpackThread();
  return shared;
}
