// Ground composite literals linked as static data (src/rego/wasm/static-composites.ts): the values
// and their order match what the runtime builds, building one allocates nothing, and a literal that the plan
// mutates later (or that could reach a mutated local) stays dynamic, so no evaluation sees another's changes.
import { describe, it, expect } from 'vitest';
import type { Block, Stmt } from '../../../src/rego/ir/types.ts';
import { staticCompositesSafe } from '../../../src/rego/wasm/static-composites.ts';
import { PolicyBuilder, stmt, local, bool, returnBlock, loadBoth, evalBoth, evalRaw, exportsOf } from './ir-builder.ts';

/** The planner's layout of a literal: element constants first, then the Make and its run. */
function intArray(target: number, values: number[], firstLocal: number): Stmt[] {
  return [
    ...values.map((v, i) => stmt('MakeNumberIntStmt', { value: v, target: firstLocal + i })),
    stmt('MakeArrayStmt', { capacity: values.length, target }),
    ...values.map((_, i) => stmt('ArrayAppendStmt', { array: target, value: local(firstLocal + i) })),
  ];
}

/** Heap bytes one ctx-path evaluation of entrypoint 0 allocates. */
function heapUsed(p: Awaited<ReturnType<typeof loadBoth>>['slow']): number {
  const ex = exportsOf(p);
  ex.opa_heap_ptr_set(p.dataHeapPtr);
  const before = ex.opa_heap_ptr_get() as number;
  const ctx = ex.opa_eval_ctx_new();
  ex.opa_eval_ctx_set_data(ctx, p.dataAddr);
  ex.opa_eval_ctx_set_entrypoint(ctx, 0);
  ex.eval(ctx);
  return (ex.opa_heap_ptr_get() as number) - before;
}

describe('ground composite literals as static data', () => {
  it('give the values and orders the runtime builds: nested arrays, sets sorted and unique, objects sorted with the last value of a key', async () => {
    const b = new PolicyBuilder();
    const stmts: Stmt[] = [
      ...intArray(10, [3, 1, 2], 20),
      ...intArray(11, [], 30),
      stmt('MakeNumberIntStmt', { value: 7, target: 40 }),
      stmt('MakeNullStmt', { target: 41 }),
      stmt('MakeNumberRefStmt', { index: b.strIndex('-12'), target: 42 }),
      stmt('MakeSetStmt', { target: 12 }),
      stmt('SetAddStmt', { set: 12, value: b.str('b') }),
      stmt('SetAddStmt', { set: 12, value: local(40) }),
      stmt('SetAddStmt', { set: 12, value: b.str('a') }),
      stmt('SetAddStmt', { set: 12, value: bool(true) }),
      stmt('SetAddStmt', { set: 12, value: local(41) }),
      stmt('SetAddStmt', { set: 12, value: b.str('b') }),
      stmt('SetAddStmt', { set: 12, value: local(42) }),
      stmt('SetAddStmt', { set: 12, value: bool(false) }),
      stmt('MakeObjectStmt', { target: 13 }),
      stmt('ObjectInsertStmt', { object: 13, key: b.str('zeta'), value: local(10) }),
      stmt('ObjectInsertStmt', { object: 13, key: b.str('alpha'), value: local(12) }),
      stmt('ObjectInsertStmt', { object: 13, key: b.str('é'), value: local(11) }),
      stmt('ObjectInsertStmt', { object: 13, key: b.str('alpha'), value: b.str('last') }),
      stmt('ObjectInsertStmt', { object: 13, key: b.str('beta'), value: local(12) }),
      stmt('AssignVarOnceStmt', { source: local(13), target: 2 }),
    ];
    b.rule('t.c', [{ stmts }, returnBlock()]);
    b.entrypoint('t/c', 't.c');
    // Membership in the static set (binary search over its order) and lookups in the static object.
    const member = (v: ReturnType<typeof b.str>, target: number): Block => ({
      stmts: [
        stmt('CallStmt', { func: 'g0.data.t.c', args: [local(0), local(1)], result: 3 }),
        stmt('DotStmt', { source: local(3), key: b.str('beta'), target: 4 }),
        stmt('CallStmt', { func: 'internal.member_2', args: [v, local(4)], result: target }),
        stmt('EqualStmt', { a: local(target), b: bool(true) }),
      ],
    });
    b.builtin('internal.member_2', 2);
    b.rule('t.m', [
      member(b.str('a'), 5),
      { stmts: [stmt('MakeNumberIntStmt', { value: -12, target: 6 })] },
      member(local(6), 7),
      { stmts: [stmt('MakeNullStmt', { target: 8 })] },
      member(local(8), 9),
      { stmts: [stmt('AssignVarOnceStmt', { source: bool(true), target: 2 })] },
      returnBlock(),
    ]);
    b.entrypoint('t/m', 't.m');
    const p = await loadBoth(b.build());
    // evalRaw dumps JSON: the set as an array in its order.
    const expected = '[{"result":{"alpha":"last","beta":[null,false,true,-12,7,"a","b"],"zeta":[3,1,2],"é":[]}}]';
    // Twice: the second evaluation reads the same static value.
    expect(evalRaw(p.slow, '{}', 0)).toBe(expected);
    expect(evalRaw(p.slow, '{}', 0)).toBe(expected);
    expect(evalBoth(p, {}, 't/m')).toEqual([{ result: true }]);
  });

  it('are built without allocating: a 200-number table costs no heap', async () => {
    const b = new PolicyBuilder();
    const values = Array.from({ length: 200 }, (_, i) => (i * 37) % 101);
    b.rule('t.table', [
      { stmts: [...intArray(3, values, 100), stmt('AssignVarOnceStmt', { source: local(3), target: 2 })] },
      returnBlock(),
    ]);
    b.entrypoint('t/table', 't.table');
    const p = await loadBoth(b.build());
    expect(evalBoth(p)).toEqual([{ result: values }]);
    // Built at run time the table needs 800 bytes of element slots alone; the result set takes < 200.
    expect(heapUsed(p.slow)).toBeLessThan(400);
  });

  it('stay dynamic when the plan appends to the literal later', async () => {
    const b = new PolicyBuilder();
    b.rule('t.grown', [
      {
        stmts: [
          ...intArray(3, [1, 2], 10),
          stmt('DotStmt', { source: local(0), key: b.str('x'), target: 4 }),
          stmt('BlockStmt', { blocks: [{ stmts: [stmt('ArrayAppendStmt', { array: 3, value: local(4) })] }] }),
          stmt('AssignVarOnceStmt', { source: local(3), target: 2 }),
        ],
      },
      returnBlock(),
    ]);
    b.entrypoint('t/grown', 't.grown');
    const p = await loadBoth(b.build());
    expect(evalBoth(p, { x: 'a' })).toEqual([{ result: [1, 2, 'a'] }]);
    expect(evalBoth(p, { x: 'b' })).toEqual([{ result: [1, 2, 'b'] }]);
  });

  it('are not used at all when a mutated local could hold a value it did not make (here a parameter)', async () => {
    const b = new PolicyBuilder();
    // t.add(arr) appends input.x to its argument in place; t.r passes it a literal.
    b.func({
      name: 'g0.data.t.add',
      params: [0, 1, 3],
      return: 2,
      blocks: [
        {
          stmts: [
            stmt('DotStmt', { source: local(0), key: b.str('x'), target: 4 }),
            stmt('ArrayAppendStmt', { array: 3, value: local(4) }),
            stmt('AssignVarOnceStmt', { source: local(3), target: 2 }),
          ],
        },
        returnBlock(),
      ],
    });
    b.rule('t.r', [
      {
        stmts: [
          ...intArray(3, [1, 2], 10),
          stmt('CallStmt', { func: 'g0.data.t.add', args: [local(0), local(1), local(3)], result: 4 }),
          stmt('AssignVarOnceStmt', { source: local(4), target: 2 }),
        ],
      },
      returnBlock(),
    ]);
    b.entrypoint('t/r', 't.r');
    const policy = b.build();
    expect(staticCompositesSafe(policy.funcs!.funcs, policy.plans!.plans)).toBe(false);
    const p = await loadBoth(policy);
    expect(evalBoth(p, { x: 'a' })).toEqual([{ result: [1, 2, 'a'] }]);
    expect(evalBoth(p, { x: 'b' })).toEqual([{ result: [1, 2, 'b'] }]);
  });
});
