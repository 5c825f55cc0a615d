// IR → Wasm code generation for one IR func or plan (docs/wasm-abi.md, IR and code generation): IR blocks become Wasm
// blocks, "undefined" is a br_if to the innermost IR block's end, BreakStmt uses an explicit IR-block →
// Wasm-label stack, values are i32 pointers into the runtime's heap (0 = undefined).
import binaryen from 'binaryen';
import { exactIntegerBuiltins, regoSetBuiltins } from '../builtins/host/names.ts';
import { HOST_CALL_SITE_GLOBAL } from '../builtins/host/call-site.ts';
import { OPA_WASM_ERRORS } from '../errors.ts';
import type { Block, Func, Operand, Plan, Policy, Stmt, StmtLocation } from '../ir/types.ts';
import type { StaticData } from './static-data.ts';
import { NATIVE_BUILTINS } from './native-builtins.ts';
import { mutationCounts, staticRuns } from './static-composites.ts';

/** A plan the backend cannot link (unknown function, bad operand, …). */
export class WasmLinkError extends Error {
  override name = 'WasmLinkError';
}

export const TABLE = 'opa_policy_funcs';

export { HOST_CALL_SITE_GLOBAL };
const i32 = binaryen.i32;
const none = binaryen.none;

type Ref = number;

export interface HostBuiltin {
  id: number;
  argc: number;
  isVoid: boolean;
  /** Declared to return a set: the host hands back a JSON array, converted back to a set. */
  returnsSet: boolean;
}

/** What code generation needs from the module being linked. */
export interface Ctx {
  m: binaryen.Module;
  rt: (name: string) => string;
  data: StaticData;
  policy: Policy;
  strings: string[];
  files: string[];
  funcNames: Map<string, { wasm: string; func: Func; index: number }>;
  hostBuiltins: Map<string, HostBuiltin>;
  strict: boolean;
  /** Record each host call's site in HOST_CALL_SITE_GLOBAL (strict modules, and LinkOptions.hostCallSites). */
  hostCallSites: boolean;
  mappingAddr: number;
  hasTable: boolean;
  /** Ground composite literals become static data (static-composites.ts); false when the plan's mutations forbid it. */
  staticComposites: boolean;
}

export function blockUsesDynamic(b: Block): boolean {
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

  /** Mutating statements per local of the whole func or plan; undefined ⇒ no static composites. */
  private readonly mutations: Map<number, number> | undefined;

  constructor(
    readonly ctx: Ctx,
    private readonly nparams: number,
    blocks: Block[],
  ) {
    this.m = ctx.m;
    this.mutations = ctx.staticComposites ? mutationCounts(blocks) : undefined;
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
    const stmts = b?.stmts ?? [];
    const runs =
      this.mutations && stmts.length > 0
        ? staticRuns(stmts, this.mutations, this.ctx.data, this.ctx.strings)
        : undefined;
    const body: Ref[] = [];
    for (let i = 0; i < stmts.length; i++) {
      const run = runs?.get(i);
      if (run === undefined) body.push(this.stmt(stmts[i]));
      else {
        // A ground literal: its static value instead of the Make statement and its run of inserts.
        body.push(this.set((stmts[i].stmt as { target: number }).target, this.m.i32.const(run.addr)));
        i = run.end;
      }
    }
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

  /** Where a builtin error happened, as OPA's evaluator prints it (ast.Location.String: `<file>:<row>`). */
  builtinErrorLocation(s: StmtLocation): string {
    const file = s.file !== undefined ? this.ctx.files[s.file] : undefined;
    return `${file ?? 'policy'}:${s.row ?? 0}`;
  }

  /** Records the call site before a host call (HOST_CALL_SITE_GLOBAL), where the module keeps one. */
  markHostCallSite(s: StmtLocation): Ref[] {
    if (!this.ctx.hostCallSites) return [];
    const site = this.ctx.data.cstring(this.builtinErrorLocation(s));
    return [this.m.global.set(HOST_CALL_SITE_GLOBAL, this.m.i32.const(site))];
  }

  /** `opa_builtinN(id, 0, args…)`; integers beyond 2^53 and sets reach builtins that take them exactly (names.ts). */
  hostCall(name: string, host: HostBuiltin, args: Ref[]): Ref {
    const m = this.m;
    const call = m.call(`opa_builtin${host.argc}`, [m.i32.const(host.id), m.i32.const(0), ...args], i32);
    const modes = [
      ...(exactIntegerBuiltins.has(name) ? ['rt_dump_exact_integers'] : []),
      ...(regoSetBuiltins.has(name) ? ['rt_dump_mark_sets'] : []),
    ];
    if (!modes.length) return call;
    const result = this.temp();
    return m.block(
      null,
      [
        ...modes.map((mode) => this.call(mode, [m.i32.const(1)], none)),
        m.local.set(result, call),
        ...modes.map((mode) => this.call(mode, [m.i32.const(0)], none)),
        m.local.get(result, i32),
      ],
      i32,
    );
  }

  abort(message: string): Ref {
    return this.m.block(null, [
      this.call('abortAt', [this.m.i32.const(this.ctx.data.cstring(message))], none),
      this.m.unreachable(),
    ]);
  }

  stmt(s: Stmt): Ref {
    const m = this.m;
    if (s === null || typeof s !== 'object' || s.stmt === null || typeof s.stmt !== 'object') {
      throw new WasmLinkError(`malformed statement ${JSON.stringify(s)?.slice(0, 80)}`);
    }
    switch (s.type) {
      case 'NopStmt':
        return m.nop();
      case 'ReturnLocalStmt':
        return this.returnValue(this.get(s.stmt.source));
      case 'AssignVarStmt':
        return this.set(s.stmt.target, this.operand(s.stmt.source));
      case 'AssignVarOnceStmt': {
        const src = this.temp();
        return m.block(null, [
          m.local.set(src, this.operand(s.stmt.source)),
          // conflict: both defined and different (rt_equal is 0 when either side is undefined)
          m.if(
            m.i32.and(
              m.i32.and(
                m.i32.ne(this.get(s.stmt.target), m.i32.const(0)),
                m.i32.ne(m.local.get(src, i32), m.i32.const(0)),
              ),
              m.i32.eqz(this.call('rt_equal', [this.get(s.stmt.target), m.local.get(src, i32)])),
            ),
            this.abort(`${this.location(s.stmt)}: ${OPA_WASM_ERRORS.varAssignConflict}`),
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
        return this.set(
          s.stmt.target,
          this.call('rt_number_int', [m.i64.const(BigInt.asIntN(64, BigInt(s.stmt.value)))]),
        );
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
        return this.call(
          'rt_object_insert',
          [this.get(s.stmt.object), this.operand(s.stmt.key), this.operand(s.stmt.value)],
          none,
        );
      case 'ObjectInsertOnceStmt':
        return m.if(
          this.call('rt_object_insert_once', [
            this.get(s.stmt.object),
            this.operand(s.stmt.key),
            this.operand(s.stmt.value),
          ]),
          this.abort(`${this.location(s.stmt)}: ${OPA_WASM_ERRORS.objectInsertConflict}`),
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
        return m.block(
          null,
          (s.stmt.blocks ?? []).map((b) => this.block(b)),
        );
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
    // Returning from inside WithStmts must drop their memo frames (the locals die with the call).
    const pops = this.withFrames.map(() => this.call('rt_memo_pop', [], none));
    if (this.memoIndex < 0 && pops.length === 0) return m.return(v);
    const t = this.temp();
    const put =
      this.memoIndex < 0 ? [] : [this.call('rt_memo_put', [m.i32.const(this.memoIndex), m.local.get(t, i32)], none)];
    return m.block(null, [m.local.set(t, v), ...pops, ...put, m.return(m.local.get(t, i32))]);
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
      let call = this.set(s.result, this.call(native.export, args));
      if (native.hostFallback) {
        // HOST_FALLBACK (1): the input is outside the native subset; the host implementation decides.
        const host = this.ctx.hostBuiltins.get(s.func);
        if (!host || host.argc !== native.arity)
          throw new WasmLinkError(`builtin ${s.func} has no host declaration for its fallback`);
        const again = (s.args ?? []).map((a) => this.operand(a));
        call = m.block(null, [
          call,
          m.if(
            m.i32.eq(this.get(s.result), m.i32.const(1)),
            m.block(null, [...this.markHostCallSite(s), this.set(s.result, this.hostCall(s.func, host, again))]),
          ),
        ]);
      }
      if (!this.ctx.strict) return m.block(null, [call, this.failIfZero(this.get(s.result))]);
      const prefix = this.ctx.data.cstring(this.builtinErrorLocation(s));
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
      // An undefined argument makes the call undefined (the host could not even serialise it).
      const guards = (s.args ?? []).filter((a) => a.type === 'local').map((a) => this.failIfZero(this.get(a.value)));
      let call = this.hostCall(s.func, host, args);
      const site = this.markHostCallSite(s);
      if (host.isVoid) return m.block(null, [...guards, ...site, m.drop(call)]);
      if (host.returnsSet) call = this.call('rt_to_set', [call]);
      return m.block(null, [...guards, ...site, this.set(s.result, call), this.failIfZero(this.get(s.result))]);
    }
    throw new WasmLinkError(
      `call to unknown function ${s.func} (not an IR func, native builtin or static.builtin_funcs entry)`,
    );
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
        m.call_indirect(
          TABLE,
          m.local.get(idx, i32),
          s.args.map((a) => this.get(a)),
          binaryen.createType([i32, i32]),
          i32,
        ),
      ),
      this.failIfZero(this.get(s.result)),
    ]);
  }
}

/** Runs fn, reporting any failure as a WasmLinkError that names the IR function or plan. */
function inContext(what: string, fn: () => void): void {
  try {
    fn();
  } catch (e) {
    const msg = e instanceof Error ? e.message : String(e);
    throw new WasmLinkError(`${what}: ${msg}`);
  }
}

export function compileFunc(ctx: Ctx, f: Func, index: number): void {
  inContext(`IR func ${JSON.stringify(f?.name)}`, () => compileFuncUnchecked(ctx, f, index));
}

export function compilePlan(ctx: Ctx, p: Plan, index: number): void {
  inContext(`plan ${JSON.stringify(p?.name)}`, () => compilePlanUnchecked(ctx, p, index));
}

function compileFuncUnchecked(ctx: Ctx, f: Func, index: number): void {
  const m = ctx.m;
  if (!Array.isArray(f.params) || f.params.length < 2)
    throw new WasmLinkError('params must list at least input and data');
  if (!Array.isArray(f.blocks)) throw new WasmLinkError('blocks missing');
  const gen = new FnGen(ctx, f.params.length, f.blocks);
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

function compilePlanUnchecked(ctx: Ctx, p: Plan, index: number): void {
  const m = ctx.m;
  if (!Array.isArray(p.blocks)) throw new WasmLinkError('blocks missing');
  // Plan functions: (input, data, result set); IR locals 0 and 1 are input and data.
  const gen = new FnGen(ctx, 3, p.blocks);
  gen.bindParam(0, 0);
  gen.bindParam(1, 1);
  const body = p.blocks.map((b) => gen.block(b));
  m.addFunction(
    `policy_plan_${index}`,
    binaryen.createType([i32, i32, i32]),
    none,
    gen.vars,
    m.block(null, body, none),
  );
}
