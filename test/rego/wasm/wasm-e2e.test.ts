// End-to-end: hand-written OPA IR plans → linkPolicyWasm → unmodified @open-policy-agent/opa-wasm, on the
// opa_eval fast path and the ctx slow path.
import { describe, it, expect } from 'vitest';
import { loadPolicy } from '@open-policy-agent/opa-wasm';
import { createHostBuiltins } from '../../../src/rego/builtins/index.ts';
import { linkPolicyWasm, WasmLinkError } from '../../../src/rego/wasm/index.ts';
import {
  PolicyBuilder,
  stmt,
  local,
  bool,
  returnBlock,
  loadBoth,
  evalBoth,
  thrown,
  loadPolicySync,
  exportsOf,
  readCString,
  Wasm,
} from './ir-builder.ts';

describe('constants and input references', () => {
  it('returns a constant composite value built from IR statements', async () => {
    const b = new PolicyBuilder();
    b.rule('t.c', [
      {
        stmts: [
          stmt('MakeArrayStmt', { capacity: 0, target: 3 }),
          stmt('MakeNumberIntStmt', { value: 1, target: 4 }),
          stmt('ArrayAppendStmt', { array: 3, value: local(4) }),
          stmt('ArrayAppendStmt', { array: 3, value: b.str('two') }),
          stmt('ArrayAppendStmt', { array: 3, value: bool(true) }),
          stmt('MakeNullStmt', { target: 5 }),
          stmt('ArrayAppendStmt', { array: 3, value: local(5) }),
          stmt('MakeNumberRefStmt', { index: b.strIndex('2.5'), target: 6 }),
          stmt('ArrayAppendStmt', { array: 3, value: local(6) }),
          stmt('MakeObjectStmt', { target: 7 }),
          stmt('ObjectInsertStmt', { key: b.str('z'), value: local(3), object: 7 }),
          stmt('ObjectInsertStmt', { key: b.str('a'), value: b.str('héllo ✓ "q" \\ \n'), object: 7 }),
          stmt('AssignVarOnceStmt', { source: local(7), target: 2 }),
        ],
      },
      returnBlock(),
    ]);
    b.entrypoint('t/c', 't.c');
    const p = await loadBoth(b.build());
    expect(evalBoth(p)).toEqual([{ result: { a: 'héllo ✓ "q" \\ \n', z: [1, 'two', true, null, 2.5] } }]);
    expect(p.fast.entrypoints).toEqual({ 't/c': 0 });
  });

  it('reads input paths, is undefined when they are missing, and loads with loadPolicySync', async () => {
    const b = new PolicyBuilder();
    b.rule('t.u', [
      {
        stmts: [
          stmt('DotStmt', { source: local(0), key: b.str('user'), target: 3 }),
          stmt('DotStmt', { source: local(3), key: b.str('name'), target: 4 }),
          stmt('AssignVarOnceStmt', { source: local(4), target: 2 }),
        ],
      },
      returnBlock(),
    ]);
    b.entrypoint('t/u', 't.u');
    const p = await loadBoth(b.build());
    expect(evalBoth(p, { user: { name: 'alice' } })).toEqual([{ result: 'alice' }]);
    expect(evalBoth(p, { user: 'alice' })).toEqual([]);
    expect(evalBoth(p, {})).toEqual([]);
    const sync = loadPolicySync(p.wasm);
    expect(sync.evaluate({ user: { name: 'bob' } }, 't/u')).toEqual([{ result: 'bob' }]);
  });
});

describe('scans and partial rules', () => {
  it('builds a partial set from a scan with a native comparison, sorted like OPA', async () => {
    const b = new PolicyBuilder().builtin('gt', 2);
    b.rule('t.p', [
      { stmts: [stmt('MakeSetStmt', { target: 2 })] },
      {
        stmts: [
          stmt('DotStmt', { source: local(0), key: b.str('xs'), target: 3 }),
          stmt('MakeNumberIntStmt', { value: 1, target: 7 }),
          stmt('ScanStmt', {
            source: 3,
            key: 4,
            value: 5,
            block: {
              stmts: [
                stmt('CallStmt', { func: 'gt', args: [local(5), local(7)], result: 6 }),
                stmt('NotEqualStmt', { a: local(6), b: bool(false) }),
                stmt('SetAddStmt', { value: local(5), set: 2 }),
              ],
            },
          }),
        ],
      },
      returnBlock(),
    ]);
    b.entrypoint('t/p', 't.p');
    const p = await loadBoth(b.build());
    expect(evalBoth(p, { xs: [3, 1, 2, 5, 2, 'x', 0.5] })).toEqual([{ result: [2, 3, 5, 'x'] }]);
    expect(evalBoth(p, { xs: [] })).toEqual([{ result: [] }]);
    expect(evalBoth(p, {})).toEqual([{ result: [] }]);
  });

  it('iterates objects in sorted key order and arrays with numeric keys', async () => {
    const b = new PolicyBuilder();
    b.rule('t.keys', [
      {
        stmts: [
          stmt('MakeArrayStmt', { capacity: 0, target: 2 }),
          stmt('DotStmt', { source: local(0), key: b.str('o'), target: 3 }),
          stmt('ScanStmt', {
            source: 3,
            key: 4,
            value: 5,
            block: {
              stmts: [
                stmt('MakeArrayStmt', { capacity: 2, target: 6 }),
                stmt('ArrayAppendStmt', { array: 6, value: local(4) }),
                stmt('ArrayAppendStmt', { array: 6, value: local(5) }),
                stmt('ArrayAppendStmt', { array: 2, value: local(6) }),
              ],
            },
          }),
        ],
      },
      returnBlock(),
    ]);
    b.entrypoint('t/keys', 't.keys');
    const p = await loadBoth(b.build());
    expect(evalBoth(p, { o: { b: 1, a: 2, c: 3, B: 0 } })).toEqual([
      {
        result: [
          ['B', 0],
          ['a', 2],
          ['b', 1],
          ['c', 3],
        ],
      },
    ]);
    expect(evalBoth(p, { o: ['x', 'y'] })).toEqual([
      {
        result: [
          [0, 'x'],
          [1, 'y'],
        ],
      },
    ]);
    expect(evalBoth(p, { o: 'scalar' })).toEqual([{ result: [] }]);
  });

  it('returns sets in OPA order across types (null < bool < number < string < array < object)', async () => {
    const b = new PolicyBuilder();
    b.rule('t.s', [
      {
        stmts: [
          stmt('MakeSetStmt', { target: 2 }),
          stmt('DotStmt', { source: local(0), key: b.str('xs'), target: 3 }),
          stmt('ScanStmt', {
            source: 3,
            key: 4,
            value: 5,
            block: { stmts: [stmt('SetAddStmt', { value: local(5), set: 2 })] },
          }),
        ],
      },
      returnBlock(),
    ]);
    b.entrypoint('t/s', 't.s');
    const p = await loadBoth(b.build());
    const xs = [{ k: 2 }, [1, 2], 'b', 3, { k: 1 }, 'a', true, null, false, [1], 1, 3, 'a', -2.5];
    expect(evalBoth(p, { xs })).toEqual([
      { result: [null, false, true, -2.5, 1, 3, 'a', 'b', [1], [1, 2], { k: 1 }, { k: 2 }] },
    ]);
  });
});

describe('conflicts and runtime errors', () => {
  function conflictPolicy() {
    const b = new PolicyBuilder();
    const f = b.file('conf.rego');
    // p[k] := v for [k, v] in input.pairs
    b.rule('t.obj', [
      { stmts: [stmt('MakeObjectStmt', { target: 2 })] },
      {
        stmts: [
          stmt('DotStmt', { source: local(0), key: b.str('pairs'), target: 3 }),
          stmt('MakeNumberIntStmt', { value: 0, target: 8 }),
          stmt('MakeNumberIntStmt', { value: 1, target: 9 }),
          stmt('ScanStmt', {
            source: 3,
            key: 4,
            value: 5,
            block: {
              stmts: [
                stmt('DotStmt', { source: local(5), key: local(8), target: 6 }),
                stmt('DotStmt', { source: local(5), key: local(9), target: 7 }),
                stmt('ObjectInsertOnceStmt', { key: local(6), value: local(7), object: 2, file: f, row: 7, col: 3 }),
              ],
            },
          }),
        ],
      },
      returnBlock(),
    ]);
    // c := input.a if true; c := input.b if true
    b.rule('t.complete', [
      {
        stmts: [
          stmt('DotStmt', { source: local(0), key: b.str('a'), target: 3 }),
          stmt('AssignVarOnceStmt', { source: local(3), target: 2, file: f, row: 4, col: 1 }),
        ],
      },
      {
        stmts: [
          stmt('DotStmt', { source: local(0), key: b.str('b'), target: 3 }),
          stmt('AssignVarOnceStmt', { source: local(3), target: 2, file: f, row: 5, col: 1 }),
        ],
      },
      returnBlock(),
    ]);
    b.entrypoint('t/obj', 't.obj').entrypoint('t/complete', 't.complete');
    return b.build();
  }

  it("raises OPA's object insert conflict with file:row:col, then evaluates again", async () => {
    const p = await loadBoth(conflictPolicy());
    const input = {
      pairs: [
        ['a', 1],
        ['b', 2],
        ['a', 2],
      ],
    };
    for (const pol of [p.fast, p.slow]) {
      expect(thrown(() => pol.evaluate(input, 't/obj'))).toBe('conf.rego:7:3: object insert conflict');
    }
    expect(
      evalBoth(
        p,
        {
          pairs: [
            ['a', 1],
            ['b', 2],
            ['a', 1],
          ],
        },
        't/obj',
      ),
    ).toEqual([{ result: { a: 1, b: 2 } }]);
  });

  it("raises OPA's var assignment conflict when complete rule definitions disagree, not when they agree", async () => {
    const p = await loadBoth(conflictPolicy());
    for (const pol of [p.fast, p.slow]) {
      expect(thrown(() => pol.evaluate({ a: 1, b: 2 }, 't/complete'))).toBe('conf.rego:5:1: var assignment conflict');
    }
    expect(evalBoth(p, { a: 1, b: 1 }, 't/complete')).toEqual([{ result: 1 }]);
    expect(evalBoth(p, { b: [1] }, 't/complete')).toEqual([{ result: [1] }]);
  });

  it('aborts an evaluation that allocates without bound; the host survives and evaluates again', async () => {
    const b = new PolicyBuilder();
    // xs := [1]; every x in xs appends x to xs (never terminates on its own)
    b.rule('t.runaway', [
      {
        stmts: [
          stmt('MakeArrayStmt', { capacity: 1, target: 3 }),
          stmt('MakeNumberIntStmt', { value: 1, target: 4 }),
          stmt('ArrayAppendStmt', { array: 3, value: local(4) }),
          stmt('ScanStmt', {
            source: 3,
            key: 5,
            value: 6,
            block: { stmts: [stmt('ArrayAppendStmt', { array: 3, value: local(6) })] },
          }),
          stmt('AssignVarOnceStmt', { source: local(3), target: 2 }),
        ],
      },
      returnBlock(),
    ]);
    b.rule('t.ok', [{ stmts: [stmt('AssignVarOnceStmt', { source: b.str('fine'), target: 2 })] }, returnBlock()]);
    b.entrypoint('t/runaway', 't.runaway').entrypoint('t/ok', 't.ok');
    const p = await loadBoth(b.build(), {}, {}, { initial: 5, maximum: 64 });
    for (const pol of [p.fast, p.slow]) {
      const err = thrown(() => pol.evaluate({}, 't/runaway'));
      expect(err).toBe('opa_malloc: failed: cannot grow memory');
      expect(pol.evaluate({}, 't/ok')).toEqual([{ result: 'fine' }]);
      expect(pol.evaluate({ x: 'y'.repeat(1000) }, 't/ok')).toEqual([{ result: 'fine' }]);
    }
  });

  it('survives an input too large for the memory limit on both paths', async () => {
    const b = new PolicyBuilder();
    b.rule('t.ok', [{ stmts: [stmt('AssignVarOnceStmt', { source: b.str('fine'), target: 2 })] }, returnBlock()]);
    b.entrypoint('t/ok', 't.ok');
    const p = await loadBoth(b.build(), {}, {}, { initial: 5, maximum: 32 });
    const huge = { blob: 'x'.repeat(3 * 1024 * 1024) };
    // slow path: the module's allocator refuses; fast path: the host cannot grow memory for the input
    expect(thrown(() => p.slow.evaluate(huge))).toBe('opa_malloc: failed: cannot grow memory');
    expect(thrown(() => p.fast.evaluate(huge))).toBeInstanceOf(Error);
    expect(evalBoth(p, { small: true })).toEqual([{ result: 'fine' }]);
  });

  it('aborts on malformed raw input on the fast path', async () => {
    const b = new PolicyBuilder();
    b.rule('t.ok', [{ stmts: [stmt('AssignVarOnceStmt', { source: b.str('fine'), target: 2 })] }, returnBlock()]);
    b.entrypoint('t/ok', 't.ok');
    const p = await loadBoth(b.build());
    expect(thrown(() => p.fast.evaluate(new TextEncoder().encode('{"a": ').buffer))).toBe(
      'opa_eval: failed to parse input',
    );
    expect(p.fast.evaluate({})).toEqual([{ result: 'fine' }]);
  });

  it('links policies whose static data exceeds the 5 default pages (host passes a larger initial memory)', async () => {
    const b = new PolicyBuilder();
    const big = 'y'.repeat(400 * 1024);
    b.rule('t.big', [{ stmts: [stmt('AssignVarOnceStmt', { source: b.str(big), target: 2 })] }, returnBlock()]);
    b.entrypoint('t/big', 't.big');
    const wasm = await linkPolicyWasm(b.build());
    expect(String(await loadPolicy(wasm).catch((e: unknown) => e))).toMatch(/smaller than initial/);
    const pol = await loadPolicy(wasm, { initial: 8 });
    expect(pol.evaluate({})[0].result.length).toBe(big.length);
  });

  it('rejects an unknown entrypoint id with a clear abort', async () => {
    const b = new PolicyBuilder();
    b.rule('t.ok', [{ stmts: [stmt('AssignVarOnceStmt', { source: b.str('fine'), target: 2 })] }, returnBlock()]);
    b.entrypoint('t/ok', 't.ok');
    const p = await loadBoth(b.build());
    expect(thrown(() => p.fast.evaluate({}, 3))).toBe('internal: illegal entrypoint id');
    expect(thrown(() => p.slow.evaluate({}, 3))).toBe('internal: illegal entrypoint id');
    expect(evalBoth(p, {}, 0)).toEqual([{ result: 'fine' }]);
  });
});

describe('control flow', () => {
  it('NotStmt: defined only when its block is undefined', async () => {
    const b = new PolicyBuilder();
    b.rule('t.allow', [
      {
        stmts: [
          stmt('NotStmt', {
            block: {
              stmts: [
                stmt('DotStmt', { source: local(0), key: b.str('deny'), target: 3 }),
                stmt('NotEqualStmt', { a: local(3), b: bool(false) }),
              ],
            },
          }),
          stmt('AssignVarOnceStmt', { source: bool(true), target: 2 }),
        ],
      },
      {
        stmts: [stmt('IsUndefinedStmt', { source: 2 }), stmt('AssignVarOnceStmt', { source: bool(false), target: 2 })],
      },
      returnBlock(),
    ]);
    b.entrypoint('t/allow', 't.allow');
    const p = await loadBoth(b.build());
    expect(evalBoth(p, { deny: true })).toEqual([{ result: false }]);
    expect(evalBoth(p, { deny: false })).toEqual([{ result: true }]);
    expect(evalBoth(p, {})).toEqual([{ result: true }]);
    expect(evalBoth(p, { deny: 'yes' })).toEqual([{ result: false }]);
  });

  it('BreakStmt leaves the enclosing IR block by index (else-chain shape)', async () => {
    const b = new PolicyBuilder();
    b.rule('t.br', [
      {
        stmts: [
          stmt('BlockStmt', {
            blocks: [
              {
                stmts: [
                  stmt('DotStmt', { source: local(0), key: b.str('a'), target: 3 }),
                  stmt('AssignVarStmt', { source: b.str('has a'), target: 2 }),
                  stmt('BreakStmt', { index: 1 }),
                ],
              },
              { stmts: [stmt('AssignVarStmt', { source: b.str('no a'), target: 4 })] },
            ],
          }),
          stmt('AssignVarStmt', { source: local(4), target: 2 }),
        ],
      },
      returnBlock(),
    ]);
    b.entrypoint('t/br', 't.br');
    const p = await loadBoth(b.build());
    expect(evalBoth(p, { a: 1 })).toEqual([{ result: 'has a' }]);
    expect(evalBoth(p, {})).toEqual([{ result: 'no a' }]);
  });

  it('WithStmt replaces input (whole and at a path) for the block, memo frames keep results apart', async () => {
    const b = new PolicyBuilder();
    b.rule('t.r', [
      {
        stmts: [
          stmt('DotStmt', { source: local(0), key: b.str('a'), target: 3 }),
          stmt('AssignVarOnceStmt', { source: local(3), target: 2 }),
        ],
      },
      returnBlock(),
    ]);
    b.rule('t.top', [
      {
        stmts: [
          stmt('MakeObjectStmt', { target: 2 }),
          stmt('CallStmt', { func: 'g0.data.t.r', args: [local(0), local(1)], result: 3 }),
          stmt('ObjectInsertStmt', { key: b.str('before'), value: local(3), object: 2 }),
          stmt('MakeNumberIntStmt', { value: 7, target: 4 }),
          stmt('WithStmt', {
            local: 0,
            path: [b.strIndex('a')],
            value: local(4),
            block: {
              stmts: [
                stmt('CallStmt', { func: 'g0.data.t.r', args: [local(0), local(1)], result: 5 }),
                stmt('ObjectInsertStmt', { key: b.str('with_path'), value: local(5), object: 2 }),
                stmt('DotStmt', { source: local(0), key: b.str('keep'), target: 9 }),
                stmt('ObjectInsertStmt', { key: b.str('kept'), value: local(9), object: 2 }),
              ],
            },
          }),
          stmt('MakeObjectStmt', { target: 6 }),
          stmt('ObjectInsertStmt', { key: b.str('a'), value: b.str('whole'), object: 6 }),
          stmt('WithStmt', {
            local: 0,
            path: [],
            value: local(6),
            block: {
              stmts: [
                stmt('CallStmt', { func: 'g0.data.t.r', args: [local(0), local(1)], result: 7 }),
                stmt('ObjectInsertStmt', { key: b.str('with_whole'), value: local(7), object: 2 }),
              ],
            },
          }),
          stmt('CallStmt', { func: 'g0.data.t.r', args: [local(0), local(1)], result: 8 }),
          stmt('ObjectInsertStmt', { key: b.str('after'), value: local(8), object: 2 }),
          stmt('ObjectInsertStmt', { key: b.str('input_after'), value: local(0), object: 2 }),
        ],
      },
      returnBlock(),
    ]);
    b.entrypoint('t/top', 't.top');
    const p = await loadBoth(b.build());
    expect(evalBoth(p, { a: 1, keep: 'k' })).toEqual([
      {
        result: { after: 1, before: 1, input_after: { a: 1, keep: 'k' }, kept: 'k', with_path: 7, with_whole: 'whole' },
      },
    ]);
  });

  it('WithStmt is undefined when its block is, and still restores the local', async () => {
    const b = new PolicyBuilder();
    b.rule('t.w', [
      {
        stmts: [
          stmt('WithStmt', {
            local: 0,
            path: [b.strIndex('x')],
            value: bool(true),
            block: { stmts: [stmt('DotStmt', { source: local(0), key: b.str('missing'), target: 3 })] },
          }),
          stmt('AssignVarOnceStmt', { source: b.str('reached'), target: 2 }),
        ],
      },
      { stmts: [stmt('IsUndefinedStmt', { source: 2 }), stmt('AssignVarOnceStmt', { source: local(0), target: 2 })] },
      returnBlock(),
    ]);
    b.entrypoint('t/w', 't.w');
    const p = await loadBoth(b.build());
    expect(evalBoth(p, { y: 1 })).toEqual([{ result: { y: 1 } }]);
    expect(evalBoth(p, { missing: 1 })).toEqual([{ result: 'reached' }]);
  });

  it('a BreakStmt leaving a WithStmt body restores the replaced local', async () => {
    const b = new PolicyBuilder();
    b.rule('t.wb', [
      {
        stmts: [
          stmt('WithStmt', {
            local: 0,
            path: [b.strIndex('a')],
            value: b.str('replaced'),
            block: { stmts: [stmt('BlockStmt', { blocks: [{ stmts: [stmt('BreakStmt', { index: 2 })] }] })] },
          }),
          stmt('AssignVarOnceStmt', { source: b.str('not reached'), target: 2 }),
        ],
      },
      { stmts: [stmt('IsUndefinedStmt', { source: 2 }), stmt('AssignVarOnceStmt', { source: local(0), target: 2 })] },
      returnBlock(),
    ]);
    b.entrypoint('t/wb', 't.wb');
    const p = await loadBoth(b.build());
    expect(evalBoth(p, { a: 1 })).toEqual([{ result: { a: 1 } }]);
  });

  it('CallDynamicStmt dispatches on a runtime path and is undefined for unknown rules', async () => {
    const b = new PolicyBuilder();
    b.rule('t.a', [{ stmts: [stmt('AssignVarOnceStmt', { source: b.str('from a'), target: 2 })] }, returnBlock()]);
    b.rule('t.b', [{ stmts: [stmt('AssignVarOnceStmt', { source: b.str('from b'), target: 2 })] }, returnBlock()]);
    b.plan('t/dyn', [
      {
        stmts: [
          stmt('DotStmt', { source: local(0), key: b.str('which'), target: 2 }),
          stmt('CallDynamicStmt', { args: [0, 1], path: [b.str('g0'), b.str('t'), local(2)], result: 3 }),
          stmt('MakeObjectStmt', { target: 4 }),
          stmt('ObjectInsertStmt', { key: b.str('result'), value: local(3), object: 4 }),
          stmt('ResultSetAddStmt', { value: 4 }),
        ],
      },
    ]);
    const p = await loadBoth(b.build());
    expect(evalBoth(p, { which: 'b' })).toEqual([{ result: 'from b' }]);
    expect(evalBoth(p, { which: 'a' })).toEqual([{ result: 'from a' }]);
    expect(evalBoth(p, { which: 'zzz' })).toEqual([]);
    expect(evalBoth(p, { which: 5 })).toEqual([]);
  });

  it('functions with arguments (not memoised) and the function conflict message', async () => {
    const b = new PolicyBuilder().builtin('plus', 2);
    const f = b.file('fn.rego');
    // inc(x) := x + 1; twice(x) := x; twice(x) := 0 (conflict unless x == 0)
    b.func({
      name: 'g0.data.t.inc',
      params: [0, 1, 2],
      return: 3,
      path: ['g0', 't', 'inc'],
      blocks: [
        {
          stmts: [
            stmt('MakeNumberIntStmt', { value: 1, target: 4 }),
            stmt('CallStmt', { func: 'plus', args: [local(2), local(4)], result: 5 }),
            stmt('AssignVarOnceStmt', { source: local(5), target: 3 }),
          ],
        },
        returnBlock(3),
      ],
    });
    b.func({
      name: 'g0.data.t.twice',
      params: [0, 1, 2],
      return: 3,
      blocks: [
        { stmts: [stmt('AssignVarOnceStmt', { source: local(2), target: 3, file: f, row: 2, col: 1 })] },
        {
          stmts: [
            stmt('MakeNumberIntStmt', { value: 0, target: 4 }),
            stmt('AssignVarOnceStmt', { source: local(4), target: 3, file: f, row: 3, col: 1 }),
          ],
        },
        returnBlock(3),
      ],
    });
    b.rule('t.r', [
      {
        stmts: [
          stmt('DotStmt', { source: local(0), key: b.str('n'), target: 3 }),
          stmt('CallStmt', { func: 'g0.data.t.inc', args: [local(0), local(1), local(3)], result: 4 }),
          stmt('CallStmt', { func: 'g0.data.t.inc', args: [local(0), local(1), local(4)], result: 5 }),
          stmt('CallStmt', { func: 'g0.data.t.twice', args: [local(0), local(1), local(3)], result: 6 }),
          stmt('MakeArrayStmt', { capacity: 3, target: 2 }),
          stmt('ArrayAppendStmt', { array: 2, value: local(4) }),
          stmt('ArrayAppendStmt', { array: 2, value: local(5) }),
          stmt('ArrayAppendStmt', { array: 2, value: local(6) }),
        ],
      },
      returnBlock(),
    ]);
    b.entrypoint('t/r', 't.r');
    const p = await loadBoth(b.build());
    expect(evalBoth(p, { n: 0 })).toEqual([{ result: [1, 2, 0] }]);
    expect(thrown(() => p.fast.evaluate({ n: 5 }))).toBe('fn.rego:3:1: var assignment conflict');
    expect(evalBoth(p, { n: 'x' })).toEqual([]);
  });

  it('type checks, lengths, IsDefined/ResetLocal, AssignIntStmt and ObjectMergeStmt', async () => {
    const b = new PolicyBuilder();
    const kinds = ['arr', 'obj', 'set'] as const;
    b.rule('t.misc', [
      { stmts: [stmt('MakeObjectStmt', { target: 2 })] },
      // kind of input.v
      ...kinds.map((k) => ({
        stmts: [
          stmt('DotStmt', { source: local(0), key: b.str('v'), target: 3 }),
          k === 'arr'
            ? stmt('IsArrayStmt', { source: local(3) })
            : k === 'obj'
              ? stmt('IsObjectStmt', { source: local(3) })
              : stmt('IsSetStmt', { source: local(3) }),
          stmt('ObjectInsertStmt', { key: b.str('kind'), value: b.str(k), object: 2 }),
        ],
      })),
      {
        stmts: [
          stmt('DotStmt', { source: local(0), key: b.str('v'), target: 3 }),
          stmt('LenStmt', { source: local(3), target: 4 }),
          stmt('ObjectInsertStmt', { key: b.str('len'), value: local(4), object: 2 }),
        ],
      },
      {
        stmts: [
          stmt('MakeNumberIntStmt', { value: 1, target: 5 }),
          stmt('AssignIntStmt', { value: 42, target: 5 }),
          stmt('ObjectInsertStmt', { key: b.str('int'), value: local(5), object: 2 }),
          stmt('ResetLocalStmt', { target: 5 }),
          stmt('IsUndefinedStmt', { source: 5 }),
          stmt('ObjectInsertStmt', { key: b.str('reset'), value: bool(true), object: 2 }),
          stmt('IsDefinedStmt', { source: 5 }),
          stmt('ObjectInsertStmt', { key: b.str('unreachable'), value: bool(true), object: 2 }),
        ],
      },
      {
        stmts: [
          stmt('DotStmt', { source: local(0), key: b.str('base'), target: 6 }),
          stmt('DotStmt', { source: local(0), key: b.str('virt'), target: 7 }),
          stmt('ObjectMergeStmt', { a: 6, b: 7, target: 8 }),
          stmt('ObjectInsertStmt', { key: b.str('merged'), value: local(8), object: 2 }),
        ],
      },
      {
        stmts: [
          stmt('EqualStmt', { a: b.str('x'), b: b.str('x') }),
          stmt('EqualStmt', { a: bool(true), b: bool(true) }),
          stmt('ObjectInsertStmt', { key: b.str('eq'), value: bool(true), object: 2 }),
          stmt('EqualStmt', { a: bool(true), b: bool(false) }),
          stmt('ObjectInsertStmt', { key: b.str('neq'), value: bool(true), object: 2 }),
        ],
      },
      returnBlock(),
    ]);
    b.entrypoint('t/misc', 't.misc');
    const p = await loadBoth(b.build());
    const common = { int: 42, reset: true, eq: true };
    expect(evalBoth(p, { v: [1, 2, 3] })).toEqual([{ result: { ...common, kind: 'arr', len: 3 } }]);
    expect(evalBoth(p, { v: { a: 1 } })).toEqual([{ result: { ...common, kind: 'obj', len: 1 } }]);
    expect(evalBoth(p, { v: 'héllo' })).toEqual([{ result: { ...common, len: 5 } }]);
    expect(evalBoth(p, { v: 3 })).toEqual([{ result: { ...common } }]);
    expect(evalBoth(p, { base: { a: { x: 1 }, b: 2 }, virt: { a: { y: 2 }, c: 3 } })).toEqual([
      { result: { ...common, merged: { a: { x: 1, y: 2 }, b: 2, c: 3 } } },
    ]);
    // Rego set syntax in raw input reaches opa_value_parse on the fast path only.
    const raw = new TextEncoder().encode('{"v": {3, 1, "a"}}').buffer;
    expect(p.fast.evaluate(raw)).toEqual([{ result: { ...common, kind: 'set', len: 3 } }]);
    expect(thrown(() => p.slow.evaluate(raw))).toBe('failed to parse json value');
  });
});

describe('host interaction', () => {
  it('setData replaces data; the rule reads data by a key from input', async () => {
    const b = new PolicyBuilder();
    b.rule('t.role', [
      {
        stmts: [
          stmt('DotStmt', { source: local(1), key: b.str('roles'), target: 3 }),
          stmt('DotStmt', { source: local(0), key: b.str('user'), target: 4 }),
          stmt('DotStmt', { source: local(3), key: local(4), target: 5 }),
          stmt('AssignVarOnceStmt', { source: local(5), target: 2 }),
        ],
      },
      returnBlock(),
    ]);
    b.entrypoint('t/role', 't.role');
    const p = await loadBoth(b.build());
    expect(evalBoth(p, { user: 'alice' })).toEqual([]);
    for (const pol of [p.fast, p.slow]) pol.setData({ roles: { alice: 'admin', bob: 'viewer' } });
    expect(evalBoth(p, { user: 'alice' })).toEqual([{ result: 'admin' }]);
    expect(evalBoth(p, { user: 'bob' })).toEqual([{ result: 'viewer' }]);
    for (const pol of [p.fast, p.slow]) pol.setData({ roles: { alice: 'auditor' } });
    expect(evalBoth(p, { user: 'alice' })).toEqual([{ result: 'auditor' }]);
    expect(evalBoth(p, { user: 'bob' })).toEqual([]);
  });

  it('keeps the heap stable over 1000 evaluations on both paths', async () => {
    const b = new PolicyBuilder();
    b.rule('t.echo', [
      {
        stmts: [
          stmt('MakeObjectStmt', { target: 2 }),
          stmt('ObjectInsertStmt', { key: b.str('in'), value: local(0), object: 2 }),
        ],
      },
      returnBlock(),
    ]);
    b.entrypoint('t/echo', 't.echo');
    const p = await loadBoth(b.build());
    p.fast.setData({ big: Array.from({ length: 200 }, (_, i) => ({ i })) });
    p.slow.setData({ big: Array.from({ length: 200 }, (_, i) => ({ i })) });
    const input = { user: 'alice', items: Array.from({ length: 50 }, (_, i) => `item-${i}`) };
    for (const pol of [p.fast, p.slow]) {
      const exports = exportsOf(pol);
      pol.evaluate(input);
      const heapAfterFirst = exports.opa_heap_ptr_get();
      const memAfterFirst = pol.mem.buffer.byteLength;
      for (let i = 0; i < 1000; i++) expect(pol.evaluate(input)[0].result.in.user).toBe('alice');
      expect(exports.opa_heap_ptr_get()).toBe(heapAfterFirst);
      expect(pol.mem.buffer.byteLength).toBe(memAfterFirst);
    }
  });

  it('lists only host builtins in builtins() and calls customBuiltins with JSON arguments', async () => {
    const b = new PolicyBuilder()
      .builtin('custom.greet', 2)
      .builtin('plus', 2)
      .builtin('custom.log', 1, false)
      .builtin('sprintf', 2);
    b.rule('t.g', [
      {
        stmts: [
          stmt('DotStmt', { source: local(0), key: b.str('name'), target: 3 }),
          stmt('MakeSetStmt', { target: 4 }),
          stmt('SetAddStmt', { value: b.str('s2'), set: 4 }),
          stmt('SetAddStmt', { value: b.str('s1'), set: 4 }),
          stmt('CallStmt', { func: 'custom.log', args: [local(3)], result: 9 }),
          stmt('CallStmt', { func: 'custom.greet', args: [local(3), local(4)], result: 5 }),
          stmt('MakeArrayStmt', { capacity: 1, target: 6 }),
          stmt('ArrayAppendStmt', { array: 6, value: local(3) }),
          stmt('CallStmt', { func: 'sprintf', args: [b.str('hi %s'), local(6)], result: 7 }),
          stmt('MakeArrayStmt', { capacity: 2, target: 2 }),
          stmt('ArrayAppendStmt', { array: 2, value: local(5) }),
          stmt('ArrayAppendStmt', { array: 2, value: local(7) }),
        ],
      },
      returnBlock(),
    ]);
    b.entrypoint('t/g', 't.g');
    const calls: unknown[][] = [];
    const logged: unknown[] = [];
    const custom = {
      'custom.greet': (name: unknown, tags: unknown) => {
        calls.push([name, tags]);
        return name === 'nobody' ? undefined : { hello: name, tags };
      },
      'custom.log': (x: unknown) => {
        logged.push(x);
      },
    };
    // sprintf is shadowed by opa-wasm's own JS version: the module lists it as guardian.sprintf, which
    // our host builtins register (OPA semantics).
    const p = await loadBoth(b.build(), {}, { ...createHostBuiltins(), ...custom });
    expect(evalBoth(p, { name: 'ann' })).toEqual([{ result: [{ hello: 'ann', tags: ['s1', 's2'] }, 'hi ann'] }]);
    expect(calls).toEqual([
      ['ann', ['s1', 's2']],
      ['ann', ['s1', 's2']],
    ]);
    expect(logged).toEqual(['ann', 'ann']);
    expect(evalBoth(p, { name: 'nobody' })).toEqual([]);

    const ex = exportsOf(p.fast);
    const text = readCString(p.fast, ex.opa_json_dump(ex.builtins()));
    // ids are indexes into static.builtin_funcs (sorted: custom.greet, custom.log, plus, sprintf)
    expect(JSON.parse(text)).toEqual({ 'custom.greet': 0, 'custom.log': 1, 'guardian.sprintf': 3 });
  });

  it('turns the array a set-returning host builtin hands back into a set', async () => {
    const b = new PolicyBuilder().builtin('custom.tags', 0, 'set').builtin('custom.list', 0);
    b.rule('t.tags', [
      {
        stmts: [
          stmt('CallStmt', { func: 'custom.tags', args: [], result: 3 }),
          stmt('CallStmt', { func: 'custom.list', args: [], result: 4 }),
          stmt('MakeSetStmt', { target: 5 }),
          stmt('SetAddStmt', { value: b.str('a'), set: 5 }),
          stmt('SetAddStmt', { value: b.str('b'), set: 5 }),
          stmt('MakeObjectStmt', { target: 2 }),
          stmt('ObjectInsertStmt', { key: b.str('tags'), value: local(3), object: 2 }),
          stmt('ObjectInsertStmt', { key: b.str('list'), value: local(4), object: 2 }),
        ],
      },
      {
        stmts: [
          stmt('EqualStmt', { a: local(3), b: local(5) }),
          stmt('ObjectInsertStmt', { key: b.str('tags_is_set'), value: bool(true), object: 2 }),
        ],
      },
      {
        stmts: [
          stmt('IsSetStmt', { source: local(4) }),
          stmt('ObjectInsertStmt', { key: b.str('list_is_set'), value: bool(true), object: 2 }),
        ],
      },
      returnBlock(),
    ]);
    b.entrypoint('t/tags', 't.tags');
    const custom = { 'custom.tags': () => ['b', 'a', 'b'], 'custom.list': () => ['b', 'a', 'b'] };
    const p = await loadBoth(b.build(), {}, custom);
    expect(evalBoth(p, {})).toEqual([{ result: { list: ['b', 'a', 'b'], tags: ['a', 'b'], tags_is_set: true } }]);
  });

  it('does not call a host builtin with an undefined argument (the call is undefined)', async () => {
    const b = new PolicyBuilder().builtin('custom.echo', 1);
    b.rule('t.e', [
      {
        stmts: [
          stmt('DotStmt', { source: local(0), key: b.str('x'), target: 3 }),
          stmt('AssignVarStmt', { source: local(0), target: 3 }),
          stmt('ResetLocalStmt', { target: 3 }),
          stmt('CallStmt', { func: 'custom.echo', args: [local(3)], result: 4 }),
          stmt('AssignVarOnceStmt', { source: local(4), target: 2 }),
        ],
      },
      {
        stmts: [
          stmt('IsUndefinedStmt', { source: 2 }),
          stmt('AssignVarOnceStmt', { source: b.str('undefined call'), target: 2 }),
        ],
      },
      returnBlock(),
    ]);
    b.entrypoint('t/e', 't.e');
    const calls: unknown[] = [];
    const p = await loadBoth(b.build(), {}, { 'custom.echo': (x: unknown) => (calls.push(x), x) });
    expect(evalBoth(p, { x: 1 })).toEqual([{ result: 'undefined call' }]);
    expect(calls).toEqual([]);
  });

  it('exports exactly the ABI 1.3 surface and imports only env.memory, opa_abort and used opa_builtinN', async () => {
    const b = new PolicyBuilder().builtin('custom.x', 1);
    b.rule('t.x', [{ stmts: [stmt('CallStmt', { func: 'custom.x', args: [local(0)], result: 2 })] }, returnBlock()]);
    b.entrypoint('t/x', 't.x');
    const { wasm } = await loadBoth(b.build(), {}, { 'custom.x': () => 1 });
    const mod = new Wasm.Module(wasm);
    const exports = Wasm.Module.exports(mod)
      .map((e) => `${e.kind}:${e.name}`)
      .sort();
    expect(exports).toEqual(
      [
        'function:builtins',
        'function:entrypoints',
        'function:eval',
        'function:opa_eval',
        'function:opa_eval_ctx_get_result',
        'function:opa_eval_ctx_new',
        'function:opa_eval_ctx_set_data',
        'function:opa_eval_ctx_set_entrypoint',
        'function:opa_eval_ctx_set_input',
        'function:opa_free',
        'function:opa_heap_blocks_restore',
        'function:opa_heap_blocks_stash',
        'function:opa_heap_ptr_get',
        'function:opa_heap_ptr_set',
        'function:opa_heap_stash_clear',
        'function:opa_json_dump',
        'function:opa_json_parse',
        'function:opa_malloc',
        'function:opa_value_add_path',
        'function:opa_value_dump',
        'function:opa_value_free',
        'function:opa_value_parse',
        'function:opa_value_remove_path',
        'global:opa_wasm_abi_minor_version',
        'global:opa_wasm_abi_version',
        'memory:memory',
      ].sort(),
    );
    const imports = Wasm.Module.imports(mod)
      .map((i) => `${i.module}.${i.name}`)
      .sort();
    expect(imports).toEqual(['env.memory', 'env.opa_abort', 'env.opa_builtin1']);
    const pol = await loadPolicy(wasm, undefined, { 'custom.x': () => 1 });
    const g = exportsOf(pol);
    expect([g.opa_wasm_abi_version.value, g.opa_wasm_abi_minor_version.value]).toEqual([1, 3]);
  });
});

describe('malformed plans', () => {
  async function linkError(mutate: (b: PolicyBuilder) => void): Promise<unknown> {
    const b = new PolicyBuilder();
    mutate(b);
    return linkPolicyWasm(b.build()).then(
      () => undefined,
      (e: unknown) => e,
    );
  }

  it('reject unknown functions, bad operands, deep breaks and over-long host calls with WasmLinkError naming the func', async () => {
    const cases: Array<[(b: PolicyBuilder) => void, RegExp]> = [
      [
        (b) => b.rule('t.x', [{ stmts: [stmt('CallStmt', { func: 'no.such', args: [], result: 3 })] }, returnBlock()]),
        /IR func "g0\.data\.t\.x": call to unknown function no\.such/,
      ],
      [
        (b) =>
          b.rule('t.x', [
            { stmts: [stmt('AssignVarStmt', { source: { type: 'string_index', value: 99 }, target: 3 })] },
            returnBlock(),
          ]),
        /string_index 99 out of range/,
      ],
      [
        (b) => b.rule('t.x', [{ stmts: [stmt('BreakStmt', { index: 5 })] }, returnBlock()]),
        /BreakStmt index 5 exceeds block nesting/,
      ],
      [
        (b) =>
          b.builtin('custom.five', 5).rule('t.x', [
            {
              stmts: [
                stmt('CallStmt', {
                  func: 'custom.five',
                  args: [local(0), local(0), local(0), local(0), local(0)],
                  result: 3,
                }),
              ],
            },
            returnBlock(),
          ]),
        /too many built-in call arguments: custom\.five/,
      ],
      [
        (b) => b.rule('t.x', [{ stmts: [{ type: 'FancyStmt', stmt: {} } as never] }, returnBlock()]),
        /unsupported IR statement FancyStmt/,
      ],
      [(b) => b.rule('t.x', [{ stmts: [{ type: 'DotStmt' } as never] }, returnBlock()]), /malformed statement/],
      [
        (b) =>
          b.rule('t.x', [
            { stmts: [stmt('MakeNumberRefStmt', { index: b.strIndex('12abc'), target: 3 })] },
            returnBlock(),
          ]),
        /invalid number literal "12abc"/,
      ],
      [
        (b) =>
          b.rule('t.x', [
            { stmts: [stmt('CallStmt', { func: 'g0.data.t.x', args: [local(0)], result: 3 })] },
            returnBlock(),
          ]),
        /call to g0\.data\.t\.x with 1 arguments, expected 2/,
      ],
    ];
    for (const [mutate, re] of cases) {
      const err = await linkError(mutate);
      expect(err, String(re)).toBeInstanceOf(WasmLinkError);
      expect((err as Error).message).toMatch(re);
    }
  });
});
