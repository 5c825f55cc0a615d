// Which policy a replay evaluates against: a bundle revision from the store's registry (by sha256 or by
// manifest revision), a bundle file (.tar.gz or bare Wasm), a directory of Rego sources compiled on the fly,
// or "recorded" (every step against the revision that decided it: the determinism check).
import { existsSync, readFileSync, statSync } from 'node:fs';
import { resolve } from 'node:path';
import { CustomBuiltinsModuleError, importCustomBuiltinsModule, type PolicyEngine } from '../policy/index.ts';
import type { DurableStore } from '../store/types.ts';
import { engineFromBundle } from './bundle-engine.ts';
import { ReplayError } from './errors.ts';

export const RECORDED = 'recorded';

/** A policy's bundle as a worker thread loads it (engineFromBundle with these arguments). */
export interface ReplayBundle {
  /** Identifies the engine: steps whose bundles share a key share one engine. */
  key: string;
  bytes: Uint8Array;
  revision?: string;
  timeoutMs: number;
  /** The deployment's custom builtins module (absolute path), imported by every engine built from the bundle. */
  customBuiltinsModule?: string;
}

/** Gives the engine for a step; null when the step's policy is unavailable (reported, not fatal). */
export interface ReplayPolicy {
  /** For reports: `registry revision X`, `file bundles/v2.tar.gz (revision Y)`, `recorded revisions`. */
  readonly description: string;
  /** True for the determinism check (each step against its own recorded revision). */
  readonly recorded: boolean;
  engineFor(recordedRevision: string | null): Promise<PolicyEngine | null>;
  /** Revisions actually used so far. */
  revisions(): string[];
  /**
   * The bundle behind `engineFor(recordedRevision)`, for worker threads that build their own engine from it;
   * absent when the policy is an engine object with no bundle at hand (then replay stays in-process).
   */
  bundleFor?(recordedRevision: string | null): Promise<ReplayBundle | null>;
}

export interface ResolvePolicyOptions {
  /** Base for relative paths (default process.cwd()). */
  cwd?: string;
  /** Accept file and directory targets (the CLI does; the HTTP API does not unless configured). */
  allowPaths?: boolean;
  /** Evaluation deadline per step (default 2000 ms: replay is offline, a busy host must not turn into denials). */
  timeoutMs?: number;
  /**
   * The deployment's custom builtins module, as `guardian serve --builtins` takes it (relative to `cwd`): every
   * engine the replay builds, in process or in a worker thread, gets its builtins. Checked here, once: a module
   * that is missing or malformed is a `builtins_invalid` ReplayError.
   */
  customBuiltinsModule?: string;
}

const HEX64 = /^[0-9a-f]{64}$/;

/** Registry lookup: a sha256 (exact) or a manifest revision (the newest bundle stored under it). */
export async function loadRegistryBundle(
  store: DurableStore,
  ref: string,
): Promise<{ sha256: string; revision: string; bytes: Uint8Array } | null> {
  if (HEX64.test(ref)) {
    const byHash = await store.getPolicyBundle(ref);
    if (byHash) return byHash;
  }
  const newest = await store.findPolicyBundleByRevision(ref);
  return newest ? store.getPolicyBundle(newest.sha256) : null;
}

/** Compiles a directory of Rego sources (and its data.json files) into a bundle with the ACS entrypoint. */
export async function compileRegoDir(dir: string): Promise<Uint8Array> {
  // Loaded here: the Rego toolchain (binaryen) is only needed to compile, and the server reaches this module.
  const { DECISION_ENTRYPOINT, readLibrary, withDerivedData } = await import('../policy/library.ts');
  const { compileBundle, RegoErrors } = await import('../rego/index.ts');
  const lib = readLibrary(dir);
  if (lib.sources.length === 0) throw new ReplayError('policy_invalid', `${dir} holds no .rego sources`);
  try {
    const compiled = await compileBundle({
      sources: lib.sources,
      entrypoints: [DECISION_ENTRYPOINT],
      data: withDerivedData(lib.data),
    });
    return compiled.bundle;
  } catch (err) {
    if (err instanceof RegoErrors)
      throw new ReplayError('policy_compile_error', `Rego sources in ${dir} do not compile: ${err.message}`);
    throw new ReplayError(
      'policy_compile_error',
      `Rego sources in ${dir} do not compile: ${err instanceof Error ? err.message : String(err)}`,
    );
  }
}

function fixedPolicy(
  engine: PolicyEngine,
  description: string,
  bytes?: Uint8Array,
  timeoutMs = 2000,
  customBuiltinsModule?: string,
): ReplayPolicy {
  const bundle: ReplayBundle | null = bytes
    ? {
        key: 'fixed',
        bytes,
        revision: engine.revision,
        timeoutMs,
        ...(customBuiltinsModule ? { customBuiltinsModule } : {}),
      }
    : null;
  return {
    description,
    recorded: false,
    engineFor: async () => engine,
    revisions: () => [engine.revision],
    ...(bundle ? { bundleFor: async () => bundle } : {}),
  };
}

/** Replays each step against the revision recorded for it, loaded from the registry once per revision. */
function recordedPolicy(store: DurableStore, timeoutMs: number, customBuiltinsModule?: string): ReplayPolicy {
  const bundles = new Map<string, Promise<ReplayBundle | null>>();
  const engines = new Map<string, Promise<PolicyEngine | null>>();
  const bundleFor = (revision: string | null): Promise<ReplayBundle | null> => {
    if (revision === null) return Promise.resolve(null);
    let bundle = bundles.get(revision);
    if (!bundle) {
      bundle = loadRegistryBundle(store, revision).then((b) =>
        b
          ? {
              key: revision,
              bytes: b.bytes,
              revision: b.revision,
              timeoutMs,
              ...(customBuiltinsModule ? { customBuiltinsModule } : {}),
            }
          : null,
      );
      bundles.set(revision, bundle);
    }
    return bundle;
  };
  return {
    description: 'recorded revisions (determinism check)',
    recorded: true,
    engineFor(revision) {
      if (revision === null) return Promise.resolve(null);
      let engine = engines.get(revision);
      if (!engine) {
        engine = bundleFor(revision).then((b) =>
          b ? engineFromBundle(b.bytes, timeoutMs, b.revision, customBuiltinsModule) : null,
        );
        engines.set(revision, engine);
      }
      return engine;
    },
    bundleFor,
    revisions: () => [...bundles.keys()].sort(),
  };
}

/** The builtins module's absolute path once it imports and is well formed (as `serve` checks it at start). */
async function checkedBuiltinsModule(options: ResolvePolicyOptions): Promise<string | undefined> {
  if (options.customBuiltinsModule === undefined) return undefined;
  const cwd = options.cwd ?? process.cwd();
  try {
    await importCustomBuiltinsModule(options.customBuiltinsModule, cwd);
  } catch (err) {
    if (err instanceof CustomBuiltinsModuleError) throw new ReplayError('builtins_invalid', err.message);
    throw err;
  }
  return resolve(cwd, options.customBuiltinsModule);
}

/**
 * Resolves `--against`: "recorded", an existing file or directory (when allowed), else a registry
 * reference (sha256 or revision). A PolicyEngine may be passed directly (API users, tests).
 */
export async function resolveReplayPolicy(
  store: DurableStore,
  against: string | PolicyEngine,
  options: ResolvePolicyOptions = {},
): Promise<ReplayPolicy> {
  const timeoutMs = options.timeoutMs ?? 2000;
  if (typeof against !== 'string') return fixedPolicy(against, `engine (revision ${against.revision})`);
  const ref = against.trim();
  if (ref.length === 0)
    throw new ReplayError('invalid_selection', '--against must name a revision, a bundle file or a Rego directory');
  const builtins = await checkedBuiltinsModule(options);
  if (ref === RECORDED) return recordedPolicy(store, timeoutMs, builtins);
  const path = resolve(options.cwd ?? process.cwd(), ref);
  const looksLikePath = ref.includes('/') || ref.startsWith('.') || ref.endsWith('.tar.gz') || ref.endsWith('.wasm');
  if (existsSync(path) && (looksLikePath || !(await loadRegistryBundle(store, ref)))) {
    if (!options.allowPaths)
      throw new ReplayError(
        'policy_path_refused',
        'file and directory policies are not accepted here; name a registry revision',
      );
    if (statSync(path).isDirectory()) {
      const bytes = await compileRegoDir(path);
      const engine = await engineFromBundle(bytes, timeoutMs, undefined, builtins);
      return fixedPolicy(
        engine,
        `Rego directory ${ref} (compiled, revision ${engine.revision})`,
        bytes,
        timeoutMs,
        builtins,
      );
    }
    const bytes = new Uint8Array(readFileSync(path));
    const engine = await engineFromBundle(bytes, timeoutMs, undefined, builtins);
    return fixedPolicy(engine, `bundle file ${ref} (revision ${engine.revision})`, bytes, timeoutMs, builtins);
  }
  const bundle = await loadRegistryBundle(store, ref);
  if (!bundle)
    throw new ReplayError(
      'policy_not_found',
      `no policy revision ${JSON.stringify(ref)} in the registry, and no such file or directory`,
    );
  const engine = await engineFromBundle(bundle.bytes, timeoutMs, bundle.revision, builtins);
  return fixedPolicy(
    engine,
    `registry revision ${bundle.revision} (sha256 ${bundle.sha256.slice(0, 12)}…)`,
    bundle.bytes,
    timeoutMs,
    builtins,
  );
}
