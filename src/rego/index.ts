// The Rego toolchain as a library (Node entry): sources → bundle (parse → compileModules → planEntrypoints →
// linkPolicyWasm → writeBundle), sources → Wasm module, bundle → loaded opa-wasm policy, and ad-hoc queries
// (conformance runner). The platform-neutral part lives in ./portable.ts; ./browser.ts is the entry for
// browser bundles (docs/rego-toolchain.md).
import type { LoadedPolicy } from '@open-policy-agent/opa-wasm';
import { parseQuery } from './ast/index.ts';
import type { Body, Module } from './ast/types.ts';
import { allowsTemplateStrings, type Capabilities } from './builtins/capabilities.ts';
import { withCustomBuiltins } from './builtins/custom.ts';
import {
  createAuthoringHostBuiltins,
  createHostBuiltins,
  type HostBuiltinContext,
  type HostBuiltinOptions,
} from './builtins/index.ts';
import {
  BundleError,
  manifestRegoVersions,
  readBundle,
  writeBundle,
  type Bundle,
  type BundleLimits,
  type BundleManifest,
} from './bundle/index.ts';
import { compileModules, type CompiledProgram } from './semantic/index.ts';
import { referencedInputPaths } from './semantic/input-paths.ts';
import { linkPolicyWasm } from './wasm/index.ts';
import { RegoError, RegoErrors } from './errors.ts';
import { wasmJson } from './json.ts';
import type { Policy } from './ir/types.ts';
import { planQueries, type PlanOptions } from './planner/index.ts';
import {
  instantiatePolicy,
  parseSources,
  planSources,
  type CompiledPolicyWasm,
  type CompilePolicyWasmOptions,
  type CustomBuiltins,
  type RegoSource,
  type ResultSet,
} from './portable.ts';

export {
  CapabilitiesError,
  evaluateEntrypoint,
  instantiatePolicy,
  parseModule,
  parseQuery,
  parseSources,
  planSources,
  readCapabilities,
  RegoError,
  RegoErrors,
  WasmLinkError,
  withCustomBuiltins,
  type Capabilities,
  type CompiledPolicyWasm,
  type CustomBuiltins,
  type PlannedSources,
  type RegoErrorCode,
  type RegoSource,
  type ResultSet,
} from './portable.ts';
export { BundleError, readBundle, writeBundle } from './bundle/index.ts';
export { LoaderError, loadPaths, type LoadedPaths, type LoaderOptions } from './bundle/loader.ts';
export { formatModule, formatSource, type FormatOptions } from './format/index.ts';
export { HostBuiltinContext } from './builtins/index.ts';
export type { BeginEvaluationOptions, EvaluationInfo, HostBuiltinOptions } from './builtins/index.ts';
export type { Bundle, BundleManifest } from './bundle/index.ts';

/** As the portable compilePolicyWasm, except that `runtimeWasm` defaults to the shipped runtime. */
export type NodeCompilePolicyWasmOptions = Omit<CompilePolicyWasmOptions, 'runtimeWasm'> & {
  runtimeWasm?: Uint8Array;
};

/** Compile Rego sources into one OPA-ABI Wasm module exporting the given entrypoints. */
export async function compilePolicyWasm(options: NodeCompilePolicyWasmOptions): Promise<CompiledPolicyWasm> {
  const { modules, plan } = planSources(options.sources, options.entrypoints, options.plan, options.capabilities);
  const wasm = await linkPolicyWasm(plan, {
    strictBuiltinErrors: options.strictBuiltinErrors ?? false,
    staticComposites: options.staticComposites,
    ...(options.runtimeWasm ? { runtimeWasm: options.runtimeWasm } : {}),
  });
  return { wasm, plan, modules };
}

export interface CompileBundleOptions {
  sources: RegoSource[];
  /** `pkg/rule` paths, e.g. `acs/guardian/decision`. */
  entrypoints: string[];
  /** Base document stored as /data.json. */
  data?: Record<string, unknown>;
  /** Manifest revision; default: content hash of the bundle inputs. */
  revision?: string;
  /** Manifest roots; default `[""]` (the bundle owns everything), as `opa build` writes. */
  roots?: string[];
  /** Manifest metadata. */
  metadata?: Record<string, unknown>;
  /** OPA's strict builtin errors (builtin failures abort instead of being undefined). */
  strictBuiltinErrors?: boolean;
  /**
   * Record the input paths the policies can read as manifest `metadata.input_paths`; the engine host then
   * serialises only those members of the input (src/rego/semantic/input-paths.ts).
   */
  recordInputPaths?: boolean;
  /** Planner options (early exit; on by default). */
  plan?: PlanOptions;
  /** Ground composite literals as static data (default true). */
  staticComposites?: boolean;
  /** The builtins policies may call, custom ones included (`readCapabilities`); default: all of ours. */
  capabilities?: Capabilities;
}

export interface CompiledBundle {
  /** The .tar.gz bytes. */
  bundle: Uint8Array;
  wasm: Uint8Array;
  plan: Policy;
  manifest: BundleManifest;
  modules: Module[];
}

/** Compile Rego sources into a deterministic OPA bundle holding the Wasm module, plan, data and sources. */
export async function compileBundle(options: CompileBundleOptions): Promise<CompiledBundle> {
  const { entrypoints, modules, plan } = planSources(
    options.sources,
    options.entrypoints,
    options.plan,
    options.capabilities,
  );
  const wasm = await linkPolicyWasm(plan, {
    strictBuiltinErrors: options.strictBuiltinErrors ?? false,
    staticComposites: options.staticComposites,
  });
  const manifest: BundleManifest = {
    ...(options.revision !== undefined ? { revision: options.revision } : {}),
    roots: options.roots ?? [''],
    wasm: entrypoints.map((entrypoint) => ({ entrypoint, module: '/policy.wasm' })),
    ...manifestRegoVersions(options.sources),
    ...(options.metadata || options.recordInputPaths
      ? {
          metadata: {
            ...options.metadata,
            ...(options.recordInputPaths ? { input_paths: referencedInputPaths(modules) } : {}),
          },
        }
      : {}),
  };
  const bundle = writeBundle({
    manifest,
    wasm,
    plan,
    data: options.data ?? {},
    sources: options.sources.map((s) => ({ path: s.file, text: s.text })),
  });
  // Read back the manifest so callers see the revision actually written (default: content hash).
  return { bundle, wasm, plan, manifest: readBundle(bundle).manifest, modules };
}

/** What `createHostBuiltins` accepts: a shared context (clock, strict mode, print sink) or its options. */
export type HostBuiltinContextLike = HostBuiltinContext | HostBuiltinOptions;

/** Our host builtins as opa-wasm `customBuiltins`. */
export function hostBuiltins(ctx?: HostBuiltinContextLike): CustomBuiltins {
  return createHostBuiltins(ctx) as CustomBuiltins;
}

/**
 * As hostBuiltins, plus stand-ins for the builtins the Guardian refuses, which halt every call with the refusal
 * (builtins/refused.ts): for modules compiled with `refusedBuiltins: 'evaluation-error'` (the authoring tools).
 */
export function authoringHostBuiltins(ctx?: HostBuiltinContextLike): CustomBuiltins {
  return createAuthoringHostBuiltins(ctx) as CustomBuiltins;
}

export interface LoadOptions {
  /** Passed to createHostBuiltins (clock, strict mode, print sink…). */
  builtinContext?: HostBuiltinContextLike;
  /** Replace the bundle's data document. */
  data?: Record<string, unknown>;
  limits?: Partial<BundleLimits>;
  /** Maximum Wasm memory in 64 KiB pages (default 1024 = 64 MiB). */
  maxMemoryPages?: number;
  /** Implementations of the custom builtins the bundle was compiled to call (see `withCustomBuiltins`). */
  customBuiltins?: Readonly<Record<string, unknown>>;
}

export interface LoadedBundle {
  policy: LoadedPolicy;
  manifest: BundleManifest;
  bundle: Bundle;
  /** Entrypoint name → id, as the module exports them. */
  entrypoints: Record<string, number>;
}

/** Load a bundle's Wasm module with our host builtins and its data. */
export async function loadBundle(bytes: Uint8Array, options: LoadOptions = {}): Promise<LoadedBundle> {
  const bundle = readBundle(bytes, options.limits);
  if (!bundle.wasm) throw new BundleError('bundle has no policy.wasm');
  const policy = await instantiatePolicy(
    bundle.wasm,
    withCustomBuiltins(hostBuiltins(options.builtinContext), options.customBuiltins ?? {}),
    options.maxMemoryPages,
  );
  policy.setData(wasmJson(options.data ?? bundle.data) as object);
  return {
    policy,
    manifest: bundle.manifest,
    bundle,
    entrypoints: { ...(policy.entrypoints as Record<string, number>) },
  };
}

export interface CompileQueryOptions {
  sources: RegoSource[];
  /** A Rego query, e.g. `data.p.f(1) = x`. */
  query: string;
  strictBuiltinErrors?: boolean;
  /** Plan name = opa-wasm entrypoint name (default `eval`). */
  name?: string;
  /**
   * A Rego term used as `input` (`with input as <term>` on every query expression): lets the input
   * hold values JSON cannot carry, such as sets (OPA's `input_term` in its test cases).
   */
  inputTerm?: string;
  /** The builtins the query and modules may call (`readCapabilities`); default: all of ours. */
  capabilities?: Capabilities;
  /**
   * `evaluation-error`: calls of builtins the Guardian refuses compile to host calls that halt when reached
   * (load the module with `authoringHostBuiltins`); default `compile-error` (CompileOptions.refusedBuiltins).
   */
  refusedBuiltins?: 'compile-error' | 'evaluation-error';
  /**
   * The base documents the query will be evaluated against: a rule at a path they occupy is a compile error, as
   * OPA's path-conflict check has it for `opa eval -d` (CompileOptions.data). Unset: no check.
   */
  conflictData?: Readonly<Record<string, unknown>>;
  /** The query's Rego version (default 1); 0 as `opa eval --v0-compatible` reads it (parseQuery). */
  regoVersion?: 0 | 1;
}

export interface CompiledQuery {
  wasm: Uint8Array;
  plan: Policy;
  program: CompiledProgram;
  body: Body;
  /** The opa-wasm entrypoint to evaluate. */
  entrypoint: string;
}

/** Compile an arbitrary query (binding every user variable) against the given modules. */
export async function compileQuery(options: CompileQueryOptions): Promise<CompiledQuery> {
  const templateStrings = allowsTemplateStrings(options.capabilities);
  const modules = parseSources(options.sources, { templateStrings });
  const body = parseQuery(options.query, 'query', { templateStrings, regoVersion: options.regoVersion ?? 1 });
  if (options.inputTerm !== undefined) {
    const termBody = parseQuery(options.inputTerm, 'input_term');
    const only = termBody[0];
    if (termBody.length !== 1 || only.terms.type !== 'term' || only.negated || only.with.length) {
      throw new RegoErrors([new RegoError('rego_parse_error', 'input term must be a single term', only?.location)]);
    }
    for (const expr of body)
      expr.with.push({ target: { type: 'ref', value: [{ type: 'var', value: 'input' }] }, value: only.terms.term });
  }
  const deferRefused = options.refusedBuiltins === 'evaluation-error';
  const program = compileModules(modules, {
    ...(options.capabilities
      ? { builtins: options.capabilities.builtins, deferredRefused: options.capabilities.refused }
      : {}),
    ...(deferRefused ? { refusedBuiltins: 'evaluation-error' as const } : {}),
    ...(options.conflictData ? { data: options.conflictData } : {}),
  });
  const name = options.name ?? 'eval';
  const plan = planQueries(program, [{ name, body, regoVersion: options.regoVersion ?? 1 }]);
  const wasm = await linkPolicyWasm(plan, {
    strictBuiltinErrors: options.strictBuiltinErrors ?? false,
    ...(deferRefused ? { hostCallSites: true } : {}),
  });
  return { wasm, plan, program, body, entrypoint: name };
}

export interface EvaluateQueryOptions extends CompileQueryOptions {
  data?: Record<string, unknown>;
  input?: unknown;
  builtinContext?: HostBuiltinContextLike;
  /** Implementations of the custom builtins the capabilities declare (see `withCustomBuiltins`). */
  customBuiltins?: Readonly<Record<string, unknown>>;
}

/** Compile, load and evaluate a query once: the result set (bindings per result). */
export async function evaluateQuery(options: EvaluateQueryOptions): Promise<ResultSet> {
  const q = await compileQuery(options);
  const host =
    options.refusedBuiltins === 'evaluation-error'
      ? authoringHostBuiltins(options.builtinContext)
      : hostBuiltins(options.builtinContext);
  const policy = await instantiatePolicy(q.wasm, withCustomBuiltins(host, options.customBuiltins ?? {}));
  policy.setData(wasmJson(options.data ?? {}) as object);
  return policy.evaluate(wasmJson(options.input), q.entrypoint) as ResultSet;
}
