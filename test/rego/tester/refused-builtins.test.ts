// Builtins the Guardian refuses in the authoring tools (docs/policy-authoring.md, "Refused builtins"): through the
// test runner a module calling them compiles, `with` replaces them as OPA's docs on `with` describe (a value, a
// function), and a call reached unmocked errors that test with the refusal at its call site while the others run;
// the build path still refuses the same module at compile time. Fixture: test/fixtures/rego/refused-builtins.
import { describe, expect, it } from 'vitest';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { capabilitiesDocument } from '../../../src/rego/builtins/capabilities.ts';
import {
  compileBundle,
  evaluateQuery,
  readCapabilities,
  RegoErrors,
  withCustomBuiltins,
} from '../../../src/rego/index.ts';
import { checkPolicies } from '../../../src/rego/lint/index.ts';
import { PolicyTestSetupError, runPolicyTests, type PolicyTestResult } from '../../../src/rego/tester/index.ts';

const FIXTURE = fileURLToPath(new URL('../../fixtures/rego/refused-builtins/', import.meta.url));
const LIBRARY = join(FIXTURE, 'library');
const LOOKUP = join(LIBRARY, 'lookup.rego');
const UNMOCKED = join(FIXTURE, 'unmocked_test.rego');
const sources = [
  { file: 'lookup.rego', text: readFileSync(LOOKUP, 'utf8') },
  { file: 'lookup_test.rego', text: readFileSync(join(LIBRARY, 'lookup_test.rego'), 'utf8') },
];

const outcome = (r: PolicyTestResult): [string, string, string | undefined] => [r.name, r.status, r.message];

const REFUSAL = {
  http: 'http.send: network I/O during policy evaluation is not allowed: decisions must be replayable from the audit log (replace it in tests with `with http.send as ...`)',
  dns: 'net.lookup_ip_addr: DNS lookups during policy evaluation are not allowed: decisions must be replayable from the audit log (replace it in tests with `with net.lookup_ip_addr as ...`)',
  runtime:
    'opa.runtime: the Guardian does not expose host runtime information to policies (replace it in tests with `with opa.runtime as ...`)',
};

describe('guardian policy test: refused builtins', () => {
  it('a library that mocks them with a value or a function, or never reaches them, passes', async () => {
    const report = await runPolicyTests({ paths: [LIBRARY] });
    expect(report.results.map(outcome)).toEqual([
      ['data.lookup_test.test_allowed_with_a_value', 'pass', undefined],
      ['data.lookup_test.test_allowed_with_a_function', 'pass', undefined],
      ['data.lookup_test.test_greeting_needs_no_network', 'pass', undefined],
      ['data.lookup_test.test_resolves_with_a_value', 'pass', undefined],
      ['data.lookup_test.test_runtime_with_a_value', 'pass', undefined],
    ]);
    expect([report.passed, report.failed]).toEqual([5, 0]);
  }, 120_000);

  it('an unmocked call errors its test with the refusal at the call site, `not` included; the others run', async () => {
    const report = await runPolicyTests({ paths: [LIBRARY, UNMOCKED] });
    const unmocked = report.results.filter((r) => r.name.startsWith('data.lookup_unmocked_test.'));
    expect(unmocked.map(outcome)).toEqual([
      ['data.lookup_unmocked_test.test_allowed_unmocked', 'error', `${LOOKUP}:9: eval_builtin_error: ${REFUSAL.http}`],
      ['data.lookup_unmocked_test.test_denied_unmocked', 'error', `${LOOKUP}:9: eval_builtin_error: ${REFUSAL.http}`],
      ['data.lookup_unmocked_test.test_resolves_unmocked', 'error', `${LOOKUP}:15: eval_builtin_error: ${REFUSAL.dns}`],
      [
        'data.lookup_unmocked_test.test_runtime_unmocked',
        'error',
        `${LOOKUP}:17: eval_builtin_error: ${REFUSAL.runtime}`,
      ],
      ['data.lookup_unmocked_test.test_greeting_alongside', 'pass', undefined],
    ]);
    // The mocked tests of the library still pass in the same run (one module, re-instantiated after each halt).
    expect([report.passed, report.failed, report.errored]).toEqual([6, 0, 4]);
  }, 120_000);

  it('under --capabilities only the refused builtins the document lists compile; the others are undefined, as OPA', async () => {
    const ours = capabilitiesDocument();
    // The decl of a listed refused builtin is read for shape only: the toolchain compiles against OPA's own.
    const listing = (names: string[]) =>
      readCapabilities({
        ...ours,
        builtins: [
          ...ours.builtins,
          ...names.map((name) => ({
            name,
            decl: { type: 'function', args: [{ type: 'any' }], result: { type: 'any' } },
          })),
        ],
      });
    const all = await runPolicyTests({
      paths: [LIBRARY],
      capabilities: listing(['http.send', 'net.lookup_ip_addr', 'opa.runtime']),
    });
    expect([all.passed, all.failed]).toEqual([5, 0]);

    const some = await runPolicyTests({ paths: [LIBRARY], capabilities: listing(['http.send']) }).catch(
      (e: unknown) => e,
    );
    expect(some).toBeInstanceOf(PolicyTestSetupError);
    expect((some as PolicyTestSetupError).kind).toBe('compile');
    // OPA checks calls against the document first: an unlisted builtin is undefined, whatever the Guardian thinks.
    expect((some as PolicyTestSetupError).message.split('\n')).toEqual([
      `${LOOKUP}:15:25: rego_type_error: undefined function net.lookup_ip_addr`,
      `${LOOKUP}:17:16: rego_type_error: undefined function opa.runtime`,
    ]);
    // The build refuses the listed one by name (the Guardian would never run it) and the unlisted ones as OPA.
    const built = await compileBundle({
      sources,
      entrypoints: ['lookup/greeting'],
      capabilities: listing(['http.send']),
    }).catch((e: unknown) => e);
    expect((built as RegoErrors).errors.map((e) => e.format())).toEqual([
      'lookup.rego:9:10: rego_compile_error: http.send is not allowed in Guardian policies: network I/O during policy evaluation is not allowed: decisions must be replayable from the audit log',
      'lookup.rego:15:25: rego_type_error: undefined function net.lookup_ip_addr',
      'lookup.rego:17:16: rego_type_error: undefined function opa.runtime',
    ]);
  }, 120_000);

  it('a module the build refuses: compileBundle names every refused call', async () => {
    const err = await compileBundle({ sources, entrypoints: ['lookup/greeting'] }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(RegoErrors);
    expect((err as RegoErrors).errors.map((e) => e.format())).toEqual([
      'lookup.rego:9:10: rego_compile_error: http.send is not allowed in Guardian policies: network I/O during policy evaluation is not allowed: decisions must be replayable from the audit log',
      'lookup.rego:15:25: rego_compile_error: net.lookup_ip_addr is not allowed in Guardian policies: DNS lookups during policy evaluation are not allowed: decisions must be replayable from the audit log',
      'lookup.rego:17:16: rego_compile_error: opa.runtime is not allowed in Guardian policies: the Guardian does not expose host runtime information to policies',
    ]);
  }, 120_000);

  it('evaluateQuery with refusedBuiltins: evaluation-error: a call halts, strict or not; a mocked one answers', async () => {
    for (const strict of [false, true]) {
      const halted = await evaluateQuery({
        sources,
        query: 'x := data.lookup.allowed("alice")',
        refusedBuiltins: 'evaluation-error',
        builtinContext: { strict },
      }).catch((e: unknown) => e);
      expect((halted as Error).message).toBe(`lookup.rego:9: eval_builtin_error: ${REFUSAL.http}`);
    }
    const mocked = await evaluateQuery({
      sources,
      query: 'x := data.lookup.allowed("alice") with http.send as {"status_code": 200, "body": {"allowed": true}}',
      refusedBuiltins: 'evaluation-error',
    });
    expect(mocked).toEqual([{ x: true }]);
    // Without the option the query API refuses the module as the build does.
    await expect(evaluateQuery({ sources, query: 'x := data.lookup.greeting("a")' })).rejects.toThrow(
      /http\.send is not allowed in Guardian policies/,
    );
  }, 120_000);

  it('policy check compiles the module and warns once per refused call', () => {
    const result = checkPolicies(sources);
    expect(result.errors).toEqual([]);
    expect(result.findings.filter((f) => f.code === 'rego_lint_refused_builtin').map((f) => f.message)).toEqual([
      'http.send is refused by `guardian policy build` and the Guardian: network I/O during policy evaluation is not allowed: decisions must be replayable from the audit log; tests can replace it with `with http.send as ...`',
      'net.lookup_ip_addr is refused by `guardian policy build` and the Guardian: DNS lookups during policy evaluation are not allowed: decisions must be replayable from the audit log; tests can replace it with `with net.lookup_ip_addr as ...`',
      'opa.runtime is refused by `guardian policy build` and the Guardian: the Guardian does not expose host runtime information to policies; tests can replace it with `with opa.runtime as ...`',
    ]);
  });

  it('a host cannot supply one as a custom builtin', () => {
    expect(() => withCustomBuiltins({}, { 'http.send': () => ({ status_code: 200 }) })).toThrow(
      'custom builtin http.send: the Guardian refuses http.send: network I/O during policy evaluation is not allowed: decisions must be replayable from the audit log',
    );
  });
});
