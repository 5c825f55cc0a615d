// Bundles into versions this replica can serve: unpacked and verified (in the unpack worker once the node serves,
// so evaluations are not stalled), loaded, warmed and smoke-tested here, and loaded into the worker pool when the
// node serves from one. Nothing is kept of a bundle that fails a check.
import { performance } from 'node:perf_hooks';
import type { WasmBundleParts } from '../../policy/engine.ts';
import { createPolicyEnginePool, type PolicyEnginePool } from '../../policy/pool/pool.ts';
import { LifecycleError } from '../errors.ts';
import type { BundleRegistry, RegisteredBundle } from '../registry.ts';
import { loadUnpacked, loadVersion, type LoadedVersion } from '../slot.ts';
import type { BundleUnpackThread } from '../unpack-thread.ts';
import { unpackBundle, type UnpackedBundle } from '../unpack.ts';
import type { LifecycleNodeOptions } from './types.ts';

export class VersionLoader {
  readonly #registry: BundleRegistry;
  readonly #options: LifecycleNodeOptions;
  readonly #unpackThread: () => BundleUnpackThread | undefined;
  #pool: PolicyEnginePool | undefined;

  /**
   * `unpackThread`: the unpack worker once the node serves; undefined before (start-up, the one-shot CLI), when
   * nothing else is waiting and starting a worker would only add its start-up time. Asked at each use.
   */
  constructor(
    registry: BundleRegistry,
    options: LifecycleNodeOptions,
    unpackThread: () => BundleUnpackThread | undefined,
  ) {
    this.#registry = registry;
    this.#options = options;
    this.#unpackThread = unpackThread;
  }

  /** Unpacks and verifies, then loads, warms and smoke-tests here (nothing kept on failure). */
  async checked(sha256: string, given?: Uint8Array): Promise<LoadedVersion> {
    const started = performance.now();
    // Loaded here before (rollback, back and forth): the same bytes and settings unpack the same way; the new
    // engine still runs the smoke cases.
    const known = this.#registry.unpacked(sha256);
    const bytes = known ? undefined : (given ?? (await this.#registry.readBytes(sha256)).bytes);
    const read = performance.now() - started;
    const version = bytes
      ? await loadVersion(bytes, this.#options.engine, this.#options.verification, this.#unpackThread())
      : await loadUnpacked(known as UnpackedBundle, this.#options.engine);
    // The unpack hashed the bytes: bytes that are not what the store keys them by are refused here, before the
    // version can be installed (their engine is dropped).
    if (bytes) this.#registry.confirmBytes(sha256, bytes, version.unpacked.sha256);
    version.loadMs.read = read;
    this.#registry.rememberUnpacked(version.unpacked);
    return version;
  }

  /** checked(), plus the version loaded into the worker pool when the node serves from one. */
  async forServing(sha256: string, given?: Uint8Array): Promise<LoadedVersion> {
    return this.intoPool(await this.checked(sha256, given), given);
  }

  /** A checked version, also loaded into the worker pool when the node serves from one. */
  async intoPool(version: LoadedVersion, given?: Uint8Array): Promise<LoadedVersion> {
    const sha256 = version.sha256;
    const size = this.#options.poolSize;
    if (!size) return version;
    const started = performance.now();
    // The parts the unpack worker extracted (module + data text): no pool worker reads the tarball again.
    const parts = version.unpacked.parts;
    const bundle: Uint8Array | WasmBundleParts = parts
      ? { wasm: parts.wasm, dataJson: parts.dataJson, manifest: version.unpacked.manifest }
      : (given ?? (await this.#registry.bytes(sha256)));
    try {
      if (this.#pool) version.pooled = await this.#pool.loadVersion(bundle, { revision: version.revision });
      else {
        const { entrypoint, maxInputBytes, timeoutMs, maxMemoryPages, customBuiltinsModule } =
          this.#options.engine ?? {};
        this.#pool = await createPolicyEnginePool({
          bundle,
          size,
          revision: version.revision,
          ...(entrypoint ? { entrypoint } : {}),
          ...(maxInputBytes ? { maxInputBytes } : {}),
          ...(timeoutMs ? { timeoutMs } : {}),
          ...(maxMemoryPages ? { maxMemoryPages } : {}),
          ...(customBuiltinsModule ? { customBuiltinsModule } : {}),
        });
        version.pooled = this.#pool.current;
      }
    } catch (e) {
      throw new LifecycleError(
        'load_failed',
        `bundle does not load in the policy worker pool: ${(e as Error).message}`,
      );
    }
    version.loadMs.pool = performance.now() - started;
    return version;
  }

  /**
   * Push with activation: the bundle is loaded (the unpack leaves a sole /data.json to the engine's parser, as a
   * first activation does: the data is parsed once, by the module) and smoke-tested before it is registered,
   * and the activation swaps that engine in. A malformed bundle (data included) is refused here and never
   * registered; undefined when it is refused for another reason, which the activation reports.
   */
  async prepare(bytes: Uint8Array): Promise<LoadedVersion | undefined> {
    try {
      // Not checked(): that needs the sha256 first, and the unpack hashes the bytes off the event loop.
      const version = await loadVersion(bytes, this.#options.engine, this.#options.verification, this.#unpackThread());
      this.#registry.rememberUnpacked(version.unpacked);
      return version;
    } catch (e) {
      if (e instanceof LifecycleError && e.code === 'invalid_bundle') throw e;
      return undefined;
    }
  }

  /**
   * Registers pushed bytes (content-addressed), unpacked and checked once (serving: in the unpack worker, off the
   * event loop); the activation that follows re-uses the unpack (registry.unpacked) instead of parsing the data
   * again. A malformed tarball is refused and not registered; a bundle refused for its signature or smoke file is
   * registered, and that refusal is returned.
   */
  async registerChecked(
    bytes: Uint8Array,
    source: string | null,
  ): Promise<{ record: RegisteredBundle; refusal: Error | undefined }> {
    const verification = this.#options.verification;
    const thread = this.#unpackThread();
    const checked = await (thread ? thread.unpack(bytes, verification) : unpackBundle(bytes, verification)).catch(
      (e: unknown) => (e instanceof Error ? e : new Error(String(e))),
    );
    if (checked instanceof LifecycleError && checked.code === 'invalid_bundle') throw checked;
    let manifest: UnpackedBundle['manifest'] | undefined;
    if (checked instanceof Error) {
      const after = this.#unpackThread();
      manifest = after ? await after.readManifest(bytes) : undefined;
    } else manifest = checked.manifest;
    const record = await this.#registry.register(
      bytes,
      source,
      manifest,
      checked instanceof Error ? undefined : checked.sha256,
    );
    if (!(checked instanceof Error)) this.#registry.rememberUnpacked(checked);
    return { record, refusal: checked instanceof Error ? checked : undefined };
  }

  /** Closes the worker pool, if one was started. */
  async close(): Promise<void> {
    await this.#pool?.close();
    this.#pool = undefined;
  }
}
