// The engine the Guardian holds: a slot whose bundle can be swapped atomically. Each bundle version gets its
// own WasmPolicyEngine (with a worker pool, also its own version in the pool); a swap replaces one reference in a single synchronous step, so an evaluation keeps the
// engine it picked when it started (it finishes on that version) and reports that engine's revision.
// A candidate is fully loaded, warmed and smoke-tested before the swap; on any failure nothing changes. The
// heavy, engine-independent part of a load (gunzip, JSON, hashes, signature) runs in a worker (unpack-thread.ts).
// Shadow mode: a second engine evaluates the same input after the enforcing answer is settled (setImmediate,
// off the critical path); differences are counted and handed to a sink, never enforced.
import { performance } from 'node:perf_hooks';
import { isDeepStrictEqual } from 'node:util';
import {
  createWasmPolicyEngine,
  type WasmBundleParts,
  type WasmPolicyEngine,
  type WasmPolicyEngineOptions,
} from '../policy/engine.ts';
import type { PolicyEngine, PolicyEvaluation, PolicyInput } from '../policy/types.ts';
import type { PooledPolicyVersion } from '../policy/pool/pool.ts';
import { LifecycleError } from './errors.ts';
import type { BundleVerificationConfig, SignatureCheck } from './signing.ts';
import { runSmokeCases } from './smoke.ts';
import { unpackBundle, unparsedDataRefusal, type UnpackedBundle } from './unpack.ts';
import type { BundleUnpackThread } from './unpack-thread.ts';

export type EngineSettings = Omit<WasmPolicyEngineOptions, 'bundle' | 'revision'>;

export interface LoadedVersion {
  /** The in-process engine: smoke-tested before the version goes live; serves unless `pooled` is set. */
  engine: WasmPolicyEngine;
  /** The same bundle loaded in a worker-thread pool (LifecycleNodeOptions.poolSize): serves instead of `engine`. */
  pooled?: PooledPolicyVersion;
  sha256: string;
  revision: string;
  smokeCases: number;
  signature: SignatureCheck['status'];
  loadedAt: Date;
  /** Wall-clock time of each loading step (ActivationResult.phasesMs). */
  loadMs: { read: number; unpack: number; engine: number; pool?: number };
  /** What the engine was built from (kept by the registry for a later re-activation of the same bundle). */
  unpacked: UnpackedBundle;
}

export interface ShadowDifference {
  method: string;
  enforcingRevision: string;
  shadowRevision: string;
  enforcing: unknown;
  shadow: unknown;
  /** Set when the shadow evaluation failed (the enforcing one did not). */
  shadowError?: string;
  at: Date;
}

export interface ShadowStats {
  revision: string | null;
  sha256: string | null;
  evaluated: number;
  differences: number;
  errors: number;
  /** Shadow evaluations dropped because too many were pending (the candidate is slower than the load). */
  skipped: number;
}

/** Pending shadow evaluations allowed before new ones are skipped (bounded memory under load). */
const MAX_PENDING_SHADOW = 1000;

const yieldToEventLoop = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

/**
 * Loads an unpacked bundle (unpack.ts) into a fresh engine and runs its smoke cases; throws LifecycleError
 * (nothing is kept on failure). What is left here on the event loop: Wasm compile + instantiate, the module
 * parsing the data text into its heap, the warm-up and the smoke cases. `tarball`: needed only when the
 * unpacked form has no `parts` (the engine then reads the bundle itself).
 */
export async function loadUnpacked(
  unpacked: UnpackedBundle,
  settings: EngineSettings = {},
  tarball?: Uint8Array,
): Promise<LoadedVersion> {
  const started = performance.now();
  await yieldToEventLoop();
  let engine: WasmPolicyEngine;
  try {
    const parts = unpacked.parts;
    if (!parts && !tarball) throw new Error('the bundle has no single module: its tarball is needed');
    engine = parts
      ? await createWasmPolicyEngine({
          ...settings,
          bundle: {
            wasm: parts.wasm,
            dataJson: parts.dataJson,
            manifest: unpacked.manifest as WasmBundleParts['manifest'],
          },
          revision: unpacked.revision,
        })
      : await createWasmPolicyEngine({ ...settings, bundle: tarball as Uint8Array });
  } catch (e) {
    // Data text nobody parsed before the engine: a malformed file is the bundle's fault, said with its name.
    throw (
      unparsedDataRefusal(unpacked) ??
      new LifecycleError('load_failed', `bundle does not load: ${(e as Error).message}`)
    );
  }
  await yieldToEventLoop();
  const smokeCases = await runSmokeCases(engine, unpacked.smokeCases);
  return {
    engine,
    sha256: unpacked.sha256,
    revision: engine.revision,
    smokeCases,
    signature: unpacked.signature.status,
    loadedAt: new Date(),
    loadMs: { read: 0, unpack: 0, engine: performance.now() - started },
    unpacked,
  };
}

/**
 * Reads, verifies (when `verification` is configured; a signed bundle without it is refused, see signing.ts),
 * loads and smoke-tests a bundle. With `unpackThread` the reading and verifying run in that worker thread.
 */
export async function loadVersion(
  bytes: Uint8Array,
  settings: EngineSettings = {},
  verification?: BundleVerificationConfig,
  unpackThread?: BundleUnpackThread,
): Promise<LoadedVersion> {
  const started = performance.now();
  // The engine loaded next parses the data text (and refuses it if malformed), so the unpack does not parse it too.
  const options = { soleDataAsText: true };
  const unpacked = unpackThread
    ? await unpackThread.unpack(bytes, verification, options)
    : await unpackBundle(bytes, verification, options);
  const unpackMs = performance.now() - started;
  const version = await loadUnpacked(unpacked, settings, bytes);
  version.loadMs.unpack = unpackMs;
  return version;
}

export class PolicySlot implements PolicyEngine {
  #current: LoadedVersion;
  #shadow: LoadedVersion | undefined;
  #stats: ShadowStats = { revision: null, sha256: null, evaluated: 0, differences: 0, errors: 0, skipped: 0 };
  #swaps = 0;
  #pendingShadow = 0;
  /** Receives every shadow difference (the lifecycle node stores them). */
  onShadowDifference: ((d: ShadowDifference) => void) | undefined;

  constructor(initial: LoadedVersion) {
    this.#current = initial;
  }

  get revision(): string {
    return this.#current.revision;
  }
  get current(): LoadedVersion {
    return this.#current;
  }
  get shadow(): LoadedVersion | undefined {
    return this.#shadow;
  }
  get swaps(): number {
    return this.#swaps;
  }
  get shadowStats(): ShadowStats {
    return { ...this.#stats };
  }

  /** The atomic switch: one assignment. Returns the version it replaced. */
  swap(next: LoadedVersion): LoadedVersion {
    const previous = this.#current;
    this.#current = next;
    this.#swaps++;
    return previous;
  }

  setShadow(version: LoadedVersion | undefined): void {
    this.#shadow = version;
    this.#stats = {
      revision: version?.revision ?? null,
      sha256: version?.sha256 ?? null,
      evaluated: 0,
      differences: 0,
      errors: 0,
      skipped: 0,
    };
  }

  async evaluate(input: PolicyInput, options?: { entrypoint?: string; now?: Date }): Promise<PolicyEvaluation> {
    // Picked synchronously: a swap during the evaluation does not affect it.
    const version = this.#current;
    const shadow = this.#shadow;
    const result = await (version.pooled ?? version.engine).evaluate(input, options);
    if (shadow && shadow.sha256 !== version.sha256) {
      const stats = this.#stats;
      if (this.#pendingShadow >= MAX_PENDING_SHADOW) stats.skipped++;
      else {
        this.#pendingShadow++;
        setImmediate(
          () => void this.#runShadow(shadow, stats, input, options, result).finally(() => this.#pendingShadow--),
        );
      }
    }
    return result;
  }

  async #runShadow(
    shadow: LoadedVersion,
    stats: ShadowStats,
    input: PolicyInput,
    options: { entrypoint?: string; now?: Date } | undefined,
    enforced: PolicyEvaluation,
  ): Promise<void> {
    let shadowDecision: unknown;
    let shadowError: string | undefined;
    try {
      shadowDecision = (await shadow.engine.evaluate(input, options)).decision;
    } catch (e) {
      shadowError = (e as Error).message;
    }
    // The shadow was replaced or stopped meanwhile: its result belongs to no current report.
    if (stats !== this.#stats) return;
    stats.evaluated++;
    if (shadowError !== undefined) stats.errors++;
    if (shadowError === undefined && isDeepStrictEqual(shadowDecision ?? null, enforced.decision ?? null)) return;
    stats.differences++;
    this.onShadowDifference?.({
      method: input.method,
      enforcingRevision: enforced.revision,
      shadowRevision: shadow.revision,
      enforcing: enforced.decision ?? null,
      shadow: shadowDecision ?? null,
      ...(shadowError !== undefined ? { shadowError } : {}),
      at: new Date(),
    });
  }
}
