// The platform-neutral core of the toolchain's API: sources → Wasm module → opa-wasm policy → result set,
// with no Node built-in on any import path, so it runs in Node and in a browser alike. The caller supplies
// the runtime module bytes (runtime/runtime.wasm); the Node entry (./index.ts) reads the shipped one itself
// and adds bundles, host builtins and queries on top.
import { loadPolicy, type LoadedPolicy } from '@open-policy-agent/opa-wasm';
import { parseModules } from './ast/index.ts';
import type { Module } from './ast/types.ts';
import { allowsTemplateStrings, type Capabilities } from './builtins/capabilities.ts';
import { annotatedEntrypoints, compileModules, type CompiledProgram, transitiveDependents } from './semantic/index.ts';
import { linkPolicyModule } from './wasm/link.ts';
import { withHostCallSite } from './builtins/host/call-site.ts';
import { RegoError, RegoErrors } from './errors.ts';
import type { CustomBuiltins } from './builtins/custom.ts';
import type { Policy } from './ir/types.ts';
import { planEntrypoints, type PlanOptions } from './planner/index.ts';

export { parseModule, parseQuery } from './ast/index.ts';
export { RegoError, RegoErrors, type RegoErrorCode } from './errors.ts';
export { WasmLinkError } from './wasm/link.ts';
export { CapabilitiesError, readCapabilities, type Capabilities } from './builtins/capabilities.ts';
export { withCustomBuiltins } from './builtins/custom.ts';

export interface RegoSource {
  /** File name used in locations and as the path inside the bundle. */
  file: string;
  text: string;
  /** Rego version to read the module as (default 1); a v0 module importing `rego.v1` is read as v1. */
  regoVersion?: 0 | 1;
}

/**
 * Parse every source, collecting parse errors across files. All of them are reported: OPA's loader keeps every
 * file's parse errors; only its compiler stops at an error limit.
 */
export function parseSources(sources: RegoSource[], options: { templateStrings?: boolean } = {}): Module[] {
  const { modules, errors } = parseModules(sources, options);
  if (errors.length) throw new RegoErrors(errors);
  return modules;
}

/** What an entrypoint may be: a `pkg/rule` path of identifiers. */
const ENTRYPOINT = /^[A-Za-z_][A-Za-z0-9_]*(\/[A-Za-z_][A-Za-z0-9_]*)*$/;

export function checkEntrypoints(entrypoints: string[]): void {
  if (entrypoints.length === 0)
    throw new RegoErrors([new RegoError('rego_compile_error', 'at least one entrypoint is required')]);
  for (const ep of entrypoints) {
    if (!ENTRYPOINT.test(ep)) {
      throw new RegoErrors([
        new RegoError('rego_compile_error', `invalid entrypoint ${JSON.stringify(ep)}: expected a path like pkg/rule`),
      ]);
    }
  }
}

export interface PlannedSources {
  /** The entrypoints asked for plus those METADATA `entrypoint: true` annotations name. */
  entrypoints: string[];
  modules: Module[];
  program: CompiledProgram;
  plan: Policy;
}

/**
 * Parse, compile and plan: everything before Wasm code generation. With `capabilities`, policies may call
 * only the builtins it lists (custom ones included), as with `opa build --capabilities`.
 */
export function planSources(
  sources: RegoSource[],
  entrypoints: string[],
  plan?: PlanOptions,
  capabilities?: Capabilities,
): PlannedSources {
  const modules = parseSources(sources, { templateStrings: allowsTemplateStrings(capabilities) });
  // METADATA `entrypoint: true` adds its rule (or package) as an entrypoint, as `opa build` does.
  const all = [...new Set([...entrypoints, ...annotatedEntrypoints(modules)])];
  checkEntrypoints(all);
  const program = compileModules(
    modules,
    capabilities ? { builtins: capabilities.builtins, deferredRefused: capabilities.refused } : {},
  );
  const withDependents = [...all, ...dependentEntrypoints(program, all)];
  return { entrypoints: withDependents, modules, program, plan: planEntrypoints(program, withDependents, plan) };
}

/**
 * The rules that read an entrypoint's document, directly or through others, as entrypoints of their own, sorted by
 * path: `opa build -t wasm` compiles them too (compile.go's compileWasm, so that no Wasm-compiled rule is
 * evaluated under `with`) and lists them in the manifest, so SDK users can evaluate them from either build.
 * Functions are left out (they are no documents to evaluate), as are paths that are no pkg/rule identifiers.
 */
function dependentEntrypoints(program: CompiledProgram, entrypoints: readonly string[]): string[] {
  const asked = new Set(entrypoints);
  const prefixes = entrypoints.map((ep) => ep.split('/'));
  const targets = program.ruleSets.filter((rs) => prefixes.some((p) => p.every((e, i) => rs.path[i] === e)));
  const extra = transitiveDependents(program.dependencies, targets)
    .filter((rs) => rs.kind !== 'function')
    .map((rs) => rs.path)
    .sort((a, b) => {
      for (let i = 0; i < Math.min(a.length, b.length); i++) if (a[i] !== b[i]) return a[i] < b[i] ? -1 : 1;
      return a.length - b.length;
    })
    .map((p) => p.join('/'));
  return extra.filter((ep) => ENTRYPOINT.test(ep) && !asked.has(ep));
}

export interface CompilePolicyWasmOptions {
  sources: RegoSource[];
  /** `pkg/rule` paths, e.g. `acs/guardian/decision`. */
  entrypoints: string[];
  /** The runtime module (`runtime.wasm`, shipped at src/rego/wasm/runtime/runtime.wasm). */
  runtimeWasm: Uint8Array;
  /** OPA's strict builtin errors (builtin failures abort instead of being undefined). */
  strictBuiltinErrors?: boolean;
  /** Planner options (early exit; on by default). */
  plan?: PlanOptions;
  /** Ground composite literals as static data (default true). */
  staticComposites?: boolean;
  /** The builtins policies may call, custom ones included (`readCapabilities`); default: all of ours. */
  capabilities?: Capabilities;
}

export interface CompiledPolicyWasm {
  /** An OPA-ABI 1.3 module, loadable by @open-policy-agent/opa-wasm. */
  wasm: Uint8Array;
  plan: Policy;
  modules: Module[];
}

/** Compile Rego sources into one OPA-ABI Wasm module exporting the given entrypoints. */
export async function compilePolicyWasm(options: CompilePolicyWasmOptions): Promise<CompiledPolicyWasm> {
  const { modules, plan } = planSources(options.sources, options.entrypoints, options.plan, options.capabilities);
  const wasm = linkPolicyModule(options.runtimeWasm, plan, {
    strictBuiltinErrors: options.strictBuiltinErrors ?? false,
    staticComposites: options.staticComposites,
  });
  return { wasm, plan, modules };
}

export type { CustomBuiltins } from './builtins/custom.ts';

/** The error to report for `e`, thrown by an evaluation of `policy`: with its call site in front (withHostCallSite). */
export function atHostCallSite(policy: LoadedPolicy, e: unknown): unknown {
  if (!(e instanceof Error)) return e;
  const located = withHostCallSite(policy, e.message);
  return located === e.message ? e : new Error(located, { cause: e });
}

/** Strict host builtin errors of our modules thrown with their call site in front. */
function withHostCallSites(policy: LoadedPolicy): LoadedPolicy {
  const evaluate = policy.evaluate.bind(policy);
  policy.evaluate = (...args: Parameters<LoadedPolicy['evaluate']>) => {
    try {
      return evaluate(...args);
    } catch (e) {
      throw atHostCallSite(policy, e);
    }
  };
  return policy;
}

/** Instantiate a Wasm module, growing the initial memory when the module's static data needs it. */
export async function instantiatePolicy(
  wasm: Uint8Array,
  builtins: CustomBuiltins = {},
  maxPages = 1024,
): Promise<LoadedPolicy> {
  let initial = 5;
  for (let attempt = 0; ; attempt++) {
    try {
      return withHostCallSites(await loadPolicy(wasm, { initial, maximum: Math.max(initial, maxPages) }, builtins));
    } catch (e) {
      const needed = /smaller than initial (\d+)/.exec(String((e as Error)?.message ?? e));
      if (attempt < 3 && needed && Number(needed[1]) > initial && Number(needed[1]) <= maxPages) {
        initial = Number(needed[1]);
        continue;
      }
      throw e;
    }
  }
}

/** OPA result set: one object per result (`{result: v}` for entrypoints, the query's bindings for queries). */
export type ResultSet = Record<string, unknown>[];

/** Evaluate one entrypoint; returns OPA's result set (`[]` when undefined). */
export function evaluateEntrypoint(
  loaded: { policy: LoadedPolicy } | LoadedPolicy,
  entrypoint: string,
  input?: unknown,
): ResultSet {
  const policy = 'policy' in loaded ? loaded.policy : loaded;
  return policy.evaluate(input, entrypoint) as ResultSet;
}
