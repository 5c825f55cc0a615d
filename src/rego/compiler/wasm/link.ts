// IR → Wasm code generation on top of the prebuilt runtime (design/opa-ir.md §5, OPA's own architecture):
// readBinary(runtime.wasm), add one Wasm function per IR func and plan, `eval`/`opa_eval`/`builtins`/
// `entrypoints`, a static data segment, the function table for CallDynamicStmt, then strip every
// non-ABI export. IR locals map to Wasm i32 locals holding value pointers (0 = undefined).
import binaryen from 'binaryen';
import type { Block, Func, Operand, Plan, Policy, Stmt, StmtLocation } from '../../ir/types.ts';
import { StaticData, type StaticValue } from './static-data.ts';
import { loadRuntimeWasm } from './runtime.ts';
import { NATIVE_BUILTINS } from './native-builtins.ts';
import { hostBuiltinName } from '../../builtins/index.ts';

export interface LinkOptions {
  /** Abort on builtin errors (`eval_builtin_error`/`eval_type_error`) instead of making the expression undefined. */
  strictBuiltinErrors?: boolean;
  /** Run binaryen's optimizer on the result (slower link, smaller/faster module). */
  optimize?: boolean;
}

/** A plan the backend cannot link (unknown function, bad operand, …). */
export class WasmLinkError extends Error {
  override name = 'WasmLinkError';
}

// Exports of the final module: exactly the OPA ABI 1.3 surface (design/opa-wasm-abi.md §4).
const ABI_FUNCTION_EXPORTS = [
  'opa_eval_ctx_new', 'opa_eval_ctx_set_input', 'opa_eval_ctx_set_data', 'opa_eval_ctx_set_entrypoint',
  'opa_eval_ctx_get_result', 'opa_malloc', 'opa_free', 'opa_json_parse', 'opa_value_parse', 'opa_json_dump',
  'opa_value_dump', 'opa_heap_ptr_get', 'opa_heap_ptr_set', 'opa_value_add_path', 'opa_value_remove_path',
  'opa_value_free', 'opa_heap_blocks_stash', 'opa_heap_blocks_restore', 'opa_heap_stash_clear',
] as const;
const GENERATED_EXPORTS = ['eval', 'opa_eval', 'builtins', 'entrypoints'] as const;

const FEATURES =
  binaryen.Features.MVP |
  binaryen.Features.MutableGlobals |
  binaryen.Features.NontrappingFPToInt |
  binaryen.Features.SignExt |
  binaryen.Features.BulkMemory |
  binaryen.Features.BulkMemoryOpt;

const TABLE = 'opa_policy_funcs';
const i32 = binaryen.i32;
const none = binaryen.none;

type Ref = number;

interface HostBuiltin {
  id: number;
  argc: number;
  isVoid: boolean;
  /** Declared to return a set: the host hands back a JSON array, converted back to a set. */
  returnsSet: boolean;
}

interface Ctx {
  m: binaryen.Module;
  rt: (name: string) => string;
  data: StaticData;
  policy: Policy;
  strings: string[];
  files: string[];
  funcNames: Map<string, { wasm: string; func: Func; index: number }>;
  hostBuiltins: Map<string, HostBuiltin>;
  strict: boolean;
  mappingAddr: number;
  hasTable: boolean;
}

export async function linkPolicyWasm(policy: Policy, options: LinkOptions = {}): Promise<Uint8Array> {
  const runtime = await loadRuntimeWasm();
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

function link(m: binaryen.Module, policy: Policy, options: LinkOptions): Uint8Array {
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

  // Host builtins: every builtin the plan declares that the runtime does not implement natively.
  const hostBuiltins = new Map<string, HostBuiltin>();
  (policy.static?.builtin_funcs ?? []).forEach((b, id) => {
    if (NATIVE_BUILTINS.has(b.name)) return;
    const argc = b.decl?.args?.length ?? 0;
    const result = b.decl?.result as { type?: unknown } | undefined;
    hostBuiltins.set(b.name, { id, argc, isVoid: result === undefined, returnsSet: result?.type === 'set' });
  });

  const funcNames = new Map<string, { wasm: string; func: Func; index: number }>();
  funcs.forEach((f, index) => {
    if (funcNames.has(f.name)) throw new WasmLinkError(`duplicate IR function ${f.name}`);
    funcNames.set(f.name, { wasm: `policy_func_${index}`, func: f, index });
  });

  // CallDynamicStmt mapping {g0: {pkg: {rule: tableIndex}}} over 2-parameter funcs with a path.
  const tableFuncs: string[] = [];
  const mapping: { [k: string]: StaticValue } = {};
  funcs.forEach((f, index) => {
    if (!f.path || f.path.length === 0 || f.params.length !== 2) return;
    let node = mapping;
    f.path.slice(0, -1).forEach((seg) => {
      const next = node[seg];
      if (next === undefined || typeof next !== 'object' || next === null) node[seg] = {};
      node = node[seg] as { [k: string]: StaticValue };
    });
    node[f.path[f.path.length - 1]] = tableFuncs.length;
    tableFuncs.push(`policy_func_${index}`);
  });
  const usesDynamic = funcs.some((f) => f.blocks.some(blockUsesDynamic)) || plans.some((p) => p.blocks.some(blockUsesDynamic));

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
    mappingAddr: usesDynamic ? data.value(mapping) : 0,
    hasTable: usesDynamic && tableFuncs.length > 0,
  };

  // Host builtin imports (opa_builtin0..4), only the arities used.
  const arities = new Set([...hostBuiltins.values()].map((b) => b.argc));
  for (const argc of arities) {
    if (argc > 4) {
      const name = [...hostBuiltins].find(([, b]) => b.argc === argc)?.[0];
      throw new WasmLinkError(`too many built-in call arguments: ${name} takes ${argc} (at most 4 for host builtins)`);
    }
    m.addFunctionImport(`opa_builtin${argc}`, 'env', `opa_builtin${argc}`, binaryen.createType(Array(argc + 2).fill(i32)), i32);
  }

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

function blockUsesDynamic(b: Block): boolean {
  return b.stmts.some((s) => {
    switch (s.type) {
      case 'CallDynamicStmt':
        return true;
      case 'BlockStmt':
        return (s.stmt.blocks ?? []).some(blockUsesDynamic);
      case 'ScanStmt':
      case 'NotStmt':
      case 'WithStmt':
        return blockUsesDynamic(s.stmt.block);
      default:
        return false;
    }
  });
}

// ---------------------------------------------------------------------------------------------------
// Per-function code generation

class FnGen {
  readonly m: binaryen.Module;
  private readonly locals = new Map<number, number>();
  readonly vars: number[] = [];
  private readonly labels: string[] = [];
  private labelSeq = 0;
  // Active WithStmts: a BreakStmt that leaves one must restore its local and memo frame first.
  private readonly withFrames: { labelDepth: number; local: number; saved: number }[] = [];

  constructor(
    readonly ctx: Ctx,
    private readonly nparams: number,
    readonly isFunction: boolean,
  ) {
    this.m = ctx.m;
  }

  bindParam(irLocal: number, wasmIndex: number): void {
    this.locals.set(irLocal, wasmIndex);
  }

  local(irLocal: number): number {
    let idx = this.locals.get(irLocal);
    if (idx === undefined) {
      idx = this.temp();
      this.locals.set(irLocal, idx);
    }
    return idx;
  }

  temp(type: number = i32): number {
    this.vars.push(type);
    return this.nparams + this.vars.length - 1;
  }

  get(irLocal: number): Ref {
    return this.m.local.get(this.local(irLocal), i32);
  }

  set(irLocal: number, value: Ref): Ref {
    return this.m.local.set(this.local(irLocal), value);
  }

  call(rtName: string, args: Ref[], result = i32): Ref {
    return this.m.call(this.ctx.rt(rtName), args, result);
  }

  /** Label of the innermost IR block (where "undefined" jumps to). */
  get failLabel(): string {
    return this.labels[this.labels.length - 1];
  }

  newLabel(prefix: string): string {
    return `${prefix}${this.labelSeq++}`;
  }

  /** Compiles an IR block into a Wasm block; undefined statements jump to its end. */
  block(b: Block | null | undefined, tail: Ref[] = []): Ref {
    const label = this.newLabel('b');
    this.labels.push(label);
    const body = (b?.stmts ?? []).map((s) => this.stmt(s));
    body.push(...tail);
    this.labels.pop();
    return this.m.block(label, body, none);
  }

  operand(op: Operand): Ref {
    switch (op.type) {
      case 'local':
        return this.get(op.value);
      case 'bool':
        return this.m.i32.const(this.ctx.data.bool(op.value));
      case 'string_index': {
        const s = this.ctx.strings[op.value];
        if (s === undefined) throw new WasmLinkError(`string_index ${op.value} out of range`);
        return this.m.i32.const(this.ctx.data.string(s));
      }
      default:
        throw new WasmLinkError(`unknown operand type ${(op as { type: string }).type}`);
    }
  }

  failIfZero(value: Ref): Ref {
    return this.m.br(this.failLabel, this.m.i32.eqz(value));
  }

  location(s: StmtLocation): string {
    const file = s.file !== undefined ? this.ctx.files[s.file] : undefined;
    return `${file ?? 'policy'}:${s.row ?? 0}:${s.col ?? 0}`;
  }

  abort(message: string): Ref {
    return this.m.block(null, [
      this.call('abortAt', [this.m.i32.const(this.ctx.data.cstring(message))], none),
      this.m.unreachable(),
    ]);
  }

  stmt(s: Stmt): Ref {
    const m = this.m;
    switch (s.type) {
      case 'NopStmt':
        return m.nop();
      case 'ReturnLocalStmt':
        return this.returnValue(this.get(s.stmt.source));
      case 'AssignVarStmt':
        return this.set(s.stmt.target, this.operand(s.stmt.source));
      case 'AssignVarOnceStmt': {
        const msg = this.isFunction
          ? 'eval_conflict_error: functions must not produce multiple outputs for same inputs'
          : 'eval_conflict_error: complete rules must not produce multiple outputs';
        const src = this.temp();
        return m.block(null, [
          m.local.set(src, this.operand(s.stmt.source)),
          m.if(
            m.i32.and(
              m.i32.ne(this.get(s.stmt.target), m.i32.const(0)),
              m.i32.eqz(this.call('rt_equal', [this.get(s.stmt.target), m.local.get(src, i32)])),
            ),
            this.abort(`${this.location(s.stmt)}: ${msg}`),
          ),
          this.set(s.stmt.target, m.local.get(src, i32)),
        ]);
      }
      case 'ResetLocalStmt':
        return this.set(s.stmt.target, m.i32.const(0));
      case 'MakeNullStmt':
        return this.set(s.stmt.target, m.i32.const(this.ctx.data.null()));
      case 'MakeNumberIntStmt':
        return this.set(s.stmt.target, m.i32.const(this.ctx.data.int(BigInt(s.stmt.value))));
      case 'MakeNumberRefStmt': {
        const idx = s.stmt.index ?? s.stmt.Index;
        const text = idx === undefined ? undefined : this.ctx.strings[idx];
        if (text === undefined) throw new WasmLinkError(`MakeNumberRefStmt: string index ${idx} out of range`);
        return this.set(s.stmt.target, m.i32.const(this.ctx.data.numberText(text)));
      }
      case 'AssignIntStmt':
        // A fresh number rather than an in-place update: the old one may be aliased by other locals.
        return this.set(s.stmt.target, this.call('rt_number_int', [m.i64.const(BigInt.asIntN(64, BigInt(s.stmt.value)))]));
      case 'MakeArrayStmt':
        return this.set(s.stmt.target, this.call('rt_array', [m.i32.const(Math.max(0, s.stmt.capacity | 0))]));
      case 'MakeObjectStmt':
        return this.set(s.stmt.target, this.call('rt_object', []));
      case 'MakeSetStmt':
        return this.set(s.stmt.target, this.call('rt_set', []));
      case 'EqualStmt':
        return m.br(this.failLabel, m.i32.eqz(this.call('rt_equal', [this.operand(s.stmt.a), this.operand(s.stmt.b)])));
      case 'NotEqualStmt': {
        // Undefined if equal, or if either side is undefined.
        const a = this.temp();
        const b = this.temp();
        return m.block(null, [
          m.local.set(a, this.operand(s.stmt.a)),
          m.local.set(b, this.operand(s.stmt.b)),
          this.failIfZero(m.local.get(a, i32)),
          this.failIfZero(m.local.get(b, i32)),
          m.br(this.failLabel, this.call('rt_equal', [m.local.get(a, i32), m.local.get(b, i32)])),
        ]);
      }
      case 'IsArrayStmt':
        return m.br(this.failLabel, m.i32.ne(this.call('rt_type', [this.operand(s.stmt.source)]), m.i32.const(5)));
      case 'IsObjectStmt':
        return m.br(this.failLabel, m.i32.ne(this.call('rt_type', [this.operand(s.stmt.source)]), m.i32.const(6)));
      case 'IsSetStmt':
        return m.br(this.failLabel, m.i32.ne(this.call('rt_type', [this.operand(s.stmt.source)]), m.i32.const(7)));
      case 'IsDefinedStmt':
        return this.failIfZero(this.get(s.stmt.source));
      case 'IsUndefinedStmt':
        return m.br(this.failLabel, this.get(s.stmt.source));
      case 'ArrayAppendStmt':
        return this.call('rt_array_append', [this.get(s.stmt.array), this.operand(s.stmt.value)], none);
      case 'ObjectInsertStmt':
        return this.call('rt_object_insert', [this.get(s.stmt.object), this.operand(s.stmt.key), this.operand(s.stmt.value)], none);
      case 'ObjectInsertOnceStmt':
        return m.if(
          this.call('rt_object_insert_once', [this.get(s.stmt.object), this.operand(s.stmt.key), this.operand(s.stmt.value)]),
          this.abort(`${this.location(s.stmt)}: eval_conflict_error: object keys must be unique`),
        );
      case 'ObjectMergeStmt':
        return this.set(s.stmt.target, this.call('rt_object_merge', [this.get(s.stmt.a), this.get(s.stmt.b)]));
      case 'SetAddStmt':
        return this.call('rt_set_add', [this.get(s.stmt.set), this.operand(s.stmt.value)], none);
      case 'DotStmt':
        return m.block(null, [
          this.set(s.stmt.target, this.call('rt_get', [this.operand(s.stmt.source), this.operand(s.stmt.key)])),
          this.failIfZero(this.get(s.stmt.target)),
        ]);
      case 'LenStmt':
        return m.block(null, [
          this.set(s.stmt.target, this.call('rt_length', [this.operand(s.stmt.source)])),
          this.failIfZero(this.get(s.stmt.target)),
        ]);
      case 'BlockStmt':
        return m.block(null, (s.stmt.blocks ?? []).map((b) => this.block(b)));
      case 'BreakStmt': {
        const depth = s.stmt.index;
        const target = this.labels.length - 1 - depth;
        const label = this.labels[target];
        if (label === undefined) throw new WasmLinkError(`BreakStmt index ${depth} exceeds block nesting`);
        const restores: Ref[] = [];
        for (let i = this.withFrames.length - 1; i >= 0; i--) {
          const f = this.withFrames[i];
          if (f.labelDepth <= target) break;
          restores.push(this.set(f.local, m.local.get(f.saved, i32)), this.call('rt_memo_pop', [], none));
        }
        return restores.length ? m.block(null, [...restores, m.br(label)]) : m.br(label);
      }
      case 'NotStmt': {
        // The not-statement is undefined exactly when its block completes.
        return this.block(s.stmt.block, [m.br(this.failLabel)]);
      }
      case 'ScanStmt':
        return this.scan(s.stmt.source, s.stmt.key, s.stmt.value, s.stmt.block);
      case 'WithStmt':
        return this.withStmt(s.stmt.local, s.stmt.path ?? [], s.stmt.value, s.stmt.block);
      case 'ResultSetAddStmt':
        return this.call('rt_set_add', [m.local.get(2, i32), this.get(s.stmt.value)], none);
      case 'CallStmt':
        return this.callStmt(s.stmt);
      case 'CallDynamicStmt':
        return this.callDynamic(s.stmt);
      default:
        throw new WasmLinkError(`unsupported IR statement ${(s as { type: string }).type}`);
    }
  }

  memoIndex = -1;

  returnValue(v: Ref): Ref {
    const m = this.m;
    if (this.memoIndex < 0) return m.return(v);
    const t = this.temp();
    return m.block(null, [
      m.local.set(t, v),
      this.call('rt_memo_put', [m.i32.const(this.memoIndex), m.local.get(t, i32)], none),
      m.return(m.local.get(t, i32)),
    ]);
  }

  scan(source: number, key: number, value: number, body: Block): Ref {
    const m = this.m;
    const i = this.temp();
    const done = this.newLabel('scan_done');
    const loop = this.newLabel('scan_next');
    return m.block(done, [
      m.local.set(i, m.i32.const(0)),
      m.loop(
        loop,
        m.block(null, [
          this.set(key, this.call('rt_scan_key', [this.get(source), m.local.get(i, i32)])),
          m.br(done, m.i32.eqz(this.get(key))),
          this.set(value, this.call('rt_scan_value', [this.get(source), m.local.get(i, i32)])),
          m.local.set(i, m.i32.add(m.local.get(i, i32), m.i32.const(1))),
          this.block(body),
          m.br(loop),
        ]),
      ),
    ]);
  }

  withStmt(local: number, path: number[], value: Operand, body: Block): Ref {
    const m = this.m;
    const saved = this.temp();
    const ok = this.temp();
    let replacement: Ref;
    if (path.length === 0) replacement = this.operand(value);
    else {
      const arr = this.temp();
      const build: Ref[] = [m.local.set(arr, this.call('rt_array', [m.i32.const(path.length)]))];
      for (const idx of path) {
        const s = this.ctx.strings[idx];
        if (s === undefined) throw new WasmLinkError(`WithStmt path string index ${idx} out of range`);
        build.push(this.call('rt_array_append', [m.local.get(arr, i32), m.i32.const(this.ctx.data.string(s))], none));
      }
      replacement = m.block(
        null,
        [...build, this.call('rt_with_upsert', [this.get(local), m.local.get(arr, i32), this.operand(value)])],
        i32,
      );
    }
    // ok = 1 only when the body completes; the local is restored on both paths (and by BreakStmts
    // that leave the body, see stmt()).
    this.withFrames.push({ labelDepth: this.labels.length, local, saved });
    const inner = this.block(body, [m.local.set(ok, m.i32.const(1))]);
    this.withFrames.pop();
    return m.block(null, [
      m.local.set(saved, this.get(local)),
      m.local.set(ok, m.i32.const(0)),
      this.call('rt_memo_push', [], none),
      this.set(local, replacement),
      inner,
      this.set(local, m.local.get(saved, i32)),
      this.call('rt_memo_pop', [], none),
      m.br(this.failLabel, m.i32.eqz(m.local.get(ok, i32))),
    ]);
  }

  callStmt(s: { func: string; args: Operand[] | null; result: number } & StmtLocation): Ref {
    const m = this.m;
    const args = (s.args ?? []).map((a) => this.operand(a));
    const fn = this.ctx.funcNames.get(s.func);
    if (fn) {
      if (args.length !== fn.func.params.length) {
        throw new WasmLinkError(`call to ${s.func} with ${args.length} arguments, expected ${fn.func.params.length}`);
      }
      return m.block(null, [this.set(s.result, m.call(fn.wasm, args, i32)), this.failIfZero(this.get(s.result))]);
    }
    const native = NATIVE_BUILTINS.get(s.func);
    if (native) {
      if (args.length !== native.arity) {
        throw new WasmLinkError(`builtin ${s.func} called with ${args.length} arguments, expected ${native.arity}`);
      }
      const call = this.set(s.result, this.call(native.export, args));
      if (!this.ctx.strict) return m.block(null, [call, this.failIfZero(this.get(s.result))]);
      const prefix = this.ctx.data.cstring(this.location(s));
      return m.block(null, [
        call,
        m.if(
          m.i32.eqz(this.get(s.result)),
          m.block(null, [this.call('rt_err_check', [m.i32.const(prefix)], none), m.br(this.failLabel)]),
        ),
      ]);
    }
    const host = this.ctx.hostBuiltins.get(s.func);
    if (host) {
      if (args.length !== host.argc) {
        throw new WasmLinkError(`builtin ${s.func} called with ${args.length} arguments, declared ${host.argc}`);
      }
      let call = m.call(`opa_builtin${host.argc}`, [m.i32.const(host.id), m.i32.const(0), ...args], i32);
      if (host.isVoid) return m.drop(call);
      if (host.returnsSet) call = this.call('rt_to_set', [call]);
      return m.block(null, [this.set(s.result, call), this.failIfZero(this.get(s.result))]);
    }
    throw new WasmLinkError(`call to unknown function ${s.func} (not an IR func, native builtin or static.builtin_funcs entry)`);
  }

  callDynamic(s: { args: number[]; path: Operand[]; result: number }): Ref {
    const m = this.m;
    if (!this.ctx.hasTable) return m.br(this.failLabel); // no callable functions: always undefined
    if (s.args.length !== 2) throw new WasmLinkError('CallDynamicStmt expects exactly two arguments (input, data)');
    const arr = this.temp();
    const idx = this.temp();
    const build: Ref[] = [m.local.set(arr, this.call('rt_array', [m.i32.const(s.path.length)]))];
    for (const p of s.path) build.push(this.call('rt_array_append', [m.local.get(arr, i32), this.operand(p)], none));
    return m.block(null, [
      ...build,
      m.local.set(idx, this.call('rt_mapping_lookup', [m.i32.const(this.ctx.mappingAddr), m.local.get(arr, i32)])),
      m.br(this.failLabel, m.i32.lt_s(m.local.get(idx, i32), m.i32.const(0))),
      this.set(
        s.result,
        m.call_indirect(TABLE, m.local.get(idx, i32), s.args.map((a) => this.get(a)), binaryen.createType([i32, i32]), i32),
      ),
      this.failIfZero(this.get(s.result)),
    ]);
  }
}


function compileFunc(ctx: Ctx, f: Func, index: number): void {
  const m = ctx.m;
  const gen = new FnGen(ctx, f.params.length, f.params.length > 2);
  f.params.forEach((p, i) => gen.bindParam(p, i));
  const body: Ref[] = [];
  if (f.params.length === 2) {
    // Rules without arguments are memoised per evaluation (OPA does the same); 1 marks "undefined".
    gen.memoIndex = index;
    const t = gen.temp();
    body.push(
      m.local.set(t, gen.call('rt_memo_get', [m.i32.const(index)])),
      m.if(
        m.local.get(t, i32),
        m.return(m.select(m.i32.eq(m.local.get(t, i32), m.i32.const(1)), m.i32.const(0), m.local.get(t, i32))),
      ),
    );
  }
  for (const b of f.blocks) body.push(gen.block(b));
  body.push(gen.returnValue(gen.get(f.return)));
  const params = binaryen.createType(f.params.map(() => i32));
  m.addFunction(ctx.funcNames.get(f.name)!.wasm, params, i32, gen.vars, m.block(null, body, none));
}

function compilePlan(ctx: Ctx, p: Plan, index: number): void {
  const m = ctx.m;
  // Plan functions: (input, data, result set); IR locals 0 and 1 are input and data.
  const gen = new FnGen(ctx, 3, false);
  gen.bindParam(0, 0);
  gen.bindParam(1, 1);
  const body = p.blocks.map((b) => gen.block(b));
  m.addFunction(`policy_plan_${index}`, binaryen.createType([i32, i32, i32]), none, gen.vars, m.block(null, body, none));
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
    m.if(get(0), m.block(null, [m.call(rt('abortAt'), [m.i32.const(ctx.data.cstring('opa_eval: reserved parameter must be 0'))], none), m.unreachable()])),
    m.call(rt('opa_heap_ptr_set'), [get(5)], none),
    m.local.set(INPUT, m.i32.const(0)),
    m.if(
      get(4),
      m.block(null, [
        m.local.set(INPUT, m.call(rt('opa_value_parse'), [get(3), get(4)], i32)),
        m.if(
          m.i32.eqz(get(INPUT)),
          m.block(null, [m.call(rt('abortAt'), [m.i32.const(ctx.data.cstring('opa_eval: failed to parse input'))], none), m.unreachable()]),
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

