// A suite whose tests replace the same rule of a large library (as linters' suites mock their config rule in
// hundreds of tests) compiles and runs: the planner plans the library once per distinct replacement, not once
// per test. Expected values follow Rego's semantics for the generated rules.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { runPolicyTests } from '../../../src/rego/tester/index.ts';

const RULES = 80;
const TESTS = 300;
const SUMS = [4, 5]; // x + y for xs [1, 2] and ys [3]

/** count(r_i) summed over the rules for a limit: r_i holds the pairs whose sum exceeds limit + i. */
function expectedTotal(limit: number): number {
  let total = 0;
  for (let i = 0; i < RULES; i++) total += SUMS.filter((s) => s > limit + i).length;
  return total;
}

describe('tests that mock the same rule of a large library', () => {
  let dir: string;
  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), 'shared-mocks-'));
    const rules = Array.from(
      { length: RULES },
      (_, i) => `r${i} contains [x, y] if {
	some x in input.xs
	some y in input.ys
	x + y > config.limit + ${i}
	not config.skip[x]
}`,
    );
    const names = Array.from({ length: RULES }, (_, i) => `r${i}`).join(', ');
    writeFileSync(
      join(dir, 'lib.rego'),
      `package lib

config := {"limit": 0, "skip": {}}

${rules.join('\n\n')}

total := sum([count(r) | some r in [${names}]])
`,
    );
    const tests = Array.from(
      { length: TESTS },
      (_, k) => `test_limit_${k} if {
	lib.total == ${expectedTotal((k % 9) - 5)} with lib.config as {"limit": ${(k % 9) - 5}, "skip": {}} with input as {"xs": [1, 2], "ys": [3]}
}`,
    );
    writeFileSync(join(dir, 'lib_test.rego'), `package lib_test\n\nimport data.lib\n\n${tests.join('\n\n')}\n`);
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('compiles within the plan bound and every test sees its own mocked value', async () => {
    const r = await runPolicyTests({ paths: [dir] });
    expect(r.results.filter((x) => x.status !== 'pass').map((x) => x.name)).toEqual([]);
    expect(r.passed).toBe(TESTS);
  }, 120_000);
});
