// IR → Wasm code generation on top of the prebuilt runtime (docs/wasm-abi.md, code generation; OPA's own architecture):
// readBinary(runtime.wasm), add one Wasm function per IR func and plan, `eval`/`opa_eval`/`builtins`/
// `entrypoints`, a static data segment, the function table for CallDynamicStmt, then strip every
// non-ABI export. IR locals map to Wasm i32 locals holding value pointers (0 = undefined).
import binaryen from 'binaryen';
import type { Func, Plan, Policy } from '../ir/types.ts';
import { staticCompositesSafe } from './static-composites.ts';
import {
  blockUsesDynamic,
  compileFunc,
  compilePlan,
  HOST_CALL_SITE_GLOBAL,
  TABLE,
  WasmLinkError,
  type Ctx,
  type HostBuiltin,
} from './codegen.ts';
import { StaticData, type StaticValue } from './static-data.ts';
import { NATIVE_BUILTINS } from './native-builtins.ts';
import { hostBuiltinName } from '../builtins/host/names.ts';

export interface LinkOptions {
  /** Abort on builtin errors (`eval_builtin_error`/`eval_type_error`) instead of making the expression undefined. */
  strictBuiltinErrors?: boolean;
  /**
   * Keep the site of the host call in progress (HOST_CALL_SITE_GLOBAL, as strict modules always do), so a host
   * builtin that halts the evaluation is reported at its call site (the authoring tools: builtins/refused.ts).
   */
  hostCallSites?: boolean;
  /** Run binaryen's optimizer on the result (slower link, smaller/faster module). */
  optimize?: boolean;
  /** Ground composite literals as static data (static-composites.ts; default true; false for differential tests). */
  staticComposites?: boolean;
  /**
   * The runtime module (runtime/runtime.wasm) to link onto. The Node entry (./index.ts) reads the shipped one
   * when this is absent; a browser page passes the bytes it fetched.
   */
  runtimeWasm?: Uint8Array;
}

/** What linkPolicyModule takes besides LinkOptions: function names for CPU profiles (GUARDIAN_WASM_NAMES). */
interface ModuleLinkOptions extends LinkOptions {
  functionNames?: boolean;
}

// Exports of the final module: exactly the OPA ABI 1.3 surface (docs/wasm-abi.md, exports).
const ABI_FUNCTION_EXPORTS = [
  'opa_eval_ctx_new',
  'opa_eval_ctx_set_input',
  'opa_eval_ctx_set_data',
  'opa_eval_ctx_set_entrypoint',
  'opa_eval_ctx_get_result',
  'opa_malloc',
  'opa_free',
  'opa_json_parse',
  'opa_value_parse',
  'opa_json_dump',
  'opa_value_dump',
  'opa_heap_ptr_get',
  'opa_heap_ptr_set',
  'opa_value_add_path',
  'opa_value_remove_path',
  'opa_value_free',
  'opa_heap_blocks_stash',
  'opa_heap_blocks_restore',
  'opa_heap_stash_clear',
] as const;
const GENERATED_EXPORTS = ['eval', 'opa_eval', 'builtins', 'entrypoints'] as const;

const FEATURES =
  binaryen.Features.MVP |
  binaryen.Features.MutableGlobals |
  binaryen.Features.NontrappingFPToInt |
  binaryen.Features.SignExt |
  binaryen.Features.BulkMemory |
  binaryen.Features.BulkMemoryOpt |
  binaryen.Features.SIMD128;

const i32 = binaryen.i32;
const none = binaryen.none;

type Ref = number;

export { WasmLinkError };

/** Links a plan onto the given runtime module: no file system, so it runs wherever binaryen.js does. */
export function linkPolicyModule(runtime: Uint8Array, policy: Policy, options: ModuleLinkOptions = {}): Uint8Array {
  const m = binaryen.readBinary(runtime);
  try {
    return link(m, policy, options);
  } finally {
    m.dispose();
  }
}

function exportTarget(m: binaryen.Module, name: string): string {
  const ref = m.getExport(name);
  if (!ref) throw new WasmLinkError(`runtime.wasm lacks export ${name}; rebuild it (npm run prepare)`);
  return binaryen.getExportInfo(ref).value;
}

function link(m: binaryen.Module, policy: Policy, options: ModuleLinkOptions): Uint8Array {
  m.setFeatures(FEATURES);
  const exportsByName = new Map<string, string>();
  for (let i = 0; i < m.getNumExports(); i++) {
    const info = binaryen.getExportInfo(m.getExportByIndex(i));
    exportsByName.set(info.name, info.value);
  }
  const rt = (name: string): string => {
    const v = exportsByName.get(name);
    if (v === undefined) throw new WasmLinkError(`runtime.wasm lacks export ${name}; rebuild it (npm run prepare)`);
    return v;
  };

  // Static data goes right after the runtime's data (__heap_base, which the runtime's start function
  // stores into rt_heap_base; we read it from that start function's constant).
  const heapBaseGlobal = rt('rt_heap_base');
  const runtimeDataEnd = runtimeStaticEnd(m, heapBaseGlobal);
  const data = new StaticData(align(runtimeDataEnd, 8));

  const strings = (policy.static?.strings ?? []).map((s) => s.value);
  const files = (policy.static?.files ?? []).map((s) => s.value);
  const plans = policy.plans?.plans ?? [];
  const funcs = policy.funcs?.funcs ?? [];

  // Host builtins: every builtin the plan declares that the runtime does not implement natively, or only
  // for some inputs (NativeBuiltin.hostFallback).
  const hostBuiltins = new Map<string, HostBuiltin>();
  (policy.static?.builtin_funcs ?? []).forEach((b, id) => {
    if (NATIVE_BUILTINS.has(b.name) && !NATIVE_BUILTINS.get(b.name)!.hostFallback) return;
    const argc = b.decl?.args?.length ?? 0;
    const result = b.decl?.result as { type?: unknown } | undefined;
    hostBuiltins.set(b.name, { id, argc, isVoid: result === undefined, returnsSet: result?.type === 'set' });
  });

  const funcNames = new Map<string, { wasm: string; func: Func; index: number }>();
  funcs.forEach((f, index) => {
    if (funcNames.has(f.name)) throw new WasmLinkError(`duplicate IR function ${f.name}`);
    // with GUARDIAN_WASM_NAMES the profile shows the Rego function (g0.data.acs.pii.shapes, …)
    funcNames.set(f.name, {
      wasm: options.functionNames ? `policy_func_${index}:${f.name}` : `policy_func_${index}`,
      func: f,
      index,
    });
  });

  // CallDynamicStmt mapping {g0: {pkg: {rule: tableIndex}}} over 2-parameter funcs with a path.
  const tableFuncs: string[] = [];
  const mapping: { [k: string]: StaticValue } = {};
  funcs.forEach((f, _index) => {
    if (!f.path || f.path.length === 0 || f.params.length !== 2) return;
    let node = mapping;
    f.path.slice(0, -1).forEach((seg) => {
      const next = node[seg];
      if (next === undefined || typeof next !== 'object' || next === null) node[seg] = {};
      node = node[seg] as { [k: string]: StaticValue };
    });
    node[f.path[f.path.length - 1]] = tableFuncs.length;
    tableFuncs.push(funcNames.get(f.name)!.wasm);
  });
  const usesDynamic =
    funcs.some((f) => f.blocks.some(blockUsesDynamic)) || plans.some((p) => p.blocks.some(blockUsesDynamic));

  const ctx: Ctx = {
    m,
    rt,
    data,
    policy,
    strings,
    files,
    funcNames,
    hostBuiltins,
    strict: options.strictBuiltinErrors === true,
    hostCallSites: options.strictBuiltinErrors === true || options.hostCallSites === true,
    mappingAddr: usesDynamic ? data.value(mapping) : 0,
    hasTable: usesDynamic && tableFuncs.length > 0,
    staticComposites: options.staticComposites !== false && staticCompositesSafe(funcs, plans),
  };

  // Host builtin imports (opa_builtin0..4), only the arities used.
  const arities = new Set([...hostBuiltins.values()].map((b) => b.argc));
  for (const argc of arities) {
    if (argc > 4) {
      const name = [...hostBuiltins].find(([, b]) => b.argc === argc)?.[0];
      throw new WasmLinkError(`too many built-in call arguments: ${name} takes ${argc} (at most 4 for host builtins)`);
    }
    m.addFunctionImport(
      `opa_builtin${argc}`,
      'env',
      `opa_builtin${argc}`,
      binaryen.createType(Array(argc + 2).fill(i32)),
      i32,
    );
  }

  if (ctx.hostCallSites) m.addGlobal(HOST_CALL_SITE_GLOBAL, i32, true, m.i32.const(0));
  funcs.forEach((f, index) => compileFunc(ctx, f, index));
  plans.forEach((p, index) => compilePlan(ctx, p, index));
  if (ctx.hasTable) {
    m.addTable(TABLE, tableFuncs.length, tableFuncs.length);
    m.addActiveElementSegment(TABLE, `${TABLE}_init`, tableFuncs, m.i32.const(0));
  }

  // builtins(): {name: id} of host builtins; entrypoints(): {plan name: index}.
  // Builtins that opa-wasm implements itself (and prefers over customBuiltins) are listed under the
  // alias our host builtins also register (builtins/host: hostBuiltinName), so OPA semantics apply.
  const builtinsObj: { [k: string]: StaticValue } = {};
  for (const [name, b] of hostBuiltins) builtinsObj[hostBuiltinName(name)] = b.id;
  const entrypointsObj: { [k: string]: StaticValue } = {};
  plans.forEach((p, i) => {
    entrypointsObj[p.name] = i;
  });
  m.addFunction('builtins', none, i32, [], m.i32.const(data.value(builtinsObj)));
  m.addFunction('entrypoints', none, i32, [], m.i32.const(data.value(entrypointsObj)));
  compileEval(ctx, plans, funcs.length);
  compileOpaEval(ctx);

  // Replace exports with exactly the ABI surface.
  const memoryInternal = exportTarget(m, 'memory');
  for (const name of [...exportsByName.keys()]) m.removeExport(name);
  for (const name of ABI_FUNCTION_EXPORTS) m.addFunctionExport(rt(name), name);
  for (const name of GENERATED_EXPORTS) m.addFunctionExport(name, name);
  m.addMemoryExport(memoryInternal, 'memory');
  m.addGlobal('opa_wasm_abi_version', i32, false, m.i32.const(1));
  m.addGlobal('opa_wasm_abi_minor_version', i32, false, m.i32.const(3));
  m.addGlobalExport('opa_wasm_abi_version', 'opa_wasm_abi_version');
  m.addGlobalExport('opa_wasm_abi_minor_version', 'opa_wasm_abi_minor_version');
  if (ctx.hostCallSites) m.addGlobalExport(HOST_CALL_SITE_GLOBAL, HOST_CALL_SITE_GLOBAL);

  // Start: run the runtime's own start (top-level initialisers), then move the heap above our data.
  const heapBase = align(data.end, 8);
  const oldStart = m.getStart();
  const startBody: Ref[] = [];
  if (oldStart) startBody.push(m.call(binaryen.getFunctionInfo(oldStart).name, [], none));
  startBody.push(m.global.set(heapBaseGlobal, m.i32.const(heapBase)));
  const start = m.addFunction('opa_policy_start', none, none, [], m.block(null, startBody));
  m.setStart(start);

  installStaticData(m, data, memoryInternal, heapBase);

  m.runPasses(['remove-unused-module-elements']);
  if (options.optimize) {
    binaryen.setOptimizeLevel(2);
    binaryen.setShrinkLevel(0);
    m.optimize();
  }
  if (!m.validate()) throw new WasmLinkError('generated module failed validation (backend bug)');
  binaryen.setDebugInfo(options.functionNames === true); // names for CPU profiles only (runtime.ts)
  return m.emitBinary();
}

function align(n: number, a: number): number {
  return (n + a - 1) & ~(a - 1);
}

// binaryen.js has these at run time but its typings miss them.
interface DataSegmentInfo {
  offset: number;
  data: ArrayBuffer;
  passive: boolean;
}
interface DataSegmentApi {
  getNumDataSegments(): number;
  getDataSegmentInfo(ref: number): DataSegmentInfo;
}
function dataSegments(m: binaryen.Module): DataSegmentInfo[] {
  const api = m as unknown as DataSegmentApi;
  const out: DataSegmentInfo[] = [];
  for (let i = 0; i < api.getNumDataSegments(); i++) out.push(api.getDataSegmentInfo(m.getDataSegmentByIndex(i)));
  return out;
}

/** The constant a `global.set $global (i32.const N)` inside expr stores, or 0. */
function constStoredTo(expr: number, global: string): number {
  const info = binaryen.getExpressionInfo(expr) as { id: number; children?: number[]; name?: string; value?: number };
  if (info.id === binaryen.BlockId) {
    for (const c of info.children ?? []) {
      const v = constStoredTo(c, global);
      if (v) return v;
    }
    return 0;
  }
  if (info.id === binaryen.GlobalSetId && info.name === global && info.value !== undefined) {
    const value = binaryen.getExpressionInfo(info.value) as { id: number; value?: number };
    if (value.id === binaryen.ConstId && typeof value.value === 'number') return value.value;
  }
  return 0;
}

function runtimeStaticEnd(m: binaryen.Module, heapBaseGlobal: string): number {
  let end = 8;
  for (const info of dataSegments(m)) {
    if (info.passive) continue;
    end = Math.max(end, info.offset + info.data.byteLength);
  }
  // The runtime's start function stores __heap_base (which also covers zero-filled static buffers that
  // have no data segment) into rt_heap_base; never go below it.
  const start = m.getStart();
  if (start) end = Math.max(end, constStoredTo(binaryen.getFunctionInfo(start).body, heapBaseGlobal));
  return end;
}

function installStaticData(m: binaryen.Module, data: StaticData, memoryInternal: string, heapBase: number): void {
  // Beyond 5 pages the npm host's default memory is too small: callers must pass a larger `initial`
  // (src/rego/index.ts instantiatePolicy retries with the size named in the LinkError).
  const pages = Math.max(Math.ceil(heapBase / 65536), 1);
  const segments: binaryen.MemorySegment[] = [];
  for (const info of dataSegments(m)) {
    segments.push({ offset: m.i32.const(info.offset), data: new Uint8Array(info.data), passive: info.passive });
  }
  segments.push({ offset: m.i32.const(data.base), data: data.bytes(), passive: false });
  m.setMemory(pages, -1, null, segments, false, false, memoryInternal);
  m.addMemoryImport(memoryInternal, 'env', 'memory');
}

function compileEval(ctx: Ctx, plans: Plan[], funcCount: number): void {
  const m = ctx.m;
  const rt = ctx.rt;
  // eval(ctx): params: 0 ctx; locals: 1 result set, 2 entrypoint
  const get = (i: number) => m.local.get(i, i32);
  const dispatch: Ref[] = plans.map((_, i) =>
    m.if(
      m.i32.eq(get(2), m.i32.const(i)),
      m.block(null, [
        m.call(`policy_plan_${i}`, [m.i32.load(0, 4, get(0)), m.i32.load(4, 4, get(0)), get(1)], none),
        m.return(m.i32.const(0)),
      ]),
    ),
  );
  const body = m.block(null, [
    // A host builtin that threw left exact-integer or set dumping on (codegen hostCall): results dump as plain JSON.
    m.call(rt('rt_dump_exact_integers'), [m.i32.const(0)], none),
    m.call(rt('rt_dump_mark_sets'), [m.i32.const(0)], none),
    m.call(rt('rt_memo_init'), [m.i32.const(funcCount)], none),
    m.local.set(1, m.call(rt('rt_set'), [], i32)),
    m.i32.store(8, 4, get(0), get(1)),
    m.local.set(2, m.i32.load(12, 4, get(0))),
    ...dispatch,
    m.call(rt('abortAt'), [m.i32.const(ctx.data.cstring('internal: illegal entrypoint id'))], none),
    m.unreachable(),
  ]);
  m.addFunction('eval', binaryen.createType([i32]), i32, [i32, i32], body);
}

function compileOpaEval(ctx: Ctx): void {
  const m = ctx.m;
  const rt = ctx.rt;
  // opa_eval(reserved, entrypoint, data, input_ptr, input_len, heap_ptr, format) -> str_addr
  const get = (i: number) => m.local.get(i, i32);
  const INPUT = 7;
  const CTX = 8;
  const body = m.block(null, [
    m.if(
      get(0),
      m.block(null, [
        m.call(rt('abortAt'), [m.i32.const(ctx.data.cstring('opa_eval: reserved parameter must be 0'))], none),
        m.unreachable(),
      ]),
    ),
    m.call(rt('opa_heap_ptr_set'), [get(5)], none),
    m.local.set(INPUT, m.i32.const(0)),
    m.if(
      get(4),
      m.block(null, [
        m.local.set(INPUT, m.call(rt('opa_value_parse'), [get(3), get(4)], i32)),
        m.if(
          m.i32.eqz(get(INPUT)),
          m.block(null, [
            m.call(rt('abortAt'), [m.i32.const(ctx.data.cstring('opa_eval: failed to parse input'))], none),
            m.unreachable(),
          ]),
        ),
      ]),
    ),
    m.local.set(CTX, m.call(rt('opa_eval_ctx_new'), [], i32)),
    m.call(rt('opa_eval_ctx_set_input'), [get(CTX), get(INPUT)], none),
    m.call(rt('opa_eval_ctx_set_data'), [get(CTX), get(2)], none),
    m.call(rt('opa_eval_ctx_set_entrypoint'), [get(CTX), get(1)], none),
    m.drop(m.call('eval', [get(CTX)], i32)),
    m.return(
      m.if(
        get(6),
        m.call(rt('opa_value_dump'), [m.call(rt('opa_eval_ctx_get_result'), [get(CTX)], i32)], i32),
        m.call(rt('opa_json_dump'), [m.call(rt('opa_eval_ctx_get_result'), [get(CTX)], i32)], i32),
      ),
    ),
  ]);
  m.addFunction('opa_eval', binaryen.createType(Array(7).fill(i32)), i32, [i32, i32], body);
}
