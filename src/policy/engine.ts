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
import { createHash } from 'node:crypto';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { loadPolicy, type LoadedPolicy } from '@open-policy-agent/opa-wasm';
import type { Json } from '../store/types.ts';
import { createHostBuiltins, HostBuiltinContext, opaWasmShadowedBuiltins } from '../rego/builtins/index.ts';
import {
  POLICY_PARAMS_JSON,
  type PolicyEngine,
  type PolicyEvaluation,
  type PolicyInput,
  type RawPolicyDecision,
} from './types.ts';
import { BundleError, readBundle, type BundleManifest } from '../rego/bundle/index.ts';
import { isOpaWasmRuntimeError } from '../rego/errors.ts';

export type { BundleManifest } from '../rego/bundle/index.ts';

/** The parts of a bundle the engine uses. */
export interface WasmBundleParts {
  /** The OPA-ABI Wasm module (`/policy.wasm`). */
  wasm: Uint8Array;
  /** Base document `data`; `{}` when absent. */
  data?: Json;
  /**
   * The base document as JSON text (an object), used instead of `data` when given: opa-wasm hands text to the
   * module, which parses it once into its heap — no JSON.parse + JSON.stringify of a large document on the event
   * loop (src/lifecycle unpacks bundles in a worker thread and passes the text through).
   */
  dataJson?: Uint8Array;
  manifest?: BundleManifest;
}

/** What setData receives: a JSON object, or JSON text in an ArrayBuffer (opa-wasm accepts both). */
type BaseDocument = Json | ArrayBuffer;

const WASM_MAGIC = [0x00, 0x61, 0x73, 0x6d];

/** True when the bytes are a bare Wasm module rather than a bundle tarball. */
function isWasmModule(bytes: Uint8Array): boolean {
  return WASM_MAGIC.every((b, i) => bytes[i] === b);
}

/** A host builtin as opa-wasm calls it: JSON-decoded arguments in, JSON value (or undefined) out. */
export type HostBuiltin = (...args: Json[]) => unknown;

/** What the engine tells host builtins about the evaluation in progress (time.now_ns and friends). */
export interface EvaluationClock {
  /** The evaluation's `now` (fixed for one evaluation, so `time.now_ns` is stable within it — OPA semantics). */
  now(): Date;
  /** True when the bundle in force was built with strict builtin errors (manifest `metadata.strict_builtin_errors`). */
  strictBuiltinErrors?(): boolean;
}

/** Builds the host builtin table for one engine instance; called once per (re)instantiation. */
export type HostBuiltinFactory = (clock: EvaluationClock) => Record<string, HostBuiltin>;

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

export type PolicyEvaluationErrorCode =
  | 'input_too_large'
  | 'input_not_serialisable'
  | 'unknown_entrypoint'
  | 'timeout'
  | 'policy_error'
  | 'module_aborted'
  | 'invalid_result';

/** Every evaluation failure rejects with this; the pipeline maps it to DENY `evaluation_failed`. */
export class PolicyEvaluationError extends Error {
  constructor(
    readonly code: PolicyEvaluationErrorCode,
    message: string,
  ) {
    super(message);
    this.name = 'PolicyEvaluationError';
  }
}

/** Loading a module failed (bad bundle, ABI mismatch, a host builtin the module needs is missing). */
export class PolicyLoadError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'PolicyLoadError';
  }
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
const PAGE_BYTES = 64 * 1024;

// lib has no DOM/WebAssembly typings here: the few members the host touches, typed locally.
interface WasmMemoryView {
  readonly buffer: ArrayBuffer;
}
interface WasmMemory extends WasmMemoryView {
  grow(pages: number): number;
}

/**
 * The members of opa-wasm's LoadedPolicy its ABI 1.2 `evaluate` fast path uses (opa.js): the input is written at
 * `dataHeapPtr`, then `opa_eval(0, entrypoint, dataAddr, inputAddr, inputLen, heapPtr, 0)` returns the address of
 * the result set as NUL-terminated JSON. Not in its typings, so checked at run time before use.
 */
interface OpaAbiInstance {
  minorVersion: number;
  dataAddr: number;
  dataHeapPtr: number;
  mem: WasmMemory;
  wasmInstance: {
    exports: {
      opa_eval?: (
        reserved: number,
        entrypoint: number,
        data: number,
        input: number,
        inputLen: number,
        heapPtr: number,
        format: number,
      ) => number;
    };
  };
}

function opaAbi12(instance: LoadedPolicy): OpaAbiInstance | undefined {
  const abi = instance as unknown as Partial<OpaAbiInstance>;
  return typeof abi.minorVersion === 'number' &&
    abi.minorVersion >= 2 &&
    typeof abi.dataAddr === 'number' &&
    typeof abi.dataHeapPtr === 'number' &&
    typeof abi.wasmInstance?.exports.opa_eval === 'function' &&
    typeof abi.mem?.grow === 'function'
    ? (abi as OpaAbiInstance)
    : undefined;
}

/**
 * opa-wasm's own JS builtins, which take precedence over custom ones in its host-call path: the engine's path
 * dispatches the same way. Not in the package's exports map, so required by file path next to its entry.
 */
const requireCjs = createRequire(import.meta.url);
const sdkJsBuiltins = requireCjs(
  join(dirname(requireCjs.resolve('@open-policy-agent/opa-wasm')), 'builtins', 'index.js'),
) as Record<string, HostBuiltin>;
/** opa-wasm's policy wrapper, built here around an instance the engine linked itself (the ESM entry exports only loadPolicy). */
const OpaLoadedPolicy = (
  requireCjs('@open-policy-agent/opa-wasm') as {
    LoadedPolicy: new (instance: object, memory: WasmMemory, minorVersion: number | undefined) => LoadedPolicy;
  }
).LoadedPolicy;

/** The exports the engine's host-call path uses (OPA Wasm ABI 1.x). */
interface OpaHostCallExports {
  opa_json_dump(addr: number): number;
  opa_json_parse(addr: number, len: number): number;
  opa_malloc(bytes: number): number;
  opa_free?(addr: number): void;
  opa_heap_ptr_get?(): number;
  opa_heap_ptr_set?(addr: number): void;
  builtins(): number;
  opa_wasm_abi_version?: { value: number };
  opa_wasm_abi_minor_version?: { value: number };
}

/** One instance's link between its builtin ids and the host: filled in once the instance exists. */
interface HostCallLink {
  memory: WasmMemory;
  exports: OpaHostCallExports | undefined;
  /** Builtin name by the module's id. */
  names: string[];
  /** Implementation by id (SDK JS builtin first, then the engine's table), undefined ⇒ not implemented. */
  impls: (HostBuiltin | undefined)[];
  /** The last JSON text and value of each primitive argument slot (id * 4 + position). */
  argTexts: (string | undefined)[];
  argValues: Json[];
  /**
   * Values below this address are the base document and the module's static data: written before the first
   * evaluation and never again for the instance's life (evaluations allocate above the data heap pointer; a
   * bundle swap or recycle builds a new instance and link). Holds only for an allocator that never hands out
   * freed memory (our runtime's bump allocator: opa_free is a no-op); 0 until the data is set, and for good
   * when the allocator reuses a freed block (OPA's own runtime keeps free lists).
   */
  immutableBelow: number;
  /** Primitive values found at addresses below immutableBelow. */
  immutableValues: Map<number, Json>;
  /**
   * Primitive values found above it during the current evaluation (emptied before each one): with a bump
   * allocator an address names one value for a whole evaluation, so the same text passed to several calls
   * (a message searched by five PII patterns) is dumped and decoded once. Unused when immutableBelow is 0.
   */
  evaluationValues: Map<number, Json>;
}

/** The host-call link of each instance built with the engine's imports, to empty its per-evaluation values. */
const hostCallLinks = new WeakMap<LoadedPolicy, HostCallLink>();

/** Before each evaluation: it reuses the heap above the data, so addresses the last one saw name other values. */
function forgetEvaluationValues(instance: LoadedPolicy): void {
  const link = hostCallLinks.get(instance);
  if (link !== undefined && link.evaluationValues.size > 0) link.evaluationValues.clear();
}

/**
 * A builtin argument, dumped by the module as JSON. A primitive whose text repeats the slot's last one is
 * reused: equal JSON text of a primitive is an equal, immutable value (objects and arrays are parsed afresh, as
 * a builtin could mutate what it receives). Saves the parse of long constant arguments such as a regex pattern.
 */
function hostCallArgument(link: HostCallLink, slot: number, addr: number): Json {
  const immutable = addr < link.immutableBelow;
  const known = immutable ? link.immutableValues : link.immutableBelow > 0 ? link.evaluationValues : undefined;
  if (known !== undefined) {
    const value = known.get(addr);
    if (value !== undefined || known.has(addr)) return value as Json;
  }
  const text = readCString(link.memory, link.exports!.opa_json_dump(addr));
  let value: Json;
  if (text === link.argTexts[slot]) value = link.argValues[slot];
  else {
    value = JSON.parse(text) as Json;
    if (value !== null && typeof value === 'object') return value;
    link.argTexts[slot] = text;
    link.argValues[slot] = value;
  }
  // Base-document and static primitives (a configured regex pattern) are then never dumped again, others
  // not again in this evaluation.
  known?.set(addr, value);
  return value;
}

/**
 * A builtin's result into the module: its JSON text encoded straight into memory from `opa_malloc` (sized for
 * ASCII; re-allocated once for other text), then `opa_json_parse`. Undefined ⇒ 0 (the builtin is undefined);
 * what does not parse throws opa-wasm's message.
 */
function hostCallResult(link: HostCallLink, result: unknown): number {
  if (result === undefined) return 0;
  const exports = link.exports!;
  let addr: number;
  let length: number;
  if (result instanceof ArrayBuffer) {
    length = result.byteLength;
    addr = exports.opa_malloc(length);
    new Uint8Array(link.memory.buffer, addr, length).set(new Uint8Array(result));
  } else {
    const text = JSON.stringify(result) as string | undefined;
    if (text === undefined) throw 'failed to parse json value';
    addr = exports.opa_malloc(text.length);
    const { read, written } = utf8Encoder.encodeInto(text, new Uint8Array(link.memory.buffer, addr, text.length));
    length = written;
    if (read < text.length) {
      const bytes = utf8Encoder.encode(text);
      length = bytes.byteLength;
      addr = exports.opa_malloc(length);
      new Uint8Array(link.memory.buffer, addr, length).set(bytes);
    }
  }
  const parsed = exports.opa_json_parse(addr, length);
  if (parsed === 0) throw 'failed to parse json value';
  return parsed;
}

function hostCall(
  link: HostCallLink,
  id: number,
  arity: number,
  a1: number,
  a2: number,
  a3: number,
  a4: number,
): number {
  const impl = link.impls[id];
  if (impl === undefined) throw { message: `not implemented: built-in function ${id}: ${link.names[id]}` };
  const slot = id * 4;
  let result: unknown;
  switch (arity) {
    case 0:
      result = impl();
      break;
    case 1:
      result = impl(hostCallArgument(link, slot, a1));
      break;
    case 2:
      result = impl(hostCallArgument(link, slot, a1), hostCallArgument(link, slot + 1, a2));
      break;
    case 3:
      result = impl(
        hostCallArgument(link, slot, a1),
        hostCallArgument(link, slot + 1, a2),
        hostCallArgument(link, slot + 2, a3),
      );
      break;
    default:
      result = impl(
        hostCallArgument(link, slot, a1),
        hostCallArgument(link, slot + 1, a2),
        hostCallArgument(link, slot + 2, a3),
        hostCallArgument(link, slot + 3, a4),
      );
  }
  return hostCallResult(link, result);
}

/**
 * True when a block freed with opa_free comes back from the next opa_malloc of its size (a free-list allocator),
 * so an address below the data heap pointer could later hold an evaluation's value. Probed on a fresh
 * instance, before its heap pointer is read; the pointer is put back afterwards.
 */
function allocatorReusesFreedBlocks(exports: OpaHostCallExports): boolean {
  // Without the exports to probe with, assume the worst.
  if (
    typeof exports.opa_free !== 'function' ||
    typeof exports.opa_heap_ptr_get !== 'function' ||
    typeof exports.opa_heap_ptr_set !== 'function'
  )
    return true;
  const heapPtr = exports.opa_heap_ptr_get();
  const first = exports.opa_malloc(64);
  exports.opa_free(first);
  const second = exports.opa_malloc(64);
  exports.opa_heap_ptr_set(heapPtr);
  return second === first;
}

/** The import object of one instance: memory, abort/println, and `opa_builtin0..4` on the engine's host-call path. */
function hostCallImports(link: HostCallLink): object {
  return {
    env: {
      memory: link.memory,
      opa_abort: (addr: number) => {
        throw readCString(link.memory, addr);
      },
      opa_println: (addr: number) => {
        console.log(readCString(link.memory, addr));
      },
      opa_builtin0: (id: number) => hostCall(link, id, 0, 0, 0, 0, 0),
      opa_builtin1: (id: number, _ctx: number, a1: number) => hostCall(link, id, 1, a1, 0, 0, 0),
      opa_builtin2: (id: number, _ctx: number, a1: number, a2: number) => hostCall(link, id, 2, a1, a2, 0, 0),
      opa_builtin3: (id: number, _ctx: number, a1: number, a2: number, a3: number) =>
        hostCall(link, id, 3, a1, a2, a3, 0),
      opa_builtin4: (id: number, _ctx: number, a1: number, a2: number, a3: number, a4: number) =>
        hostCall(link, id, 4, a1, a2, a3, a4),
    },
  };
}

const utf8Encoder = new TextEncoder();
const utf8Decoder = new TextDecoder();
type CompiledWasmModule = object;
const WasmApi = (
  globalThis as unknown as {
    WebAssembly: {
      compile(bytes: Uint8Array): Promise<CompiledWasmModule>;
      instantiate(module: CompiledWasmModule, imports: object): Promise<{ exports: object }>;
      Memory: new (descriptor: { initial: number; maximum: number }) => WasmMemory;
    };
  }
).WebAssembly;

class DeadlineExceeded extends Error {
  constructor() {
    super('evaluation deadline exceeded');
    this.name = 'DeadlineExceeded';
  }
}

interface LoadedModule {
  module: CompiledWasmModule;
  data: BaseDocument;
  manifest: BundleManifest;
  revision: string;
  initialPages: number;
  /** The input members the bundle's policies can read; undefined ⇒ all. */
  inputPaths: InputPathTrie | undefined;
}

/**
 * The project's builtin library, with `time.now_ns` pinned to the evaluation's `now` (OPA: one clock
 * reading per evaluation; replay passes the recorded time, so time-based rules decide identically).
 */
export const projectHostBuiltins: HostBuiltinFactory = (clock) => {
  const nowNs = (): bigint => BigInt(clock.now().getTime()) * 1_000_000n;
  const lenient = createHostBuiltins(new HostBuiltinContext({ clock: nowNs })) as Record<string, HostBuiltin>;
  const strict = createHostBuiltins(new HostBuiltinContext({ clock: nowNs, strict: true })) as Record<
    string,
    HostBuiltin
  >;
  // The table outlives bundle swaps, so strictness is read per call from the bundle in force: host builtins
  // then fail the same way as the Wasm-native ones that bundle was linked with.
  return Object.fromEntries(
    Object.keys(lenient).map((name) => [
      name,
      (...args: Json[]) => (clock.strictBuiltinErrors?.() ? strict : lenient)[name](...args),
    ]),
  );
};

function describeThrown(err: unknown): string {
  if (typeof err === 'string') return err;
  if (err instanceof Error) return err.message;
  if (err && typeof err === 'object' && 'message' in err && typeof (err as { message: unknown }).message === 'string') {
    return (err as { message: string }).message;
  }
  return String(err);
}

async function resolveBundle(
  bundle: Uint8Array | WasmBundleParts,
  revisionOverride?: string,
): Promise<Omit<LoadedModule, 'initialPages' | 'inputPaths'>> {
  let parts: { wasm: Uint8Array; data: Json; manifest: BundleManifest };
  if (bundle instanceof Uint8Array) {
    if (isWasmModule(bundle)) parts = { wasm: bundle, data: {}, manifest: {} };
    else {
      // The shared bundle reader (size limits, nested data mounts, manifest checks).
      let read;
      try {
        read = readBundle(bundle);
      } catch (err) {
        if (err instanceof BundleError) throw new PolicyLoadError(`policy bundle is unusable: ${err.message}`);
        throw err;
      }
      if (!read.wasm) throw new PolicyLoadError('policy bundle has no Wasm module (build it with an entrypoint)');
      if (!isWasmModule(read.wasm)) throw new PolicyLoadError('policy bundle: the module is not WebAssembly');
      parts = { wasm: read.wasm, data: read.data as Json, manifest: read.manifest };
    }
  } else if (bundle.dataJson) {
    const text = bundle.dataJson;
    // Parsed inside the module; only its shape is checked here (an object), the module refuses malformed JSON.
    let first = 0;
    while (
      first < text.length &&
      (text[first] === 0x20 || text[first] === 0x0a || text[first] === 0x0d || text[first] === 0x09)
    )
      first++;
    if (text[first] !== 0x7b) throw new PolicyLoadError('bundle data must be a JSON object');
    const buffer =
      text.byteOffset === 0 && text.byteLength === text.buffer.byteLength
        ? (text.buffer as ArrayBuffer)
        : (text.slice().buffer as ArrayBuffer);
    return finishResolve(bundle.wasm, buffer, text, bundle.manifest ?? {}, revisionOverride);
  } else {
    parts = { wasm: bundle.wasm, data: bundle.data ?? {}, manifest: bundle.manifest ?? {} };
  }
  if (parts.data === null || typeof parts.data !== 'object' || Array.isArray(parts.data)) {
    throw new PolicyLoadError('bundle data must be a JSON object');
  }
  return finishResolve(parts.wasm, parts.data, JSON.stringify(parts.data), parts.manifest, revisionOverride);
}

/** Compiles the module (off the main thread: WebAssembly.compile) and names the revision. */
async function finishResolve(
  wasm: Uint8Array,
  data: BaseDocument,
  dataText: string | Uint8Array,
  manifest: BundleManifest,
  revisionOverride?: string,
): Promise<Omit<LoadedModule, 'initialPages' | 'inputPaths'>> {
  let module: CompiledWasmModule;
  try {
    module = await WasmApi.compile(wasm);
  } catch (err) {
    throw new PolicyLoadError(`policy module does not compile: ${describeThrown(err)}`);
  }
  const revision =
    revisionOverride ??
    (typeof manifest.revision === 'string' && manifest.revision.length > 0
      ? manifest.revision
      : 'sha256:' + createHash('sha256').update(wasm).update(dataText).digest('hex'));
  return { module, data, manifest, revision };
}

/**
 * A trie of input paths: `true` keeps the whole member below it. ANY_KEY (a manifest path's `null`) stands for
 * every member of an object and every element of an array; a node's literal branches already include it
 * (merged when the trie is built), so a key needs one lookup.
 */
type InputPathTrie = Map<string | typeof ANY_KEY, InputPathTrie | true>;
const ANY_KEY = Symbol('any key');

/** What both tries keep: `true` absorbs anything. */
function mergeTries(a: InputPathTrie | true, b: InputPathTrie | true): InputPathTrie | true {
  if (a === true || b === true) return true;
  const out: InputPathTrie = new Map(a);
  for (const [key, below] of b) {
    const mine = out.get(key);
    out.set(key, mine === undefined ? below : mergeTries(mine, below));
  }
  return out;
}

/** Folds each node's wildcard branch into its literal branches, then does the same below. */
function spreadWildcards(node: InputPathTrie): InputPathTrie {
  const any = node.get(ANY_KEY);
  if (any !== undefined) {
    for (const [key, below] of node) if (key !== ANY_KEY) node.set(key, mergeTries(below, any));
  }
  for (const [key, below] of node) if (below !== true) node.set(key, spreadWildcards(below));
  return node;
}

/**
 * The input projection a bundle declares in manifest `metadata.input_paths` (compileBundle with
 * `recordInputPaths`): the input paths its policies can read, `null` for a dynamic key. Undefined ⇒ send the
 * whole input (bundles without the member, e.g. OPA's own, or a policy that reads `input` as a whole).
 */
function inputPathTrie(manifest: BundleManifest): InputPathTrie | undefined {
  const paths = manifest.metadata?.input_paths;
  if (
    !Array.isArray(paths) ||
    !paths.every((p) => Array.isArray(p) && p.every((seg) => typeof seg === 'string' || seg === null))
  )
    return undefined;
  const root: InputPathTrie = new Map();
  for (const path of paths as (string | null)[][]) {
    if (path.length === 0) return undefined;
    let node = root;
    for (let i = 0; i < path.length; i++) {
      const key = path[i] ?? ANY_KEY;
      const existing = node.get(key);
      if (existing === true) break;
      if (i === path.length - 1) node.set(key, true);
      else {
        const next: InputPathTrie = existing ?? new Map();
        node.set(key, next);
        node = next;
      }
    }
  }
  return spreadWildcards(root);
}

/** `out[key] = value` that also keeps a member named `__proto__` as data (keys under a wildcard come from the input). */
function setMember(out: Record<string, unknown>, key: string, value: unknown): void {
  if (key === '__proto__')
    Object.defineProperty(out, key, { value, enumerable: true, writable: true, configurable: true });
  else out[key] = value;
}

/**
 * The members of `value` the trie names; a wildcard maps every member of an object and every element of an
 * array. Other values are kept as they are (a path into them is undefined in Rego anyway), and so are arrays
 * under a node without a wildcard (a string key into an array is undefined).
 */
function projectInput(value: unknown, trie: InputPathTrie): unknown {
  if (value === null || typeof value !== 'object') return value;
  const any = trie.get(ANY_KEY);
  if (Array.isArray(value))
    return any === undefined || any === true ? value : value.map((v: unknown) => projectInput(v, any));
  const source = value as Record<string, unknown>;
  const out: Record<string, unknown> = {};
  if (any === undefined) {
    for (const [key, below] of trie) {
      if (!Object.hasOwn(source, key)) continue;
      out[key as string] = below === true ? source[key as string] : projectInput(source[key as string], below);
    }
    return out;
  }
  for (const key of Object.keys(source)) {
    const below = trie.get(key) ?? any;
    setMember(out, key, below === true ? source[key] : projectInput(source[key], below));
  }
  return out;
}

/** Reads a NUL-terminated UTF-8 string out of the instance's memory. */
function readCString(memory: WasmMemoryView, addr: number): string {
  const bytes = new Uint8Array(memory.buffer);
  const nul = bytes.indexOf(0, addr);
  return utf8Decoder.decode(bytes.subarray(addr, nul < 0 ? bytes.length : nul));
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  if (value === null || typeof value !== 'object' || Array.isArray(value)) return false;
  const proto = Object.getPrototypeOf(value) as unknown;
  return (proto === Object.prototype || proto === null) && typeof (value as { toJSON?: unknown }).toJSON !== 'function';
}

/**
 * The input as JSON text, with `params` taken from the text the input carries (POLICY_PARAMS_JSON) instead of
 * stringified again, when params go to the module whole. Members are written in the order JSON.stringify of the
 * (projected) input would write them, with the same omissions (undefined values), so only the params text can
 * differ from it, and then only in key order (JCS sorts keys; Rego objects are unordered).
 */
function inputJson(input: unknown, trie: InputPathTrie | undefined): string | undefined {
  const paramsJson = isPlainObject(input)
    ? (input as { [POLICY_PARAMS_JSON]?: unknown })[POLICY_PARAMS_JSON]
    : undefined;
  if (typeof paramsJson !== 'string' || (trie && (trie.get('params') !== true || trie.has(ANY_KEY))))
    return JSON.stringify(trie ? projectInput(input, trie) : input);
  const source = input as Record<string, unknown>;
  let text = '{';
  const keys = trie ? (trie.keys() as Iterable<string>) : Object.keys(source);
  for (const key of keys) {
    if (trie && !Object.hasOwn(source, key)) continue;
    const below = trie?.get(key);
    const value =
      key === 'params'
        ? paramsJson
        : JSON.stringify(below === undefined || below === true ? source[key] : projectInput(source[key], below));
    if (value === undefined) continue;
    text += (text.length > 1 ? ',' : '') + JSON.stringify(key) + ':' + value;
  }
  return text + '}';
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
    // Warm-up: V8 compiles Wasm lazily and tiers up in the background, so a cold first evaluation of a
    // realistic library costs tens of ms. Run the default entrypoint on a dummy input before serving.
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
          ? await this.instantiateLinked(module, memory)
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

  /** What loadPolicy does (ABI version checks, builtin ids), with the engine's host-call imports. */
  private async instantiateLinked(
    module: CompiledWasmModule,
    descriptor: { initial: number; maximum: number },
  ): Promise<LoadedPolicy> {
    const link: HostCallLink = {
      memory: new WasmApi.Memory(descriptor),
      exports: undefined,
      names: [],
      impls: [],
      argTexts: [],
      argValues: [],
      immutableBelow: 0,
      immutableValues: new Map(),
      evaluationValues: new Map(),
    };
    const instance = await WasmApi.instantiate(module, hostCallImports(link));
    const exports = instance.exports as OpaHostCallExports;
    const major = exports.opa_wasm_abi_version?.value;
    if (major === undefined) console.error('opa_wasm_abi_version undefined');
    else if (major !== 1) throw `unsupported ABI version ${major}`;
    const minor = exports.opa_wasm_abi_minor_version?.value;
    if (minor === undefined) console.error('opa_wasm_abi_minor_version undefined');
    link.exports = exports;
    const reusesFreed = allocatorReusesFreedBlocks(exports);
    const ids = JSON.parse(readCString(link.memory, exports.opa_json_dump(exports.builtins()))) as Record<
      string,
      number
    >;
    for (const [name, id] of Object.entries(ids)) {
      link.names[id] = name;
      link.impls[id] = Object.hasOwn(sdkJsBuiltins, name) ? sdkJsBuiltins[name] : this.builtins[name];
    }
    const policy = new OpaLoadedPolicy(instance, link.memory, minor);
    hostCallLinks.set(policy, link);
    const setData = policy.setData.bind(policy);
    // The data heap pointer is known once the base document is in; setting data again starts a new region.
    policy.setData = (data) => {
      link.immutableBelow = 0;
      link.immutableValues.clear();
      link.evaluationValues.clear();
      setData(data);
      if (!reusesFreed) link.immutableBelow = (policy as unknown as OpaAbiInstance).dataHeapPtr;
    };
    return policy;
  }

  private checkBuiltins(instance: LoadedPolicy): void {
    const exportsObj = (instance.wasmInstance as unknown as { exports: Record<string, unknown> }).exports;
    const builtinsFn = exportsObj.builtins as (() => number) | undefined;
    const dump = exportsObj.opa_json_dump as ((addr: number) => number) | undefined;
    if (typeof builtinsFn !== 'function' || typeof dump !== 'function')
      throw new PolicyLoadError('policy module lacks the builtins/opa_json_dump exports');
    const needed = Object.keys(
      JSON.parse(readCString(instance.mem as WasmMemoryView, dump(builtinsFn()))) as Record<string, number>,
    );
    const missing = needed.filter((name) => !opaWasmShadowedBuiltins.has(name) && !(name in this.builtins)).sort();
    if (missing.length > 0)
      throw new PolicyLoadError(
        `policy module needs host builtins this engine does not provide: ${missing.join(', ')}`,
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

  /**
   * The input as JSON text. Only the members the bundle's policies can read are serialised (and count against
   * maxInputBytes): serialising and parsing members no policy reads was a large share of a decision's
   * evaluation time (docs/performance.md). Too large ⇒ rejected here when even one byte per UTF-16 code unit
   * exceeds the limit; the exact UTF-8 length is checked as the text is written (writeInput).
   */
  private serialiseInput(input: unknown, inputPaths: InputPathTrie | undefined): string {
    let text: string | undefined;
    try {
      text = inputJson(input, inputPaths);
    } catch (err) {
      throw new PolicyEvaluationError(
        'input_not_serialisable',
        `input is not JSON-serialisable: ${describeThrown(err)}`,
      );
    }
    if (text === undefined) throw new PolicyEvaluationError('input_not_serialisable', 'input is not JSON-serialisable');
    if (text.length > this.maxInputBytes)
      throw new PolicyEvaluationError(
        'input_too_large',
        `input is at least ${text.length} bytes, limit ${this.maxInputBytes}`,
      );
    return text;
  }

  private inputTooLarge(bytes: number): PolicyEvaluationError {
    return new PolicyEvaluationError('input_too_large', `input is ${bytes} bytes, limit ${this.maxInputBytes}`);
  }

  /** UTF-8 of the input in a fresh ArrayBuffer, for opa-wasm's own `evaluate` (which copies it into memory). */
  private encodeInput(text: string): ArrayBuffer {
    const encoded = utf8Encoder.encode(text);
    if (encoded.byteLength > this.maxInputBytes) throw this.inputTooLarge(encoded.byteLength);
    const whole = encoded.byteOffset === 0 && encoded.byteLength === encoded.buffer.byteLength;
    return (
      whole ? encoded.buffer : encoded.buffer.slice(encoded.byteOffset, encoded.byteOffset + encoded.byteLength)
    ) as ArrayBuffer;
  }

  /**
   * Encodes the input straight into the module's memory at the heap pointer (no intermediate byte array, no
   * copy); grows the memory only when the free tail is too small. Returns the UTF-8 length.
   */
  private writeInput(abi: OpaAbiInstance, text: string): number {
    const at = abi.dataHeapPtr;
    let { read, written } = utf8Encoder.encodeInto(text, new Uint8Array(abi.mem.buffer, at));
    if (read < text.length) {
      // At most 3 UTF-8 bytes per remaining UTF-16 code unit; a grow past the memory maximum throws (module_aborted).
      const needed = at + written + 3 * (text.length - read) - abi.mem.buffer.byteLength;
      if (written + (text.length - read) > this.maxInputBytes) throw this.inputTooLarge(written + (text.length - read));
      abi.mem.grow(Math.ceil(needed / PAGE_BYTES));
      written += utf8Encoder.encodeInto(text.slice(read), new Uint8Array(abi.mem.buffer, at + written)).written;
    }
    if (written > this.maxInputBytes) throw this.inputTooLarge(written);
    return written;
  }

  /** One evaluation on the instance: direct ABI 1.2 call when possible, else opa-wasm's `evaluate`. */
  private evaluateOn(instance: LoadedPolicy, text: string | undefined, id: number): unknown {
    forgetEvaluationValues(instance);
    const abi = this.directInput ? opaAbi12(instance) : undefined;
    if (!abi) return instance.evaluate(text === undefined ? undefined : this.encodeInput(text), id);
    const inputLen = text === undefined ? 0 : this.writeInput(abi, text);
    const inputAddr = text === undefined ? 0 : abi.dataHeapPtr;
    const resultAddr = abi.wasmInstance.exports.opa_eval!(
      0,
      id,
      abi.dataAddr,
      inputAddr,
      inputLen,
      abi.dataHeapPtr + inputLen,
      0,
    );
    return JSON.parse(readCString(abi.mem, resultAddr)) as unknown;
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
    let text = input === undefined ? undefined : this.serialiseInput(input, inputPaths);

    // No await while an instance is in service (one promise hop less per evaluation).
    const instance = this.instance ?? (await this.ready());
    // Entrypoint id read after a possible await: a bundle swap may have happened meanwhile (and may read other input members).
    const id = this.entrypointIds.get(entrypoint);
    if (id === undefined)
      throw new PolicyEvaluationError('unknown_entrypoint', `entrypoint ${entrypoint} is not in the policy module`);
    if (input !== undefined && this.current.inputPaths !== inputPaths) {
      inputPaths = this.current.inputPaths;
      text = this.serialiseInput(input, inputPaths);
    }
    this.evaluationNow = options?.now ?? new Date();
    const started = performance.now();
    this.deadline = started + this.timeoutMs;
    let resultSet: unknown;
    try {
      // No await between writing the input and opa_eval: the instance is shared by concurrent evaluations.
      resultSet = this.evaluateOn(instance, text, id);
    } catch (err) {
      const durationMs = performance.now() - started;
      this.deadline = Infinity;
      // Refused before the module ran: the instance is intact.
      if (err instanceof PolicyEvaluationError) throw err;
      await this.retire(instance);
      if (err instanceof DeadlineExceeded) {
        throw new PolicyEvaluationError(
          'timeout',
          `evaluation of ${entrypoint} exceeded ${this.timeoutMs} ms (stopped at ${durationMs.toFixed(1)} ms)`,
        );
      }
      const msg = describeThrown(err);
      // opa_abort messages from compiled Rego read `<file>:<row>:<col>: <code>: <message>` or are OPA's Wasm
      // run-time errors (`<file>:<row>:<col>: var assignment conflict`); strict host builtins throw
      // `eval_builtin_error: <name>: <message>`.
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
  const engine = new Engine(
    options.entrypoint ?? DEFAULT_ENTRYPOINT,
    positive(options.maxInputBytes, DEFAULT_MAX_INPUT_BYTES, 'maxInputBytes'),
    positive(options.timeoutMs, DEFAULT_TIMEOUT_MS, 'timeoutMs'),
    Math.floor(positive(options.maxMemoryPages, DEFAULT_MAX_MEMORY_PAGES, 'maxMemoryPages')),
    Math.floor(positive(options.recycleMemoryPages, DEFAULT_RECYCLE_MEMORY_PAGES, 'recycleMemoryPages')),
    options.hostBuiltins ?? projectHostBuiltins,
    Math.max(0, Math.floor(options.warmupRuns ?? 2)),
    options.directInput ?? true,
    options.directBuiltins ?? true,
  );
  await engine.install(options.bundle, options.revision);
  return engine;
}
