// The OPA Wasm ABI as the engine drives it (docs/wasm-abi.md), on top of @open-policy-agent/opa-wasm:
//  - linking: an instance's `opa_builtin0..4` imports go to the engine's own host-call path (one shared UTF-8
//    decoder, no argument array, primitive arguments reused when their JSON text repeats, results encoded
//    straight into the module's memory), and the instance is wrapped in opa-wasm's own LoadedPolicy;
//  - evaluation: with ABI 1.2 the input is written straight into the module's memory and `opa_eval` called;
//    otherwise opa-wasm's `evaluate` copies it in.
// Both use members of opa-wasm outside its typings or exports map (LoadedPolicy's fields and constructor, its
// JS builtins); each is checked before use, and the engine's `directInput: false` / `directBuiltins: false` keep
// opa-wasm's own paths as the reference.
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import type { LoadedPolicy } from '@open-policy-agent/opa-wasm';
import type { Json } from '../json.ts';
import { inputTooLarge, PolicyLoadError } from './errors.ts';
import type { HostBuiltin } from './host-builtins.ts';
import {
  type CompiledWasmModule,
  PAGE_BYTES,
  readCString,
  utf8Encoder,
  WasmApi,
  type WasmMemory,
  type WasmMemoryView,
} from './webassembly.ts';

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
export function forgetEvaluationValues(instance: LoadedPolicy): void {
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

/**
 * What opa-wasm's loadPolicy does (ABI version checks, builtin ids), with the engine's host-call imports:
 * `builtins` serves every builtin opa-wasm has no JS implementation of.
 */
export async function instantiateLinked(
  module: CompiledWasmModule,
  descriptor: { initial: number; maximum: number },
  builtins: Record<string, HostBuiltin>,
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
  const ids = JSON.parse(readCString(link.memory, exports.opa_json_dump(exports.builtins()))) as Record<string, number>;
  for (const [name, id] of Object.entries(ids)) {
    link.names[id] = name;
    link.impls[id] = Object.hasOwn(sdkJsBuiltins, name) ? sdkJsBuiltins[name] : builtins[name];
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

/** The builtins a module calls by name (its `builtins` export); `PolicyLoadError` when it lacks the exports. */
export function builtinsNeeded(instance: LoadedPolicy): string[] {
  const exportsObj = (instance.wasmInstance as unknown as { exports: Record<string, unknown> }).exports;
  const builtinsFn = exportsObj.builtins as (() => number) | undefined;
  const dump = exportsObj.opa_json_dump as ((addr: number) => number) | undefined;
  if (typeof builtinsFn !== 'function' || typeof dump !== 'function')
    throw new PolicyLoadError('policy module lacks the builtins/opa_json_dump exports');
  return Object.keys(
    JSON.parse(readCString(instance.mem as WasmMemoryView, dump(builtinsFn()))) as Record<string, number>,
  );
}

/** UTF-8 of the input in a fresh ArrayBuffer, for opa-wasm's own `evaluate` (which copies it into memory). */
function encodeInput(text: string, maxInputBytes: number): ArrayBuffer {
  const encoded = utf8Encoder.encode(text);
  if (encoded.byteLength > maxInputBytes) throw inputTooLarge(encoded.byteLength, maxInputBytes);
  const whole = encoded.byteOffset === 0 && encoded.byteLength === encoded.buffer.byteLength;
  return (
    whole ? encoded.buffer : encoded.buffer.slice(encoded.byteOffset, encoded.byteOffset + encoded.byteLength)
  ) as ArrayBuffer;
}

/**
 * Encodes the input straight into the module's memory at the heap pointer (no intermediate byte array, no
 * copy); grows the memory only when the free tail is too small. Returns the UTF-8 length.
 */
function writeInput(abi: OpaAbiInstance, text: string, maxInputBytes: number): number {
  const at = abi.dataHeapPtr;
  let { read, written } = utf8Encoder.encodeInto(text, new Uint8Array(abi.mem.buffer, at));
  if (read < text.length) {
    // At most 3 UTF-8 bytes per remaining UTF-16 code unit; a grow past the memory maximum throws (module_aborted).
    const needed = at + written + 3 * (text.length - read) - abi.mem.buffer.byteLength;
    if (written + (text.length - read) > maxInputBytes)
      throw inputTooLarge(written + (text.length - read), maxInputBytes);
    abi.mem.grow(Math.ceil(needed / PAGE_BYTES));
    written += utf8Encoder.encodeInto(text.slice(read), new Uint8Array(abi.mem.buffer, at + written)).written;
  }
  if (written > maxInputBytes) throw inputTooLarge(written, maxInputBytes);
  return written;
}

/**
 * One evaluation of entrypoint `id` on the instance: the direct ABI 1.2 call when `direct` and the instance
 * allows it, else opa-wasm's `evaluate`. Returns the parsed result set. Synchronous: nothing else may use the
 * instance between writing the input and `opa_eval`.
 */
export function evaluateOnce(
  instance: LoadedPolicy,
  text: string | undefined,
  id: number,
  options: { direct: boolean; maxInputBytes: number },
): unknown {
  forgetEvaluationValues(instance);
  const abi = options.direct ? opaAbi12(instance) : undefined;
  if (!abi) return instance.evaluate(text === undefined ? undefined : encodeInput(text, options.maxInputBytes), id);
  return JSON.parse(evaluateDirect(abi, text, id, options.maxInputBytes)) as unknown;
}

/**
 * The result set as the module dumps it, before any JSON.parse: numbers keep their text, so an integer past
 * 2^53 or a float past the double range reads as OPA prints it. Modules without ABI 1.2 go through opa-wasm's
 * `evaluate`, whose parse already rounded them.
 */
export function evaluateToJsonText(
  instance: LoadedPolicy,
  text: string | undefined,
  id: number,
  maxInputBytes: number,
): string {
  forgetEvaluationValues(instance);
  const abi = opaAbi12(instance);
  if (!abi)
    return JSON.stringify(instance.evaluate(text === undefined ? undefined : encodeInput(text, maxInputBytes), id));
  return evaluateDirect(abi, text, id, maxInputBytes);
}

function evaluateDirect(abi: OpaAbiInstance, text: string | undefined, id: number, maxInputBytes: number): string {
  const inputLen = text === undefined ? 0 : writeInput(abi, text, maxInputBytes);
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
  return readCString(abi.mem, resultAddr);
}
