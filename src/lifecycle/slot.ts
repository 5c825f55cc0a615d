// The engine the Guardian holds: a slot whose bundle can be swapped atomically. Each bundle version gets its
// own WasmPolicyEngine; a swap replaces one reference in a single synchronous step, so an evaluation keeps the
// engine it picked when it started (it finishes on that version) and reports that engine's revision.
// A candidate is fully loaded, warmed and smoke-tested before the swap; on any failure nothing changes.
// Shadow mode: a second engine evaluates the same input after the enforcing answer is settled (setImmediate,
// off the critical path); differences are counted and handed to a sink, never enforced.
import { isDeepStrictEqual } from 'node:util';
import { createWasmPolicyEngine, type WasmBundleParts, type WasmPolicyEngine, type WasmPolicyEngineOptions } from '../policy/engine.ts';
import type { Json } from '../store/types.ts';
import type { PolicyEngine, PolicyEvaluation, PolicyInput } from '../policy/types.ts';
import { readBundle, BundleError, type Bundle } from '../rego/bundle/index.ts';
import { sha256Hex } from '../chain/index.ts';
import { LifecycleError } from './errors.ts';
import { readSmokeCases, runSmokeCases } from './smoke.ts';

export type EngineSettings = Omit<WasmPolicyEngineOptions, 'bundle' | 'revision'>;

export interface LoadedVersion {
  engine: WasmPolicyEngine;
  sha256: string;
  revision: string;
  smokeCases: number;
  loadedAt: Date;
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

/** Loads a bundle into a fresh engine and runs its smoke cases; throws LifecycleError (nothing is kept on failure). */
export async function loadVersion(bytes: Uint8Array, settings: EngineSettings = {}, parsed?: Bundle): Promise<LoadedVersion> {
  let bundle: Bundle;
  try {
    bundle = parsed ?? readBundle(bytes);
  } catch (e) {
    throw new LifecycleError('invalid_bundle', e instanceof BundleError ? e.message : `unreadable bundle: ${(e as Error).message}`);
  }
  const cases = readSmokeCases(bundle);
  // Loading is mostly synchronous work (gunzip, JSON, Wasm compile, setData): yield between the phases so
  // requests arriving meanwhile are served by the version in force instead of waiting for the whole load.
  await yieldToEventLoop();
  let engine: WasmPolicyEngine;
  try {
    // One parse: hand the engine the parts already read (a multi-module bundle lets the engine pick by entrypoint).
    const single = bundle.wasm !== undefined && (bundle.manifest.wasm?.length ?? 0) <= 1;
    const source = single ? { wasm: bundle.wasm as Uint8Array, data: bundle.data as Json, manifest: bundle.manifest as WasmBundleParts['manifest'] } : bytes;
    engine = await createWasmPolicyEngine({ ...settings, bundle: source });
  } catch (e) {
    throw new LifecycleError('load_failed', `bundle does not load: ${(e as Error).message}`);
  }
  await yieldToEventLoop();
  const smokeCases = await runSmokeCases(engine, cases);
  return { engine, sha256: sha256Hex(bytes), revision: engine.revision, smokeCases, loadedAt: new Date() };
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
    this.#stats = { revision: version?.revision ?? null, sha256: version?.sha256 ?? null, evaluated: 0, differences: 0, errors: 0, skipped: 0 };
  }

  async evaluate(input: PolicyInput, options?: { entrypoint?: string; now?: Date }): Promise<PolicyEvaluation> {
    // Picked synchronously: a swap during the evaluation does not affect it.
    const version = this.#current;
    const shadow = this.#shadow;
    const result = await version.engine.evaluate(input, options);
    if (shadow && shadow.sha256 !== version.sha256) {
      const stats = this.#stats;
      if (this.#pendingShadow >= MAX_PENDING_SHADOW) stats.skipped++;
      else {
        this.#pendingShadow++;
        setImmediate(() => void this.#runShadow(shadow, stats, input, options, result).finally(() => this.#pendingShadow--));
      }
    }
    return result;
  }

  async #runShadow(shadow: LoadedVersion, stats: ShadowStats, input: PolicyInput, options: { entrypoint?: string; now?: Date } | undefined, enforced: PolicyEvaluation): Promise<void> {
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
