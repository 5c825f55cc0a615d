// Ground composite literals as static data. The planner (like OPA's) builds a literal array, set or object
// with MakeArrayStmt/MakeSetStmt/MakeObjectStmt and a run of ArrayAppendStmt/SetAddStmt/ObjectInsertStmt
// right after it, on every execution: a lookup table such as acs.pii's Verhoeff tables (180 numbers) was
// rebuilt on every evaluation. When every element of such a run is a constant (a string, boolean, null, a
// number literal, or another such composite) the backend writes the value into the static data segment once
// and the Make statement becomes a constant address; the run's statements are dropped. The IR is unchanged,
// so OPA-built plans link the same way (and benefit).
//
// Static data is shared by every evaluation, so a static value must never be mutated. Values are immutable
// in the runtime except through the four mutating statements above (and ObjectInsertOnceStmt), which target a
// local the plan made itself. Two checks keep them off static values:
//  - per function, a candidate local is mutated only by its own run (a comprehension's MakeArrayStmt with
//    its appends in a nested block stays dynamic);
//  - per policy, every local any mutating statement targets is defined only by Make*Stmt (or ResetLocalStmt)
//    in its function: no static value can reach it through an assignment, a call, a parameter or a scan. A plan
//    that breaks this (none from our planner or OPA's is known to) gets no static composites at all.
import type { Block, Func, Operand, Plan, Stmt } from '../ir/types.ts';
import type { StaticData } from './static-data.ts';
import { compareUtf8 } from '../utf8.ts';

/** A constant's value, for sorting set elements and object keys as the runtime's compareValues does. */
type SVal =
  | { k: 1 }
  | { k: 2; v: boolean }
  | { k: 3; int?: bigint } // int undefined: a decimal or big number (not compared here: no static then)
  | { k: 4; v: string }
  | { k: 5 | 7; items: Const[] }
  | { k: 6; entries: [Const, Const][] };

interface Const {
  addr: number;
  val: SVal;
}

/** compareValues of runtime/assembly/compare.ts; undefined when a number that is not an int64 takes part. */
function compare(a: SVal, b: SVal): number | undefined {
  if (a.k !== b.k) return a.k < b.k ? -1 : 1;
  switch (a.k) {
    case 1:
      return 0;
    case 2: {
      const y = (b as { v: boolean }).v;
      return a.v === y ? 0 : a.v ? 1 : -1;
    }
    case 3: {
      const y = (b as { int?: bigint }).int;
      if (a.int === undefined || y === undefined) return undefined;
      return a.int === y ? 0 : a.int < y ? -1 : 1;
    }
    case 4:
      return compareUtf8(a.v, (b as { v: string }).v);
    case 5:
    case 7: {
      const ys = (b as { items: Const[] }).items;
      for (let i = 0; i < Math.min(a.items.length, ys.length); i++) {
        const c = compare(a.items[i].val, ys[i].val);
        if (c !== 0) return c;
      }
      return a.items.length === ys.length ? 0 : a.items.length < ys.length ? -1 : 1;
    }
    case 6: {
      const ys = (b as { entries: [Const, Const][] }).entries;
      for (let i = 0; i < Math.min(a.entries.length, ys.length); i++) {
        let c = compare(a.entries[i][0].val, ys[i][0].val);
        if (c !== 0) return c;
        c = compare(a.entries[i][1].val, ys[i][1].val);
        if (c !== 0) return c;
      }
      return a.entries.length === ys.length ? 0 : a.entries.length < ys.length ? -1 : 1;
    }
  }
}

function forEachStmt(blocks: Block[] | null | undefined, fn: (s: Stmt) => void): void {
  if (!Array.isArray(blocks)) return;
  for (const b of blocks) {
    if (!Array.isArray(b?.stmts)) continue;
    for (const s of b.stmts) {
      // Malformed statements are reported by code generation (WasmLinkError), not here.
      if (s === null || typeof s !== 'object' || s.stmt === null || typeof s.stmt !== 'object') continue;
      fn(s);
      switch (s.type) {
        case 'BlockStmt':
          forEachStmt(s.stmt.blocks, fn);
          break;
        case 'ScanStmt':
        case 'NotStmt':
        case 'WithStmt':
          forEachStmt([s.stmt.block], fn);
          break;
      }
    }
  }
}

/** The local a mutating statement changes in place, else undefined. */
function mutated(s: Stmt): number | undefined {
  switch (s.type) {
    case 'ArrayAppendStmt':
      return s.stmt.array;
    case 'ObjectInsertStmt':
    case 'ObjectInsertOnceStmt':
      return s.stmt.object;
    case 'SetAddStmt':
      return s.stmt.set;
    default:
      return undefined;
  }
}

/** Locals a statement assigns (other than through a mutation), with whether the assignment is a fresh Make. */
function assigned(s: Stmt, out: (local: number, fresh: boolean) => void): void {
  switch (s.type) {
    case 'MakeArrayStmt':
    case 'MakeObjectStmt':
    case 'MakeSetStmt':
    case 'ResetLocalStmt':
      out(s.stmt.target, true);
      break;
    case 'ScanStmt':
      out(s.stmt.key, false);
      out(s.stmt.value, false);
      break;
    case 'WithStmt':
      out(s.stmt.local, false);
      break;
    case 'CallStmt':
    case 'CallDynamicStmt':
      out(s.stmt.result, false);
      break;
    default: {
      const t = (s.stmt as { target?: unknown }).target;
      if (typeof t === 'number') out(t, false);
    }
  }
}

/** Whether every mutated local of every func and plan is defined only by fresh Make statements. */
export function staticCompositesSafe(funcs: Func[], plans: Plan[]): boolean {
  const bodies: { blocks: Block[]; params: number[] }[] = [
    ...funcs.map((f) => ({ blocks: f.blocks, params: f.params })),
    ...plans.map((p) => ({ blocks: p.blocks, params: [0, 1] })),
  ];
  for (const { blocks, params } of bodies) {
    const targets = new Set<number>();
    const foreign = new Set<number>(params);
    forEachStmt(blocks, (s) => {
      const t = mutated(s);
      if (t !== undefined) targets.add(t);
      assigned(s, (l, fresh) => {
        if (!fresh) foreign.add(l);
      });
    });
    for (const t of targets) if (foreign.has(t)) return false;
  }
  return true;
}

/** How many mutating statements target each local of a func or plan. */
export function mutationCounts(blocks: Block[]): Map<number, number> {
  const counts = new Map<number, number>();
  forEachStmt(blocks, (s) => {
    const t = mutated(s);
    if (t !== undefined) counts.set(t, (counts.get(t) ?? 0) + 1);
  });
  return counts;
}

export interface StaticRun {
  /** Address of the value in the static data segment. */
  addr: number;
  /** Index of the run's last statement (its Make statement's index when the literal is empty). */
  end: number;
}

/**
 * The static composite literals of one block: Make statement index → its value's address and the end of its
 * run. Constants are followed only through straight-line constant statements (any other statement forgets
 * them), which is how the planner lays out a literal's elements before the literal.
 */
export function staticRuns(
  stmts: Stmt[],
  counts: Map<number, number>,
  data: StaticData,
  strings: string[],
): Map<number, StaticRun> {
  const runs = new Map<number, StaticRun>();
  const consts = new Map<number, Const>();
  const constOf = (op: Operand): Const | undefined => {
    switch (op.type) {
      case 'local':
        return consts.get(op.value);
      case 'bool':
        return { addr: data.bool(op.value), val: { k: 2, v: op.value } };
      case 'string_index': {
        const s = strings[op.value];
        return s === undefined ? undefined : { addr: data.string(s), val: { k: 4, v: s } };
      }
      default:
        return undefined;
    }
  };
  for (let i = 0; i < stmts.length; i++) {
    const s = stmts[i];
    if (s === null || typeof s !== 'object' || s.stmt === null || typeof s.stmt !== 'object') {
      consts.clear();
      continue;
    }
    switch (s.type) {
      case 'MakeNullStmt':
        consts.set(s.stmt.target, { addr: data.null(), val: { k: 1 } });
        continue;
      case 'MakeNumberIntStmt':
        consts.set(s.stmt.target, {
          addr: data.int(BigInt(s.stmt.value)),
          val: {
            k: 3,
            int: BigInt.asIntN(64, BigInt(s.stmt.value)) === BigInt(s.stmt.value) ? BigInt(s.stmt.value) : undefined,
          },
        });
        continue;
      case 'MakeNumberRefStmt': {
        const text = strings[s.stmt.index ?? s.stmt.Index ?? -1];
        if (text === undefined) break;
        const small = /^-?[0-9]{1,18}$/.test(text);
        consts.set(s.stmt.target, {
          addr: data.numberText(text),
          val: { k: 3, int: small ? BigInt(text) : undefined },
        });
        continue;
      }
      case 'MakeArrayStmt':
      case 'MakeSetStmt':
      case 'MakeObjectStmt': {
        const target = s.stmt.target;
        consts.delete(target);
        const kind = s.type === 'MakeArrayStmt' ? 'array' : s.type === 'MakeSetStmt' ? 'set' : 'object';
        const run: (Const | undefined)[] = [];
        let j = i + 1;
        for (; j < stmts.length; j++) {
          const t = stmts[j];
          if (t === null || typeof t !== 'object' || t.stmt === null || typeof t.stmt !== 'object') break;
          if (kind === 'array' && t.type === 'ArrayAppendStmt' && t.stmt.array === target)
            run.push(constOf(t.stmt.value));
          else if (kind === 'set' && t.type === 'SetAddStmt' && t.stmt.set === target) run.push(constOf(t.stmt.value));
          else if (kind === 'object' && t.type === 'ObjectInsertStmt' && t.stmt.object === target)
            run.push(constOf(t.stmt.key), constOf(t.stmt.value));
          else break;
        }
        const length = kind === 'object' ? run.length / 2 : run.length;
        if ((counts.get(target) ?? 0) !== length || run.some((c) => c === undefined)) {
          i = j - 1; // the run's statements are compiled as they are; its target stays unknown
          continue;
        }
        const value = build(kind, run as Const[], data);
        if (value === undefined) {
          i = j - 1;
          continue;
        }
        runs.set(i, { addr: value.addr, end: j - 1 });
        consts.set(target, value);
        i = j - 1;
        continue;
      }
    }
    consts.clear();
  }
  return runs;
}

/** The static value of a literal's run (rt_array_append/rt_set_add/rt_object_insert in order); undefined ⇒ leave it dynamic. */
function build(kind: 'array' | 'set' | 'object', run: Const[], data: StaticData): Const | undefined {
  if (kind === 'array')
    return {
      addr: data.composite(
        'array',
        run.map((c) => c.addr),
      ),
      val: { k: 5, items: run },
    };
  if (kind === 'set') {
    const items: Const[] = [];
    for (const c of run) {
      let lo = 0;
      let hi = items.length;
      while (lo < hi) {
        const mid = (lo + hi) >> 1;
        const cmp = compare(items[mid].val, c.val);
        if (cmp === undefined) return undefined;
        if (cmp < 0) lo = mid + 1;
        else hi = mid;
      }
      if (lo < items.length) {
        const cmp = compare(items[lo].val, c.val);
        if (cmp === undefined) return undefined;
        if (cmp === 0) continue; // already a member
      }
      items.splice(lo, 0, c);
    }
    return {
      addr: data.composite(
        'set',
        items.map((c) => c.addr),
      ),
      val: { k: 7, items },
    };
  }
  const entries: [Const, Const][] = [];
  for (let i = 0; i < run.length; i += 2) {
    const key = run[i];
    let lo = 0;
    let hi = entries.length;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      const cmp = compare(entries[mid][0].val, key.val);
      if (cmp === undefined) return undefined;
      if (cmp < 0) lo = mid + 1;
      else hi = mid;
    }
    if (lo < entries.length) {
      const cmp = compare(entries[lo][0].val, key.val);
      if (cmp === undefined) return undefined;
      if (cmp === 0) {
        entries[lo] = [entries[lo][0], run[i + 1]]; // rt_object_insert replaces the value of a key it holds
        continue;
      }
    }
    entries.splice(lo, 0, [key, run[i + 1]]);
  }
  return {
    addr: data.composite(
      'object',
      entries.flatMap(([k, v]) => [k.addr, v.addr]),
    ),
    val: { k: 6, entries },
  };
}
