// Structure of the IR the planner emits: OPA's plan JSON shape (OPA docs: IR; docs/wasm-abi.md, IR).
import { describe, expect, it } from 'vitest';
import { parseModule, parseQuery } from '../../../src/rego/ast/index.ts';
import { compileModules } from '../../../src/rego/semantic/index.ts';
import { planEntrypoints, planQueries } from '../../../src/rego/planner/index.ts';
import type { Block, Policy, Stmt } from '../../../src/rego/ir/types.ts';
import { builtinDecls } from '../../../src/rego/builtins/index.ts';
import { RegoErrors } from '../../../src/rego/errors.ts';

const plan = (src: string | string[], eps: string[]): Policy =>
  planEntrypoints(compileModules((Array.isArray(src) ? src : [src]).map((s, i) => parseModule(`m${i}.rego`, s))), eps);

function allStmts(blocks: Block[] | null | undefined, out: Stmt[] = []): Stmt[] {
  for (const b of blocks ?? []) {
    for (const s of b.stmts) {
      out.push(s);
      if (s.type === 'BlockStmt') allStmts(s.stmt.blocks, out);
      if (s.type === 'ScanStmt' || s.type === 'NotStmt' || s.type === 'WithStmt') allStmts([s.stmt.block], out);
    }
  }
  return out;
}

describe('plan shape', () => {
  it('entrypoint plan calls the rule func and binds result', () => {
    const p = plan(
      `package acs
decision := "allow" if input.ok`,
      ['acs/decision'],
    );
    expect(p.plans!.plans.map((x) => x.name)).toEqual(['acs/decision']);
    const stmts = p.plans!.plans[0].blocks[0].stmts;
    expect(stmts.map((s) => s.type)).toEqual(['CallStmt', 'MakeObjectStmt', 'ObjectInsertStmt', 'ResultSetAddStmt']);
    const call = stmts[0];
    expect(call.type === 'CallStmt' && call.stmt.func).toBe('g0.data.acs.decision');
    const ins = stmts[2];
    expect(ins.type === 'ObjectInsertStmt' && p.static!.strings![(ins.stmt.key as { value: number }).value].value).toBe(
      'result',
    );
    const f = p.funcs!.funcs.find((x) => x.name === 'g0.data.acs.decision')!;
    expect(f.params).toEqual([0, 1]);
    expect(f.path).toEqual(['g0', 'acs', 'decision']);
    const last = f.blocks[f.blocks.length - 1].stmts;
    expect(last).toHaveLength(1);
    expect(last[0]).toMatchObject({ type: 'ReturnLocalStmt', stmt: { source: f.return } });
  });

  it('complete rules: ResetLocal, body, AssignVarOnce; then IsDefined + AssignVarOnce to return; default last', () => {
    const p = plan(
      `package t
default p := 0
p := 1 if input.a`,
      ['t/p'],
    );
    const f = p.funcs!.funcs.find((x) => x.name === 'g0.data.t.p')!;
    expect(f.blocks[0].stmts[0].type).toBe('ResetLocalStmt');
    expect(f.blocks[0].stmts.at(-1)!.type).toBe('AssignVarOnceStmt');
    expect(f.blocks[1].stmts.map((s) => s.type)).toEqual(['IsDefinedStmt', 'AssignVarOnceStmt']);
    expect(f.blocks[2].stmts[0]).toMatchObject({ type: 'IsUndefinedStmt', stmt: { source: f.return } });
  });

  it('partial sets and objects start with Make*Stmt and add with SetAdd / ObjectInsertOnce', () => {
    const p = plan(
      `package t
s contains x if some x in input.xs
o[k] := v if some k, v in input.m`,
      ['t/s', 't/o'],
    );
    const s = p.funcs!.funcs.find((x) => x.name === 'g0.data.t.s')!;
    const o = p.funcs!.funcs.find((x) => x.name === 'g0.data.t.o')!;
    expect(s.blocks[0].stmts).toMatchObject([{ type: 'MakeSetStmt', stmt: { target: s.return } }]);
    expect(o.blocks[0].stmts).toMatchObject([{ type: 'MakeObjectStmt', stmt: { target: o.return } }]);
    expect(allStmts(s.blocks).some((x) => x.type === 'SetAddStmt')).toBe(true);
    expect(allStmts(o.blocks).some((x) => x.type === 'ObjectInsertOnceStmt')).toBe(true);
    expect(allStmts(s.blocks).some((x) => x.type === 'ScanStmt')).toBe(true);
  });

  it('functions take extra params; builtin_funcs are sorted with OPA decls', () => {
    const p = plan(
      `package t
f(x, y) := concat("-", [x, y]) if startswith(x, "a")
r := f("ab", "c") if count(input) > 0`,
      ['t/r'],
    );
    const f = p.funcs!.funcs.find((x) => x.name === 'g0.data.t.f')!;
    expect(f.params).toHaveLength(4);
    const names = p.static!.builtin_funcs!.map((b) => b.name);
    expect(names).toEqual([...names].sort());
    expect(names).toEqual(expect.arrayContaining(['concat', 'count', 'gt', 'startswith']));
    for (const b of p.static!.builtin_funcs!) expect(b.decl).toEqual(builtinDecls.get(b.name)!.decl);
  });

  it('numbers: small ints via MakeNumberIntStmt, others keep their literal text', () => {
    const p = plan(
      `package t
p := [1, 2.5, 12345678901234567890, 1e400]`,
      ['t/p'],
    );
    const stmts = allStmts(p.funcs!.funcs[0].blocks);
    expect(stmts.filter((s) => s.type === 'MakeNumberIntStmt').map((s) => (s.stmt as { value: number }).value)).toEqual(
      [1],
    );
    const refs = stmts
      .filter((s) => s.type === 'MakeNumberRefStmt')
      .map((s) => p.static!.strings![(s.stmt as { index: number }).index].value);
    expect(refs).toEqual(['2.5', '12345678901234567890', '1e400']);
  });

  it('statements carry file/row/col from the source', () => {
    const p = plan(
      `package t

p if {
  input.x == 1
}`,
      ['t/p'],
    );
    expect(p.static!.files).toEqual([{ value: 'm0.rego' }]);
    const call = allStmts(p.funcs!.funcs[0].blocks).find((s) => s.type === 'CallStmt')!;
    expect(call.stmt).toMatchObject({ file: 0, row: 4, col: 3 });
  });

  it('whole-package refs build the virtual object and merge base data', () => {
    const p = plan(
      [
        `package a.b
q := 1`,
        `package t
p := data.a`,
      ],
      ['t/p'],
    );
    const f = p.funcs!.funcs.find((x) => x.name === 'g0.data.t.p')!;
    const types = allStmts(f.blocks).map((s) => s.type);
    expect(types).toContain('ObjectMergeStmt');
    expect(allStmts(f.blocks).some((s) => s.type === 'CallStmt' && s.stmt.func === 'g0.data.a.b.q')).toBe(true);
  });

  it('with on data that hits rules re-plans them under a new generation', () => {
    const p = plan(
      `package t
q := 1
s := q + 1
r := v if { v := s with data.t.q as 5 }`,
      ['t/r'],
    );
    const names = p.funcs!.funcs.map((f) => f.name);
    expect(names).toContain('g0.data.t.r');
    // s reads the mocked rule, so it is planned again; the mocked q itself is read from data.
    expect(names.some((n) => /^g[1-9]\d*\.data\.t\.s$/.test(n))).toBe(true);
    expect(names.some((n) => /^g[1-9]\d*\.data\.t\.q$/.test(n))).toBe(false);
    const r = p.funcs!.funcs.find((x) => x.name === 'g0.data.t.r')!;
    expect(allStmts(r.blocks).filter((s) => s.type === 'WithStmt').length).toBeGreaterThanOrEqual(2);
  });

  it('with expressions that replace the same rules or functions share one generation', () => {
    const p = plan(
      `package t
q := 1
s := q + 1
f(_) := 0
g(x) := f(x) + s
a := [x, y] if { x := s with data.t.q as 5; y := s with data.t.q as input.n }
b := [x, y, z] if { x := g(1) with f as input.m; y := g(2) with f as input.n; z := g(1) with f as 3 }
c := x if { x := g(1) with f as 3 }
`,
      ['t/a', 't/b', 't/c'],
    );
    const replanned = (rule: string) =>
      p.funcs!.funcs.filter((f) => f.name.endsWith(`.data.t.${rule}`) && !f.name.startsWith('g0.')).map((f) => f.name);
    // s under data.t.q mocked (both sites of a), under f mocked by a value read from data (two sites of b), and
    // under f mocked by the constant 3 (b and c): three generations, each planning s once.
    expect(replanned('s')).toHaveLength(3);
    expect(replanned('g')).toHaveLength(2);
  });

  it('query plans bind user variables only', () => {
    const prog = compileModules([parseModule('m.rego', 'package t\nxs := [1]')]);
    const p = planQueries(prog, [{ name: 'q', body: parseQuery('data.t.xs[i] = v; y := v; _ = i') }]);
    const keys = allStmts(p.plans!.plans[0].blocks)
      .filter((s) => s.type === 'ObjectInsertStmt')
      .map((s) => p.static!.strings![(s.stmt as { key: { value: number } }).key.value].value);
    expect(keys.sort()).toEqual(['i', 'v', 'y']);
  });

  it('long bodies plan without exhausting the stack', () => {
    const n = 3000;
    const body = Array.from({ length: n }, (_, i) => `  x${i} := ${i === 0 ? 'input.a' : `x${i - 1} + 1`}`).join('\n');
    const p = plan(`package t\np := x${n - 1} if {\n${body}\n}`, ['t/p']);
    expect(allStmts(p.funcs!.funcs[0].blocks).filter((s) => s.type === 'CallStmt')).toHaveLength(n - 1);
  });

  it('long chains of rules compile and plan without deep recursion', () => {
    const n = 3000;
    const src =
      'package t\n' +
      Array.from({ length: n }, (_, i) => (i === n - 1 ? `r${i} := 1` : `r${i} := r${i + 1} + 1`)).join('\n');
    const p = plan(src, ['t/r0']);
    expect(p.funcs!.funcs).toHaveLength(n);
    const cyclic = src.replace(`r${n - 1} := 1`, `r${n - 1} := r0`);
    expect(() => plan(cyclic, ['t/r0'])).toThrow(/rego_recursion_error: rule data\.t\.r\d+ is recursive/);
  });

  it('combinatorial plans are refused with a compile error instead of exhausting memory', () => {
    const iters = Array.from({ length: 12 }, (_, i) => `  data.pkg[k${i}]`).join('\n');
    const mods = [
      `package t\np contains 1 if {\n${iters}\n}`,
      ...Array.from({ length: 6 }, (_, i) => `package pkg.c${i}\nr := 1`),
    ];
    expect(() => plan(mods, ['t/p'])).toThrow(RegoErrors);
    expect(() => plan(mods, ['t/p'])).toThrow(/policy too large to plan/);
  });
});
