// Reference evaluator of OPA IR plans, following the statement semantics of OPA docs: IR (docs/wasm-abi.md, IR).
// It lets the planner tests check *what a plan computes* independently of the Wasm backend, and
// prints precise failures (a Wasm trap says much less). Values: JSON plus RSet/RObj for sets and
// objects with non-string keys; numbers are JS numbers (enough for the planner's test cases).
import { OPA_WASM_ERRORS } from '../../../src/rego/errors.ts';
import type { Block, Operand, Policy, Stmt, StmtLocation } from '../../../src/rego/ir/types.ts';

export class RSet {
  readonly items = new Map<string, V>();
  add(v: V): void {
    this.items.set(key(v), v);
  }
}
export class RObj {
  readonly items = new Map<string, [V, V]>();
  set(k: V, v: V): void {
    this.items.set(key(k), [k, v]);
  }
  get(k: V): V | undefined {
    return this.items.get(key(k))?.[1];
  }
}
export type V = null | boolean | number | string | V[] | RSet | RObj;

export class EvalError extends Error {}

export function key(v: V): string {
  if (v === null || typeof v !== 'object') return JSON.stringify(v);
  if (Array.isArray(v)) return `[${v.map(key).join(',')}]`;
  if (v instanceof RSet) return `{${[...v.items.keys()].sort().join(',')}}`;
  return `{${[...v.items.entries()]
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
    .map(([k, [, x]]) => `${k}:${key(x)}`)
    .join(',')}}`;
}

export function fromJSON(x: unknown): V {
  if (x === null || typeof x === 'boolean' || typeof x === 'number' || typeof x === 'string') return x;
  if (Array.isArray(x)) return x.map(fromJSON);
  const o = new RObj();
  for (const [k, v] of Object.entries(x as Record<string, unknown>)) o.set(k, fromJSON(v));
  return o;
}

/** JSON view like opa-wasm returns: sets → sorted arrays, object keys → strings. */
export function toJSON(v: V): unknown {
  if (v === null || typeof v !== 'object') return v;
  if (Array.isArray(v)) return v.map(toJSON);
  if (v instanceof RSet) return [...v.items.entries()].sort(([a], [b]) => (a < b ? -1 : 1)).map(([, x]) => toJSON(x));
  const out: Record<string, unknown> = {};
  for (const [, [k, x]] of v.items) out[typeof k === 'string' ? k : JSON.stringify(toJSON(k))] = toJSON(x);
  return out;
}

function typeRank(v: V): number {
  if (v === null) return 0;
  if (typeof v === 'boolean') return 1;
  if (typeof v === 'number') return 2;
  if (typeof v === 'string') return 3;
  if (Array.isArray(v)) return 4;
  if (v instanceof RObj) return 5;
  return 6;
}

export function compare(a: V, b: V): number {
  const ra = typeRank(a);
  const rb = typeRank(b);
  if (ra !== rb) return ra - rb;
  if (typeof a === 'number' || typeof a === 'string' || typeof a === 'boolean')
    return a < (b as typeof a) ? -1 : a > (b as typeof a) ? 1 : 0;
  if (a === null) return 0;
  const ka = key(a);
  const kb = key(b);
  if (Array.isArray(a) && Array.isArray(b)) {
    for (let i = 0; i < Math.min(a.length, b.length); i++) {
      const c = compare(a[i], b[i]);
      if (c) return c;
    }
    return a.length - b.length;
  }
  return ka < kb ? -1 : ka > kb ? 1 : 0;
}

const num = (v: V, name: string): number => {
  if (typeof v !== 'number') throw new Undefined(`${name}: not a number`);
  return v;
};

class Undefined extends Error {}

function elems(v: V): V[] {
  if (Array.isArray(v)) return v;
  if (v instanceof RSet) return [...v.items.values()];
  if (v instanceof RObj) return [...v.items.values()].map(([, x]) => x);
  throw new Undefined('not a collection');
}

/** Lines printed by `print` during evaluations (test inspection). */
export const printed: string[] = [];

const builtins: Record<string, (...a: V[]) => V | undefined> = {
  equal: (a, b) => compare(a, b) === 0,
  neq: (a, b) => compare(a, b) !== 0,
  lt: (a, b) => compare(a, b) < 0,
  lte: (a, b) => compare(a, b) <= 0,
  gt: (a, b) => compare(a, b) > 0,
  gte: (a, b) => compare(a, b) >= 0,
  plus: (a, b) => num(a, 'plus') + num(b, 'plus'),
  minus: (a, b) => {
    if (a instanceof RSet && b instanceof RSet) {
      const s = new RSet();
      for (const [k, x] of a.items) if (!b.items.has(k)) s.add(x);
      return s;
    }
    return num(a, 'minus') - num(b, 'minus');
  },
  mul: (a, b) => num(a, 'mul') * num(b, 'mul'),
  div: (a, b) => {
    if (num(b, 'div') === 0) return undefined;
    return num(a, 'div') / num(b, 'div');
  },
  rem: (a, b) =>
    num(b, 'rem') === 0 || !Number.isInteger(num(a, 'rem')) || !Number.isInteger(b as number)
      ? undefined
      : (a as number) % (b as number),
  split: (a, b) => (typeof a === 'string' && typeof b === 'string' ? a.split(b) : undefined),
  format_int: (a, b) => (typeof a === 'number' && typeof b === 'number' ? Math.trunc(a).toString(b) : undefined),
  abs: (a) => Math.abs(num(a, 'abs')),
  and: (a, b) => {
    const s = new RSet();
    if (a instanceof RSet && b instanceof RSet) for (const [k, x] of a.items) if (b.items.has(k)) s.add(x);
    return s;
  },
  or: (a, b) => {
    const s = new RSet();
    for (const x of elems(a)) s.add(x);
    for (const x of elems(b)) s.add(x);
    return s;
  },
  count: (a) =>
    typeof a === 'string'
      ? [...a].length
      : Array.isArray(a)
        ? a.length
        : a instanceof RSet || a instanceof RObj
          ? a.items.size
          : undefined,
  sum: (a) => elems(a).reduce<number>((s, x) => s + num(x, 'sum'), 0),
  product: (a) => elems(a).reduce<number>((s, x) => s * num(x, 'product'), 1),
  max: (a) => {
    const e = elems(a);
    return e.length ? e.reduce((m, x) => (compare(x, m) > 0 ? x : m)) : undefined;
  },
  min: (a) => {
    const e = elems(a);
    return e.length ? e.reduce((m, x) => (compare(x, m) < 0 ? x : m)) : undefined;
  },
  sort: (a) => [...elems(a)].sort(compare),
  startswith: (a, b) => typeof a === 'string' && typeof b === 'string' && a.startsWith(b),
  concat: (sep, xs) => elems(xs).map(String).join(String(sep)),
  'array.concat': (a, b) => [...(a as V[]), ...(b as V[])],
  'internal.member_2': (x, xs) => {
    try {
      return elems(xs).some((e) => compare(e, x) === 0);
    } catch {
      return false;
    }
  },
  'internal.member_3': (k, v, xs) => {
    if (Array.isArray(xs)) return typeof k === 'number' && xs[k] !== undefined && compare(xs[k], v) === 0;
    if (xs instanceof RObj) {
      const got = xs.get(k);
      return got !== undefined && compare(got, v) === 0;
    }
    return false;
  },
  'numbers.range': (a, b) => {
    const out: V[] = [];
    for (let x = a as number; x <= (b as number); x++) out.push(x);
    return out;
  },
  'object.union_n': (xs) => {
    const o = new RObj();
    for (const x of xs as V[]) for (const [, [k, v]] of (x as RObj).items) o.set(k, v);
    return o;
  },
  'array.reverse': (a) => [...(a as V[])].reverse(),
  'time.now_ns': () => 123456789,
  'internal.print': (ops) => {
    printed.push(
      (ops as V[])
        .map((x) =>
          x instanceof RSet && x.items.size
            ? [...x.items.values()].map((v) => (typeof v === 'string' ? v : key(v))).join(' ')
            : '<undefined>',
        )
        .join(' '),
    );
    return null;
  },
  'object.get': (o, k, d) => {
    if (!(o instanceof RObj)) return undefined;
    const path = Array.isArray(k) ? k : [k];
    let cur: V | undefined = o;
    for (const p of path) {
      if (cur instanceof RObj) cur = cur.get(p);
      else if (Array.isArray(cur) && typeof p === 'number') cur = cur[p];
      else if (cur instanceof RSet) cur = cur.items.has(key(p)) ? p : undefined;
      else cur = undefined;
      if (cur === undefined) return d;
    }
    return cur;
  },
  walk: (x) => {
    const out: V[] = [];
    const go = (v: V, path: V[]): void => {
      out.push([path, v]);
      if (Array.isArray(v)) v.forEach((e, i) => go(e, [...path, i]));
      else if (v instanceof RObj) for (const [, [k, e]] of v.items) go(e, [...path, k]);
      else if (v instanceof RSet) for (const e of v.items.values()) go(e, [...path, e]);
    };
    go(x, []);
    return out;
  },
  floor: (a) => Math.floor(num(a, 'floor')),
  ceil: (a) => Math.ceil(num(a, 'ceil')),
  // Go's math.Round: halves away from zero.
  round: (a) => Math.sign(num(a, 'round')) * Math.round(Math.abs(a as number)),
  intersection: (xs) => {
    const sets = elems(xs) as RSet[];
    const s = new RSet();
    if (sets.length === 0) return s;
    for (const [k, x] of sets[0].items) if (sets.every((o) => o.items.has(k))) s.add(x);
    return s;
  },
  union: (xs) => {
    const s = new RSet();
    for (const o of elems(xs)) for (const x of elems(o)) s.add(x);
    return s;
  },
  type_name: (a) => ['null', 'boolean', 'number', 'string', 'array', 'object', 'set'][typeRank(a)],
};

type Locals = Map<number, V>;

/** Evaluate plan `name` of a policy; returns the result set as JSON binding objects. */
export function evalPlan(
  policy: Policy,
  name: string,
  input: unknown,
  data: unknown = {},
  opts: { raw?: boolean; inputIsValue?: boolean } = {},
): unknown[] {
  const strings = (policy.static?.strings ?? []).map((s) => s.value);
  const files = (policy.static?.files ?? []).map((f) => f.value);
  /** OPA's Wasm run-time error text: `<file>:<row>:<col>: <message>` at the statement. */
  const runtimeError = (at: StmtLocation, message: string): EvalError =>
    new EvalError(`${files[at.file ?? -1] ?? 'policy'}:${at.row ?? 0}:${at.col ?? 0}: ${message}`);
  const funcs = new Map((policy.funcs?.funcs ?? []).map((f) => [f.name, f]));
  const plan = policy.plans?.plans.find((p) => p.name === name);
  if (!plan) throw new Error(`no plan ${name}`);
  const results = new RSet();
  let steps = 0;

  const read = (L: Locals, op: Operand): V | undefined => {
    if (op.type === 'local') return L.get(op.value);
    if (op.type === 'bool') return op.value;
    return strings[op.value];
  };

  /** Run a block: returns 'ok' | 'undef' | { brk: n } for breaks escaping this block. */
  const runBlock = (L: Locals, b: Block): 'ok' | 'undef' | { brk: number } | { ret: true } => {
    for (const s of b.stmts) {
      if (++steps > 5_000_000) throw new Error('step limit');
      const r = runStmt(L, s);
      if (r === 'undef') return 'undef';
      if (r !== 'ok') {
        if ('brk' in r) return r.brk === 0 ? 'undef' : { brk: r.brk - 1 };
        return r;
      }
    }
    return 'ok';
  };

  const callFunc = (fname: string, args: (V | undefined)[]): V | undefined => {
    const f = funcs.get(fname);
    if (!f) throw new Error(`no func ${fname}`);
    const L: Locals = new Map();
    f.params.forEach((p, i) => {
      const a = args[i];
      if (a !== undefined) L.set(p, a);
    });
    for (const b of f.blocks) {
      const r = runBlock(L, b);
      if (typeof r === 'object' && 'ret' in r) return L.get(f.return);
    }
    return L.get(f.return);
  };

  let retLocal: number | undefined;
  const runStmt = (L: Locals, s: Stmt): 'ok' | 'undef' | { brk: number } | { ret: true } => {
    const st = s.stmt as Record<string, unknown> & Stmt['stmt'];
    switch (s.type) {
      case 'ReturnLocalStmt':
        retLocal = s.stmt.source;
        return { ret: true };
      case 'CallStmt': {
        const args = (s.stmt.args ?? []).map((a) => read(L, a));
        let res: V | undefined;
        if (funcs.has(s.stmt.func)) res = callFunc(s.stmt.func, args);
        else {
          const fn = builtins[s.stmt.func];
          if (!fn) throw new Error(`builtin ${s.stmt.func} not in evaluator`);
          if (args.some((a) => a === undefined)) return 'undef';
          try {
            res = fn(...(args as V[]));
          } catch (e) {
            if (e instanceof Undefined) return 'undef';
            throw e;
          }
        }
        if (res === undefined) return 'undef';
        L.set(s.stmt.result, res);
        return 'ok';
      }
      case 'BlockStmt':
        for (const b of s.stmt.blocks ?? []) {
          const r = runBlock(L, b);
          if (typeof r === 'object') return r;
        }
        return 'ok';
      case 'BreakStmt':
        return { brk: s.stmt.index };
      case 'DotStmt': {
        const src = read(L, s.stmt.source);
        const k = read(L, s.stmt.key);
        if (src === undefined || k === undefined) return 'undef';
        let v: V | undefined;
        if (Array.isArray(src)) v = typeof k === 'number' && Number.isInteger(k) ? src[k] : undefined;
        else if (src instanceof RObj) v = src.get(k);
        else if (src instanceof RSet) v = src.items.has(key(k)) ? k : undefined;
        if (v === undefined) return 'undef';
        L.set(s.stmt.target, v);
        return 'ok';
      }
      case 'LenStmt': {
        const src = read(L, s.stmt.source);
        if (src === undefined || src === null || (typeof src !== 'object' && typeof src !== 'string')) return 'undef';
        L.set(
          s.stmt.target,
          typeof src === 'string' ? [...src].length : Array.isArray(src) ? src.length : src.items.size,
        );
        return 'ok';
      }
      case 'ScanStmt': {
        const src = L.get(s.stmt.source);
        const pairs: [V, V][] = [];
        if (Array.isArray(src)) src.forEach((x, i) => pairs.push([i, x]));
        else if (src instanceof RObj) for (const [, kv] of src.items) pairs.push(kv);
        else if (src instanceof RSet) for (const x of src.items.values()) pairs.push([x, x]);
        for (const [k, v] of pairs) {
          L.set(s.stmt.key, k);
          L.set(s.stmt.value, v);
          const r = runBlock(L, s.stmt.block);
          if (typeof r === 'object') return r;
        }
        return 'ok';
      }
      case 'NotStmt': {
        const r = runBlock(L, s.stmt.block);
        if (typeof r === 'object') return r;
        return r === 'ok' ? 'undef' : 'ok';
      }
      case 'AssignIntStmt':
        L.set(s.stmt.target, s.stmt.value);
        return 'ok';
      case 'AssignVarStmt': {
        const v = read(L, s.stmt.source);
        if (v === undefined) L.delete(s.stmt.target);
        else L.set(s.stmt.target, v);
        return 'ok';
      }
      case 'AssignVarOnceStmt': {
        const v = read(L, s.stmt.source);
        const cur = L.get(s.stmt.target);
        if (cur !== undefined && v !== undefined && compare(cur, v) !== 0)
          throw runtimeError(s.stmt, OPA_WASM_ERRORS.varAssignConflict);
        if (v !== undefined) L.set(s.stmt.target, v);
        return 'ok';
      }
      case 'ResetLocalStmt':
        L.delete(s.stmt.target);
        return 'ok';
      case 'MakeNullStmt':
        L.set(s.stmt.target, null);
        return 'ok';
      case 'MakeNumberIntStmt':
        L.set(s.stmt.target, s.stmt.value);
        return 'ok';
      case 'MakeNumberRefStmt':
        L.set(s.stmt.target, Number(strings[(s.stmt.index ?? s.stmt.Index)!]));
        return 'ok';
      case 'MakeArrayStmt':
        L.set(s.stmt.target, []);
        return 'ok';
      case 'MakeObjectStmt':
        L.set(s.stmt.target, new RObj());
        return 'ok';
      case 'MakeSetStmt':
        L.set(s.stmt.target, new RSet());
        return 'ok';
      case 'EqualStmt':
      case 'NotEqualStmt': {
        const a = read(L, s.stmt.a);
        const b = read(L, s.stmt.b);
        if (a === undefined || b === undefined) return 'undef';
        const eq = compare(a, b) === 0;
        return (s.type === 'EqualStmt') === eq ? 'ok' : 'undef';
      }
      case 'IsArrayStmt':
        return Array.isArray(read(L, s.stmt.source)) ? 'ok' : 'undef';
      case 'IsObjectStmt':
        return read(L, s.stmt.source) instanceof RObj ? 'ok' : 'undef';
      case 'IsSetStmt':
        return read(L, s.stmt.source) instanceof RSet ? 'ok' : 'undef';
      case 'IsDefinedStmt':
        return L.get(s.stmt.source) !== undefined ? 'ok' : 'undef';
      case 'IsUndefinedStmt':
        return L.get(s.stmt.source) === undefined ? 'ok' : 'undef';
      case 'ArrayAppendStmt': {
        const v = read(L, s.stmt.value);
        if (v === undefined) return 'undef';
        (L.get(s.stmt.array) as V[]).push(v);
        return 'ok';
      }
      case 'ObjectInsertStmt': {
        const k = read(L, s.stmt.key);
        const v = read(L, s.stmt.value);
        if (k === undefined || v === undefined) return 'undef';
        (L.get(s.stmt.object) as RObj).set(k, v);
        return 'ok';
      }
      case 'ObjectInsertOnceStmt': {
        const k = read(L, s.stmt.key);
        const v = read(L, s.stmt.value);
        if (k === undefined || v === undefined) return 'undef';
        const o = L.get(s.stmt.object) as RObj;
        const cur = o.get(k);
        if (cur !== undefined && compare(cur, v) !== 0)
          throw runtimeError(s.stmt, OPA_WASM_ERRORS.objectInsertConflict);
        o.set(k, v);
        return 'ok';
      }
      case 'ObjectMergeStmt': {
        const a = L.get(s.stmt.a);
        const b = L.get(s.stmt.b);
        const merge = (x: V, y: V): V => {
          if (!(x instanceof RObj) || !(y instanceof RObj)) return x;
          const o = new RObj();
          for (const [, [k, v]] of x.items) o.set(k, v);
          for (const [, [k, v]] of y.items) {
            const cur = o.get(k);
            o.set(k, cur === undefined ? v : merge(cur, v));
          }
          return o;
        };
        if (a === undefined || b === undefined) return 'undef';
        L.set(s.stmt.target, merge(a, b));
        return 'ok';
      }
      case 'SetAddStmt': {
        const v = read(L, s.stmt.value);
        if (v === undefined) return 'undef';
        (L.get(s.stmt.set) as RSet).add(v);
        return 'ok';
      }
      case 'WithStmt': {
        const saved = L.get(s.stmt.local);
        const value = read(L, s.stmt.value);
        const path = (s.stmt.path ?? []).map((i) => strings[i]);
        const upsert = (base: V | undefined, i: number): V | undefined => {
          if (i >= path.length) return value;
          const o = new RObj();
          if (base instanceof RObj) for (const [, [k, v]] of base.items) o.set(k, v);
          const next = upsert(base instanceof RObj ? base.get(path[i]) : undefined, i + 1);
          if (next !== undefined) o.set(path[i], next);
          return o;
        };
        const nv = upsert(saved, 0);
        if (nv === undefined) L.delete(s.stmt.local);
        else L.set(s.stmt.local, nv);
        let r;
        try {
          r = runBlock(L, s.stmt.block);
        } finally {
          if (saved === undefined) L.delete(s.stmt.local);
          else L.set(s.stmt.local, saved);
        }
        return r;
      }
      case 'NopStmt':
        return 'ok';
      case 'ResultSetAddStmt':
        results.add(L.get(s.stmt.value)!);
        return 'ok';
    }
    void st;
    void retLocal;
    return 'ok';
  };

  const L: Locals = new Map();
  if (input !== undefined) L.set(0, opts.inputIsValue ? (input as V) : fromJSON(input));
  L.set(1, fromJSON(data));
  for (const b of plan.blocks) runBlock(L, b);
  const out = [...results.items.values()];
  return opts.raw ? out : out.map(toJSON);
}
