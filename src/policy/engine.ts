// The Wasm policy engine host: runs an OPA-ABI module (our compiler's or OPA's own) through
// @open-policy-agent/opa-wasm with our host builtins, and turns every failure into a rejection the
// pipeline answers with DENY `evaluation_failed` (fail closed; ACS §6.4).
//
// Evaluation-time bound (opa-wasm is synchronous, so a running evaluation cannot be pre-empted in-process):
//  1. every host builtin call first checks the deadline and aborts the evaluation once it has passed;
//  2. linear memory has a hard maximum, so runaway allocation aborts (`opa_malloc: failed` / RangeError);
//  3. a result that arrives after the deadline is discarded and rejected as a timeout (fail closed).
// A tight loop in pure Wasm that never calls a host builtin and never allocates runs to completion before
// (3) rejects it; Rego evaluation always terminates (no unbounded recursion), so that is a documented
// latency bound, not a hang. After any abort the instance is re-created from the compiled module, so a
// module that trapped or ran out of memory never serves another request. For hard pre-emption use the
// worker-thread pool (./pool/pool.ts), which terminates a worker that overruns.
//
// Its parts: bundle-loading.ts (bundle → compiled module, data, revision), input-projection.ts (only the input
// members the bundle reads), wasm-abi.ts (linking, host calls, opa_eval), host-builtins.ts (the builtin table),
// errors.ts. This file holds the instance's life: load, warm-up, deadline, recycle, swap.
import { performance } from 'node:perf_hooks';
import { loadPolicy, type LoadedPolicy } from '@open-policy-agent/opa-wasm';
import type { Json } from '../json.ts';
import { opaWasmShadowedBuiltins, refusedBuiltins } from '../rego/builtins/index.ts';
import { isOpaWasmRuntimeError } from '../rego/errors.ts';
import { withHostCallSite } from '../rego/builtins/host/call-site.ts';
import type { BundleManifest } from '../rego/bundle/index.ts';
import { type BaseDocument, resolveBundle, type ResolvedBundle, type WasmBundleParts } from './bundle-loading.ts';
import { DeadlineExceeded, describeThrown, PolicyEvaluationError, PolicyLoadError } from './errors.ts';
import {
  type EvaluationClock,
  type HostBuiltin,
  type HostBuiltinFactory,
  projectHostBuiltins,
} from './host-builtins.ts';
import { hostBuiltinsWithCustom, importCustomBuiltinsModule } from './custom-builtins.ts';
import { inputPathTrie, type InputPathTrie, serialiseInput } from './input-projection.ts';
import type { PolicyEngine, PolicyEvaluation, PolicyInput, RawPolicyDecision } from './types.ts';
import { builtinsNeeded, evaluateOnce, forgetEvaluationValues, instantiateLinked } from './wasm-abi.ts';
import { type CompiledWasmModule, PAGE_BYTES, type WasmMemoryView } from './webassembly.ts';

// The engine's parts, exported from here as one API (src/policy/index.ts re-exports it).
export type { BundleManifest } from '../rego/bundle/index.ts';
export type { WasmBundleParts } from './bundle-loading.ts';
export { PolicyEvaluationError, PolicyLoadError, type PolicyEvaluationErrorCode } from './errors.ts';
export {
  projectHostBuiltins,
  type EvaluationClock,
  type HostBuiltin,
  type HostBuiltinFactory,
} from './host-builtins.ts';

export interface WasmPolicyEngineOptions {
  /** A bundle tarball (`.tar.gz`), a bare Wasm module, or already-extracted parts. */
  bundle: Uint8Array | WasmBundleParts;
  /** Default entrypoint, `pkg/rule` form. */
  entrypoint?: string;
  /**
   * Inputs whose JSON serialisation exceeds this are rejected before evaluation (default 1 MiB). What is
   * measured is what the module receives: for a bundle declaring `metadata.input_paths`, only those members.
   */
  maxInputBytes?: number;
  /** Evaluation deadline (default 250 ms); see the header comment for how it is enforced. */
  timeoutMs?: number;
  /** Hard cap on the module's linear memory, in 64 KiB pages (default 2048 = 128 MiB). */
  maxMemoryPages?: number;
  /** The instance is re-created after an evaluation leaves memory above this many pages (default 512). */
  recycleMemoryPages?: number;
  /** Overrides the revision (default: manifest `revision`, else `sha256:` of module + data). */
  revision?: string;
  /** Evaluations of the default entrypoint on `{}` at load, so the first real request is not cold (default 2). */
  warmupRuns?: number;
  /** Host builtins; default: `projectHostBuiltins` (createHostBuiltins from src/rego/builtins). */
  hostBuiltins?: HostBuiltinFactory;
  /**
   * A deployment's custom builtins: the path of an ES module whose default export maps builtin names to
   * functions (custom-builtins.ts), added to `hostBuiltins`. A path, not functions, so the pool's workers load
   * the same implementations. A bundle calling a builtin neither table provides is refused at load.
   */
  customBuiltinsModule?: string;
  /**
   * Write the input JSON straight into the module's memory and call `opa_eval` (OPA Wasm ABI 1.2) instead of
   * going through opa-wasm's `evaluate` (default true; false is the reference path for A/B and tests). Modules
   * below ABI 1.2 always go through opa-wasm.
   */
  directInput?: boolean;
  /**
   * Link the module's `opa_builtin0..4` imports to the engine's own host-call path (one shared UTF-8 decoder,
   * no argument array, primitive arguments reused when their JSON text repeats, results encoded straight into
   * the module's memory) instead of opa-wasm's (default true; false is the reference path for A/B and tests).
   */
  directBuiltins?: boolean;
}

export interface WasmPolicyEngine extends PolicyEngine {
  /** Entrypoint names the module exports (`pkg/rule`). */
  readonly entrypoints: readonly string[];
  readonly manifest: BundleManifest;
  /** Evaluates any entrypoint and returns its raw value (undefined when the entrypoint is undefined). */
  evaluateValue(
    input: unknown,
    options?: { entrypoint?: string; now?: Date },
  ): Promise<{ value: Json | undefined; durationMs: number }>;
  /** Swaps in a new bundle atomically; on failure the old one stays in force and the error is thrown. */
  replaceBundle(bundle: Uint8Array | WasmBundleParts, options?: { revision?: string }): Promise<void>;
  /** How many times an instance was re-created after an abort or memory growth (observability). */
  readonly instanceRecycles: number;
}

const DEFAULT_ENTRYPOINT = 'acs/decision';
const DEFAULT_MAX_INPUT_BYTES = 1024 * 1024;
const DEFAULT_TIMEOUT_MS = 250;
const DEFAULT_MAX_MEMORY_PAGES = 2048;
const DEFAULT_RECYCLE_MEMORY_PAGES = 512;

/** The bundle in force: compiled module, base document, and what the engine learnt loading it. */
interface LoadedModule extends ResolvedBundle {
  initialPages: number;
  /** The input members the bundle's policies can read; undefined ⇒ all. */
  inputPaths: InputPathTrie | undefined;
}

class Engine implements WasmPolicyEngine {
  private current!: LoadedModule;
  private instance: LoadedPolicy | undefined;
  private entrypointIds = new Map<string, number>();
  private evaluationNow = new Date(0);
  private deadline = Infinity;
  private recycles = 0;
  private readonly builtins: Record<string, HostBuiltin> = {};

  constructor(
    private readonly defaultEntrypoint: string,
    private readonly maxInputBytes: number,
    private readonly timeoutMs: number,
    private readonly maxMemoryPages: number,
    private readonly recycleMemoryPages: number,
    private readonly hostBuiltinFactory: HostBuiltinFactory,
    private readonly warmupRuns: number,
    private readonly directInput: boolean,
    private readonly directBuiltins: boolean,
  ) {
    const clock: EvaluationClock = {
      now: () => this.evaluationNow,
      strictBuiltinErrors: () => this.current?.manifest.metadata?.strict_builtin_errors === true,
    };
    const raw = this.hostBuiltinFactory(clock);
    for (const [name, fn] of Object.entries(raw)) {
      // The deadline is checked on every host call: the only point where a synchronous evaluation yields to us.
      this.builtins[name] = (...args: Json[]) => {
        if (performance.now() > this.deadline) throw new DeadlineExceeded();
        return fn(...args);
      };
    }
  }

  get revision(): string {
    return this.current.revision;
  }
  get manifest(): BundleManifest {
    return this.current.manifest;
  }
  get entrypoints(): readonly string[] {
    return [...this.entrypointIds.keys()];
  }
  get instanceRecycles(): number {
    return this.recycles;
  }

  async install(bundle: Uint8Array | WasmBundleParts, revision?: string): Promise<void> {
    const resolved = await resolveBundle(bundle, revision);
    const { instance, initialPages } = await this.instantiate(resolved.module, resolved.data);
    this.checkBuiltins(instance);
    const ids = new Map<string, number>(Object.entries(instance.entrypoints as Record<string, number>));
    // Warm-up: a freshly compiled module runs cold (its code is compiled lazily and optimised in the
    // background), so the default entrypoint runs on a dummy input before the module serves.
    const warmId = ids.get(this.defaultEntrypoint);
    if (this.warmupRuns > 0 && warmId !== undefined) {
      const dummy = new TextEncoder().encode('{}').buffer as ArrayBuffer;
      // Bounded like a real evaluation (generously: the code is still cold), so a module that spins in
      // host builtins cannot hang the load.
      this.deadline = performance.now() + Math.max(1000, 10 * this.timeoutMs);
      for (let i = 0; i < this.warmupRuns; i++) {
        try {
          forgetEvaluationValues(instance);
          instance.evaluate(dummy, warmId);
        } catch {
          // A policy may reject the dummy input; only the compilation side effect matters.
        }
      }
      this.deadline = Infinity;
    }
    this.current = { ...resolved, initialPages, inputPaths: inputPathTrie(resolved.manifest) };
    this.instance = instance;
    this.entrypointIds = ids;
  }

  private async instantiate(
    module: CompiledWasmModule,
    data: BaseDocument,
    knownInitial?: number,
  ): Promise<{ instance: LoadedPolicy; initialPages: number }> {
    // opa-wasm creates the memory; the module's import declares a minimum we must meet. OPA's own modules
    // declare the pages their static data needs, so retry with the size the engine reports.
    let initial = knownInitial ?? 5;
    for (let attempt = 0; attempt < 3; attempt++) {
      try {
        const memory = { initial, maximum: Math.max(initial, this.maxMemoryPages) };
        const instance = this.directBuiltins
          ? await instantiateLinked(module, memory, this.builtins)
          : await loadPolicy(module as Parameters<typeof loadPolicy>[0], memory, this.builtins);
        instance.setData(data as object | ArrayBuffer);
        return { instance, initialPages: initial };
      } catch (err) {
        const msg = describeThrown(err);
        const needed = /smaller than initial (\d+)/.exec(msg);
        if (needed && Number(needed[1]) > initial && Number(needed[1]) <= this.maxMemoryPages) {
          initial = Number(needed[1]);
          continue;
        }
        throw new PolicyLoadError(`policy module does not load: ${msg}`);
      }
    }
    throw new PolicyLoadError('policy module does not load: memory import could not be satisfied');
  }

  /**
   * Refuses a module that calls a builtin the Guardian refuses (http.send, …: whatever table an embedder passes,
   * docs/policy-authoring.md), or one neither opa-wasm nor the engine's table provides.
   */
  private checkBuiltins(instance: LoadedPolicy): void {
    const needed = builtinsNeeded(instance);
    const refused = needed.filter((name) => refusedBuiltins.has(name)).sort();
    if (refused.length > 0)
      throw new PolicyLoadError(
        `policy module calls builtins the Guardian refuses: ${refused.map((name) => `${name} (${refusedBuiltins.get(name)})`).join(', ')}`,
      );
    const missing = needed.filter((name) => !opaWasmShadowedBuiltins.has(name) && !(name in this.builtins)).sort();
    if (missing.length > 0)
      throw new PolicyLoadError(
        `policy module calls builtins no implementation is loaded for: ${missing.join(', ')} (a deployment's custom builtins come from its builtins module, docs/policy-authoring.md)`,
      );
  }

  private recycling: Promise<void> | undefined;

  /** Re-creates the instance from the compiled module; concurrent callers share one re-instantiation. */
  private recycle(): Promise<void> {
    if (!this.recycling) {
      this.recycles++;
      const module = this.current;
      this.recycling = this.instantiate(module.module, module.data, module.initialPages)
        .then(({ instance }) => {
          // A bundle swapped in meanwhile already brought its own instance.
          if (this.current === module) this.instance = instance;
        })
        .finally(() => {
          this.recycling = undefined;
        });
    }
    return this.recycling;
  }

  /** Takes a failed (or bloated) instance out of service; a no-op if it was already replaced. */
  private retire(failed: LoadedPolicy): Promise<void> {
    if (this.instance === failed) this.instance = undefined;
    return this.instance ? Promise.resolve() : this.recycle();
  }

  /** The instance to evaluate on, waiting for a pending re-instantiation. */
  private async ready(): Promise<LoadedPolicy> {
    for (let attempt = 0; attempt < 5; attempt++) {
      if (this.instance) return this.instance;
      await this.recycle();
    }
    throw new PolicyEvaluationError('module_aborted', 'policy instance could not be re-created');
  }

  async replaceBundle(bundle: Uint8Array | WasmBundleParts, options?: { revision?: string }): Promise<void> {
    // install() only assigns once everything loaded, so a failing bundle leaves the old one in force.
    await this.install(bundle, options?.revision);
  }

  async evaluateValue(
    input: unknown,
    options?: { entrypoint?: string; now?: Date },
  ): Promise<{ value: Json | undefined; durationMs: number }> {
    const entrypoint = options?.entrypoint ?? this.defaultEntrypoint;
    if (!this.entrypointIds.has(entrypoint))
      throw new PolicyEvaluationError(
        'unknown_entrypoint',
        `entrypoint ${entrypoint} is not in the policy module (has: ${this.entrypoints.join(', ') || 'none'})`,
      );

    // `undefined` input means "no input document" (policy tests); anything else must serialise to JSON.
    let inputPaths = this.current.inputPaths;
    let text = input === undefined ? undefined : serialiseInput(input, inputPaths, this.maxInputBytes);

    // No await while an instance is in service (one promise hop less per evaluation).
    const instance = this.instance ?? (await this.ready());
    // Entrypoint id read after a possible await: a bundle swap may have happened meanwhile (and may read other input members).
    const id = this.entrypointIds.get(entrypoint);
    if (id === undefined)
      throw new PolicyEvaluationError('unknown_entrypoint', `entrypoint ${entrypoint} is not in the policy module`);
    if (input !== undefined && this.current.inputPaths !== inputPaths) {
      inputPaths = this.current.inputPaths;
      text = serialiseInput(input, inputPaths, this.maxInputBytes);
    }
    this.evaluationNow = options?.now ?? new Date();
    const started = performance.now();
    this.deadline = started + this.timeoutMs;
    let resultSet: unknown;
    try {
      // No await between writing the input and opa_eval: the instance is shared by concurrent evaluations.
      resultSet = evaluateOnce(instance, text, id, { direct: this.directInput, maxInputBytes: this.maxInputBytes });
    } catch (err) {
      const durationMs = performance.now() - started;
      this.deadline = Infinity;
      // Refused before the module ran: the instance is intact.
      if (err instanceof PolicyEvaluationError) throw err;
      // Read before the instance is retired: a strict host builtin's call site is in its memory.
      const msg = withHostCallSite(instance, describeThrown(err));
      await this.retire(instance);
      if (err instanceof DeadlineExceeded) {
        throw new PolicyEvaluationError(
          'timeout',
          `evaluation of ${entrypoint} exceeded ${this.timeoutMs} ms (stopped at ${durationMs.toFixed(1)} ms)`,
        );
      }
      // opa_abort messages from compiled Rego read `<file>:<row>:<col>: <code>: <message>` or are OPA's Wasm
      // run-time errors (`<file>:<row>:<col>: var assignment conflict`); strict host builtins throw
      // `eval_builtin_error: <name>: <message>`, put after their call site `<file>:<row>` as OPA reports them.
      if (/(^|: )(eval_[a-z_]+|rego_[a-z_]+): /.test(msg) || isOpaWasmRuntimeError(msg)) {
        throw new PolicyEvaluationError('policy_error', msg);
      }
      throw new PolicyEvaluationError('module_aborted', `policy module aborted: ${msg}`);
    }
    const durationMs = performance.now() - started;
    this.deadline = Infinity;
    if ((instance.mem as WasmMemoryView).buffer.byteLength > this.recycleMemoryPages * PAGE_BYTES)
      await this.retire(instance);
    if (durationMs > this.timeoutMs) {
      throw new PolicyEvaluationError(
        'timeout',
        `evaluation of ${entrypoint} took ${durationMs.toFixed(1)} ms, limit ${this.timeoutMs} ms`,
      );
    }
    if (!Array.isArray(resultSet))
      throw new PolicyEvaluationError('invalid_result', 'policy module returned a non-array result set');
    if (resultSet.length === 0) return { value: undefined, durationMs };
    if (resultSet.length > 1)
      throw new PolicyEvaluationError(
        'invalid_result',
        `entrypoint ${entrypoint} produced ${resultSet.length} results`,
      );
    const row = resultSet[0] as { result?: Json } | null;
    if (row === null || typeof row !== 'object' || !('result' in row)) {
      throw new PolicyEvaluationError('invalid_result', 'policy module result row has no `result` binding');
    }
    return { value: row.result as Json, durationMs };
  }

  async evaluate(input: PolicyInput, options?: { entrypoint?: string; now?: Date }): Promise<PolicyEvaluation> {
    const revision = this.revision;
    const { value, durationMs } = await this.evaluateValue(input, options);
    if (value === undefined) return { decision: undefined, revision, durationMs };
    if (value === null || typeof value !== 'object' || Array.isArray(value)) {
      throw new PolicyEvaluationError(
        'invalid_result',
        `entrypoint produced a ${value === null ? 'null' : Array.isArray(value) ? 'array' : typeof value}, expected a decision object`,
      );
    }
    return { decision: value as RawPolicyDecision, revision, durationMs };
  }
}

/**
 * Loads a policy bundle into a Wasm engine. Rejects with `PolicyLoadError` when the bundle is unusable
 * (nothing half-loaded is returned).
 */
export async function createWasmPolicyEngine(options: WasmPolicyEngineOptions): Promise<WasmPolicyEngine> {
  const positive = (v: number | undefined, dflt: number, name: string): number => {
    const n = v ?? dflt;
    if (!Number.isFinite(n) || n <= 0) throw new RangeError(`${name} must be a positive number`);
    return n;
  };
  const baseBuiltins = options.hostBuiltins ?? projectHostBuiltins;
  const hostBuiltins = options.customBuiltinsModule
    ? hostBuiltinsWithCustom(baseBuiltins, await importCustomBuiltinsModule(options.customBuiltinsModule))
    : baseBuiltins;
  const engine = new Engine(
    options.entrypoint ?? DEFAULT_ENTRYPOINT,
    positive(options.maxInputBytes, DEFAULT_MAX_INPUT_BYTES, 'maxInputBytes'),
    positive(options.timeoutMs, DEFAULT_TIMEOUT_MS, 'timeoutMs'),
    Math.floor(positive(options.maxMemoryPages, DEFAULT_MAX_MEMORY_PAGES, 'maxMemoryPages')),
    Math.floor(positive(options.recycleMemoryPages, DEFAULT_RECYCLE_MEMORY_PAGES, 'recycleMemoryPages')),
    hostBuiltins,
    Math.max(0, Math.floor(options.warmupRuns ?? 2)),
    options.directInput ?? true,
    options.directBuiltins ?? true,
  );
  await engine.install(options.bundle, options.revision);
  return engine;
}
