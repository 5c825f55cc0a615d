// The test rules `guardian policy test` finds and how it judges them, as OPA's test runner does: a test name
// defined more than once in a package runs once per definition (`test_x#01`, …); `test_x[case]` rules are
// tests whose every case must be true, a case that got its name and then failed included; custom builtins
// declared in a capabilities document are called on the host.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { capabilitiesDocument, readCapabilities } from '../../../src/rego/builtins/capabilities.ts';
import { runPolicyTests, type PolicyTestReport } from '../../../src/rego/tester/index.ts';

let dir: string;
beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'opa-runner-rules-'));
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

function write(name: string, text: string): string {
  const file = join(dir, name);
  writeFileSync(file, text);
  return file;
}

function outcomes(report: PolicyTestReport): Record<string, string> {
  return Object.fromEntries(report.results.map((r) => [r.name, r.status]));
}

describe('duplicate test names', () => {
  it('each definition is its own test, renamed from the second on; a failing one is not hidden', {
    timeout: 120_000,
  }, async () => {
    const v1 = write(
      'dup_test.rego',
      `package dup

limit := 3

test_limit if limit == 3

test_limit if limit == 4

test_limit if limit > 0

test_other if true
`,
    );
    const v0 = write(
      'dup_v0_test.rego',
      `package dupzero

test_legacy {
	1 == 1
}

test_legacy {
	1 == 2
}
`,
    );
    const report = await runPolicyTests({ paths: [v1] });
    expect(outcomes(report)).toEqual({
      'data.dup.test_limit': 'pass',
      'data.dup.test_limit#01': 'fail',
      'data.dup.test_limit#02': 'pass',
      'data.dup.test_other': 'pass',
    });
    expect(report.results.find((r) => r.name === 'data.dup.test_limit#01')?.row).toBe(7);
    expect([report.passed, report.failed]).toEqual([3, 1]);
    const legacy = await runPolicyTests({ paths: [v0], v0Compatible: true });
    expect(outcomes(legacy)).toEqual({
      'data.dupzero.test_legacy': 'pass',
      'data.dupzero.test_legacy#01': 'fail',
    });
  });

  it('the same name in two packages is two tests, not a duplicate', { timeout: 120_000 }, async () => {
    const a = write('pkg_a_test.rego', 'package pa\n\ntest_same if true\n');
    const b = write('pkg_b_test.rego', 'package pb\n\ntest_same if true\n');
    const report = await runPolicyTests({ paths: [a, b] });
    expect(outcomes(report)).toEqual({ 'data.pa.test_same': 'pass', 'data.pb.test_same': 'pass' });
  });
});

describe('test rules with cases', () => {
  it('test_x[case] passes when every case is true and names the cases that are not', {
    timeout: 120_000,
  }, async () => {
    const file = write(
      'cases_test.rego',
      `package cases

double(n) := n * 2

test_double[name] if {
	some name, c in {"one": {"in": 1, "want": 2}, "two": {"in": 2, "want": 4}}
	double(c.in) == c.want
}

test_double_wrong[name] := ok if {
	some name, c in {"right": {"in": 3, "want": 6}, "wrong": {"in": 3, "want": 7}}
	ok := double(c.in) == c.want
}

test_nested[group][name] := ok if {
	some group, names in {"small": {"a": 1}, "large": {"b": 100}}
	some name, n in names
	ok := double(n) == n + n
}

test_set contains x if {
	some x in [1, 2]
}

test_dropped[name] if {
	some name, n in {"even": 2, "odd": 3}
	n % 2 == 0
}

test_bound_late[name] if {
	some n in [1, 2, 3]
	n > 1
	name := sprintf("n%d", [n])
}
`,
    );
    const report = await runPolicyTests({ paths: [file] });
    expect(outcomes(report)).toEqual({
      'data.cases.test_double': 'pass',
      'data.cases.test_double_wrong': 'fail',
      'data.cases.test_nested': 'pass',
      // A partial set is not a boolean: OPA fails it.
      'data.cases.test_set': 'fail',
      // "odd" got its name, then failed: a failed case, not a missing one.
      'data.cases.test_dropped': 'fail',
      // 1 failed before its name was bound: no case at all.
      'data.cases.test_bound_late': 'pass',
    });
    const failedCases = (name: string) =>
      [...(report.results.find((r) => r.name === name)?.subResults ?? new Map()).values()]
        .filter((c) => c.fail)
        .map((c) => c.name);
    expect(failedCases('data.cases.test_double_wrong')).toEqual(['wrong']);
    expect(failedCases('data.cases.test_dropped')).toEqual(['odd']);
  });
});

describe('custom builtins', () => {
  it('a builtin declared in the capabilities is implemented by the given function', {
    timeout: 120_000,
  }, async () => {
    const file = write(
      'custom_test.rego',
      `package custom

test_reverse if acme.reverse("abc") == "cba"

test_reverse_wrong if acme.reverse("abc") == "abc"
`,
    );
    const ours = capabilitiesDocument();
    const capabilities = readCapabilities({
      ...ours,
      builtins: [
        ...ours.builtins,
        { name: 'acme.reverse', decl: { type: 'function', args: [{ type: 'string' }], result: { type: 'string' } } },
      ],
    });
    const report = await runPolicyTests({
      paths: [file],
      capabilities,
      customBuiltins: { 'acme.reverse': (s: string) => [...s].reverse().join('') },
    });
    expect(outcomes(report)).toEqual({
      'data.custom.test_reverse': 'pass',
      'data.custom.test_reverse_wrong': 'fail',
    });
  });
});
