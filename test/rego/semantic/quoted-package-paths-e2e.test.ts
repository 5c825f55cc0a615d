// Packages whose path has string elements that are not identifiers — `package lib["kind:1.0"].util`, as
// policy libraries name versioned system types — hold functions that are called, mocked and imported like
// any other. A call operator's name is printed as OPA prints a ref (`data.lib["kind:1.0"].util.f`) and read
// back by its elements, so a `.` or `:` inside an element no longer splits it.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { dataNameKey, operatorName, refName, refNameParts } from '../../../src/rego/semantic/terms.ts';
import { runPolicyTests, type PolicyTestReport } from '../../../src/rego/tester/index.ts';
import { compileErrors } from './fixtures/wasm-module.ts';

describe('call operator names', () => {
  it('print string elements that are not identifiers in brackets and read back to the same elements', () => {
    const parts = ['data', 'lib', 'kind:1.0', 'a.b', 'with "quote"', 'x', 'ünï'];
    const name = refName(parts);
    expect(name).toBe('data.lib["kind:1.0"]["a.b"]["with \\"quote\\""].x["ünï"]');
    expect(refNameParts(name)).toEqual(parts);
    expect(dataNameKey(name)).toBe('lib/kind:1.0/a.b/with "quote"/x/ünï');
    expect(refNameParts('array.concat')).toEqual(['array', 'concat']);
    expect(
      operatorName({
        type: 'ref',
        value: [
          { type: 'var', value: 'data' },
          { type: 'string', value: 'p-q' },
          { type: 'string', value: 'f' },
        ],
      }),
    ).toBe('data["p-q"].f');
  });
});

describe('functions in a package with a quoted path element', () => {
  let dir: string;
  let report: PolicyTestReport;
  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'quoted-pkg-'));
    writeFileSync(
      join(dir, 'lib.rego'),
      `package lib["kind:1.0"].util

inc(x) := x + 1

twice(x) := inc(inc(x))
`,
    );
    writeFileSync(
      join(dir, 'lib_test.rego'),
      `package lib["kind:1.0"].util_test

import data.lib["kind:1.0"].util

check(v) if v == 3

test_call if util.twice(1) == 3

test_local_call if check(util.twice(1))

test_mock if util.twice(1) == 10 with util.inc as 10

test_mock_with_function if util.twice(1) == 5 with util.inc as plus_two

plus_two(x) := x + 2
`,
    );
    report = await runPolicyTests({ paths: [dir] });
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('resolve, call and mock as in any package; tests are named as OPA prints them', () => {
    expect(report.results.map((r) => [r.name, r.status, r.message])).toEqual([
      ['data.lib["kind:1.0"].util_test.test_call', 'pass', undefined],
      ['data.lib["kind:1.0"].util_test.test_local_call', 'pass', undefined],
      ['data.lib["kind:1.0"].util_test.test_mock', 'pass', undefined],
      ['data.lib["kind:1.0"].util_test.test_mock_with_function', 'pass', undefined],
    ]);
  });

  it('a compile error names the function as OPA prints it', () => {
    const errors = compileErrors('package lib["kind:1.0"].util\n\ninc(x) := x + 1\n\np := inc(1, 2, 3)\n');
    expect(errors).toEqual(['t.rego:5:6: rego_type_error: data.lib["kind:1.0"].util.inc: arity mismatch']);
  });
});
