// Wasm backend: link time of a generated 300-rule IR plan (cold and warm, plain and binaryen-optimised),
// module size, and opa-wasm evaluate() p50/p99 on both host paths.
// Run: `npm run bench compiler-wasm` (or `npx tsx bench/compiler-wasm.ts`). BENCH_ITERATIONS (default 5000).
import { performance } from 'node:perf_hooks';
import { loadPolicy, type LoadedPolicy } from '@open-policy-agent/opa-wasm';
import { linkPolicyWasm } from '../src/rego/wasm/index.ts';
import type { Block, Func, Operand, Policy, Stmt } from '../src/rego/ir/types.ts';

const RULES = 300;
const iterations = Number(process.env.BENCH_ITERATIONS ?? 5000);

const st = <T extends Stmt['type']>(type: T, stmt: Extract<Stmt, { type: T }>['stmt']): Stmt =>
  ({ type, stmt }) as Stmt;
const loc = (value: number): Operand => ({ type: 'local', value });

/**
 * rule_i if { some r in input.roles; r == "role-<i>"; input.action == ("read" | "write" by parity) }
 * allowed contains i if rule_i         (the plan collects every defined rule)
 */
function generatePlan(): Policy {
  const strings = ['result', 'roles', 'action', 'read', 'write'];
  const s = (v: string): Operand => {
    let i = strings.indexOf(v);
    if (i < 0) i = strings.push(v) - 1;
    return { type: 'string_index', value: i };
  };
  const funcs: Func[] = [];
  for (let i = 0; i < RULES; i++) {
    const body: Block = {
      stmts: [
        st('DotStmt', { source: loc(0), key: s('roles'), target: 3 }),
        st('ScanStmt', {
          source: 3,
          key: 4,
          value: 5,
          block: {
            stmts: [
              st('EqualStmt', { a: loc(5), b: s(`role-${i}`) }),
              st('DotStmt', { source: loc(0), key: s('action'), target: 6 }),
              st('EqualStmt', { a: loc(6), b: s(i % 2 === 0 ? 'read' : 'write') }),
              st('AssignVarOnceStmt', {
                source: { type: 'bool', value: true },
                target: 2,
                file: 0,
                row: i + 1,
                col: 1,
              }),
            ],
          },
        }),
      ],
    };
    funcs.push({
      name: `g0.data.bench.rule_${i}`,
      params: [0, 1],
      return: 2,
      path: ['g0', 'bench', `rule_${i}`],
      blocks: [body, { stmts: [st('ReturnLocalStmt', { source: 2 })] }],
    });
  }
  const collect: Stmt[] = [st('MakeSetStmt', { target: 2 })];
  const blocks: Block[] = [{ stmts: collect }];
  for (let i = 0; i < RULES; i++) {
    blocks.push({
      stmts: [
        st('CallStmt', { func: `g0.data.bench.rule_${i}`, args: [loc(0), loc(1)], result: 3 }),
        st('SetAddStmt', { value: s(`rule_${i}`), set: 2 }),
      ],
    });
  }
  blocks.push({
    stmts: [
      st('MakeObjectStmt', { target: 4 }),
      st('ObjectInsertStmt', { key: s('result'), value: loc(2), object: 4 }),
      st('ResultSetAddStmt', { value: 4 }),
    ],
  });
  return {
    static: { strings: strings.map((value) => ({ value })), files: [{ value: 'bench.rego' }], builtin_funcs: [] },
    plans: { plans: [{ name: 'bench/allowed', blocks }] },
    funcs: { funcs },
  };
}

function percentile(sorted: number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))];
}

async function timeLink(
  plan: Policy,
  optimize: boolean,
  runs: number,
): Promise<{ first: number; warm: number; bytes: number }> {
  let t = performance.now();
  const wasm = await linkPolicyWasm(plan, { optimize });
  const first = performance.now() - t;
  t = performance.now();
  for (let i = 0; i < runs; i++) await linkPolicyWasm(plan, { optimize });
  return { first, warm: (performance.now() - t) / runs, bytes: wasm.length };
}

function timeEval(policy: LoadedPolicy, input: unknown): { p50: number; p99: number } {
  for (let i = 0; i < 200; i++) policy.evaluate(input);
  const samples: number[] = [];
  for (let i = 0; i < iterations; i++) {
    const t = performance.now();
    policy.evaluate(input);
    samples.push((performance.now() - t) * 1000);
  }
  samples.sort((a, b) => a - b);
  return { p50: percentile(samples, 50), p99: percentile(samples, 99) };
}

const plan = generatePlan();
const plain = await timeLink(plan, false, 5);
const optimized = await timeLink(plan, true, 2);
console.log(`plan: ${RULES} rules, ${JSON.stringify(plan).length} bytes of IR JSON`);
console.log(
  `link (plain):     first ${plain.first.toFixed(0)} ms (includes runtime load), warm ${plain.warm.toFixed(1)} ms, module ${plain.bytes} bytes`,
);
console.log(
  `link (optimize):  first ${optimized.first.toFixed(0)} ms, warm ${optimized.warm.toFixed(1)} ms, module ${optimized.bytes} bytes`,
);

const input = { roles: ['role-7', 'role-42', 'role-299', 'other'], action: 'write', user: 'alice' };
for (const [label, optimize] of [
  ['plain', false],
  ['optimize', true],
] as const) {
  const wasm = await linkPolicyWasm(plan, { optimize });
  const fast = await loadPolicy(wasm);
  const slow = await loadPolicy(wasm);
  (slow as unknown as { minorVersion: number }).minorVersion = 1;
  const expected = JSON.stringify(fast.evaluate(input));
  if (JSON.stringify(slow.evaluate(input)) !== expected) throw new Error('fast and slow paths disagree');
  const f = timeEval(fast, input);
  const s = timeEval(slow, input);
  console.log(
    `evaluate (${label}, ${iterations} runs, result ${expected}): fast path p50 ${f.p50.toFixed(1)} µs p99 ${f.p99.toFixed(1)} µs; ` +
      `slow path p50 ${s.p50.toFixed(1)} µs p99 ${s.p99.toFixed(1)} µs`,
  );
}

// A small RBAC-style rule (allow if "admin" in input.user.roles) for comparison with OPA-built modules.
const small: Policy = {
  static: {
    strings: ['result', 'user', 'roles', 'admin'].map((value) => ({ value })),
    builtin_funcs: [
      {
        name: 'internal.member_2',
        decl: { type: 'function', args: [{ type: 'any' }, { type: 'any' }], result: { type: 'boolean' } },
      },
    ],
    files: [{ value: 'rbac.rego' }],
  },
  plans: {
    plans: [
      {
        name: 'rbac/allow',
        blocks: [
          {
            stmts: [
              st('CallStmt', { func: 'g0.data.rbac.allow', args: [loc(0), loc(1)], result: 2 }),
              st('MakeObjectStmt', { target: 3 }),
              st('ObjectInsertStmt', { key: { type: 'string_index', value: 0 }, value: loc(2), object: 3 }),
              st('ResultSetAddStmt', { value: 3 }),
            ],
          },
        ],
      },
    ],
  },
  funcs: {
    funcs: [
      {
        name: 'g0.data.rbac.allow',
        params: [0, 1],
        return: 2,
        path: ['g0', 'rbac', 'allow'],
        blocks: [
          {
            stmts: [
              st('DotStmt', { source: loc(0), key: { type: 'string_index', value: 1 }, target: 3 }),
              st('DotStmt', { source: loc(3), key: { type: 'string_index', value: 2 }, target: 4 }),
              st('CallStmt', {
                func: 'internal.member_2',
                args: [{ type: 'string_index', value: 3 }, loc(4)],
                result: 5,
              }),
              st('NotEqualStmt', { a: loc(5), b: { type: 'bool', value: false } }),
              st('AssignVarOnceStmt', { source: { type: 'bool', value: true }, target: 2 }),
            ],
          },
          {
            stmts: [
              st('IsUndefinedStmt', { source: 2 }),
              st('AssignVarOnceStmt', { source: { type: 'bool', value: false }, target: 2 }),
            ],
          },
          { stmts: [st('ReturnLocalStmt', { source: 2 })] },
        ],
      },
    ],
  },
};
const smallWasm = await linkPolicyWasm(small);
const rbac = await loadPolicy(smallWasm);
const rbacInput = { user: { name: 'alice', roles: ['dev', 'admin'] } };
const r = timeEval(rbac, rbacInput);
console.log(
  `small RBAC rule (${smallWasm.length} bytes, result ${JSON.stringify(rbac.evaluate(rbacInput))}): evaluate p50 ${r.p50.toFixed(1)} µs p99 ${r.p99.toFixed(1)} µs`,
);
