// `guardian policy test`: like `opa test`. Discovers `test_*` rules (and `todo_test_*`, reported as skipped)
// in every .rego file under the given paths, compiles the whole set once through our compiler with one
// entrypoint per test rule, and evaluates each through opa-wasm with the data files found alongside (OPA's
// loader rules: src/rego/bundle/loader.ts).
// A test passes when its rule evaluates to `true` (a `test_x[case]` rule: when every case is `true`); undefined,
// any other value or a runtime error fails it (OPA's tester.Runner).
import { parseModule } from '../ast/index.ts';
import type { Module, Rule, Term } from '../ast/types.ts';
import { compileModules } from '../semantic/index.ts';
import { planEntrypoints } from '../planner/index.ts';
import { linkPolicyWasm } from '../wasm/index.ts';
import { IgnorePatternError, LoaderError, loadPaths } from '../bundle/loader.ts';
import { RegoError, RegoErrors } from '../errors.ts';
import type { Capabilities } from '../builtins/capabilities.ts';
import type { JsonValue as Json } from '../builtins/index.ts';
import { CoverageProbes, type CoverageReport, instrumentForCoverage } from './coverage.ts';
import { createTestEvaluator, TestEvaluationError, type HostBuiltinTable } from './evaluator.ts';

export type TestStatus = 'pass' | 'fail' | 'error' | 'skip';

export interface PolicyTestResult {
  /** `data.<package>.<rule>`. */
  name: string;
  /** Entrypoint form `<package path>/<rule>`. */
  entrypoint: string;
  file: string;
  row: number;
  status: TestStatus;
  durationMs: number;
  /** Why it failed: the value it produced, or the evaluation error. */
  message?: string;
}

export interface PolicyTestReport {
  results: PolicyTestResult[];
  passed: number;
  failed: number;
  skipped: number;
  /** Wall time of parse + compile + link. */
  compileMs: number;
  /** With `coverage`: OPA's coverage report of the modules. */
  coverage?: CoverageReport;
}

export interface PolicyTestOptions {
  /** Files or directories, loaded with OPA's loader rules (every .rego, .json, .yaml/.yml below them). */
  paths: string[];
  /** `--ignore` patterns: names skipped below the paths. */
  ignore?: string[];
  /** Read the paths as bundles (OPA's `--bundle`). */
  asBundle?: boolean;
  /** Only tests whose full name (`data.pkg.test_x`) matches run. */
  run?: RegExp;
  /** Per-test evaluation bound (default 10 s). */
  timeoutMs?: number;
  /** Host builtins (default: the toolchain's builtin library, src/rego/builtins). */
  hostBuiltins?: HostBuiltinTable;
  /**
   * The builtins policies may call, custom ones declared with their types (`readCapabilities`, as
   * `opa test --capabilities`); default: all of the toolchain's.
   */
  capabilities?: Capabilities;
  /** JavaScript implementations of the custom builtins (opa-wasm `customBuiltins`), added to the host builtins. */
  customBuiltins?: Readonly<Record<string, unknown>>;
  /** Read modules as Rego v0 (a module importing rego.v1 stays v1). */
  v0Compatible?: boolean;
  /** Instrument the modules and report line coverage (`report.coverage`). */
  coverage?: boolean;
}

/** The sources could not be read, parsed or compiled; `errors` carry file:row:col. */
export class PolicyTestSetupError extends Error {
  constructor(
    message: string,
    readonly kind: 'usage' | 'compile',
  ) {
    super(message);
    this.name = 'PolicyTestSetupError';
  }
}

interface SourceSet {
  modules: { file: string; text: string; regoVersion?: 0 | 1 }[];
  data: Json;
}

/** OPA's loader rules (src/rego/bundle/loader.ts); a loading error is a usage error. */
function collect(options: PolicyTestOptions): SourceSet {
  try {
    const loaded = loadPaths(options.paths, {
      ignore: options.ignore ?? [],
      asBundle: options.asBundle === true,
      regoVersion: options.v0Compatible ? 0 : 1,
    });
    return {
      modules: loaded.modules.map((m) => ({
        file: m.path,
        text: m.text,
        ...(m.regoVersion !== undefined ? { regoVersion: m.regoVersion } : {}),
      })),
      data: loaded.data as Json,
    };
  } catch (err) {
    if (err instanceof LoaderError || err instanceof IgnorePatternError)
      throw new PolicyTestSetupError(err.message, 'usage');
    if (err instanceof RegoErrors) throw new PolicyTestSetupError(formatRegoErrors(err), 'compile');
    throw err;
  }
}

function termString(t: Term): string | undefined {
  const v = (t as { type: string; value: unknown }).value;
  return typeof v === 'string' ? v : undefined;
}

function packagePath(m: Module): string[] {
  return m.package.path.slice(1).map((t) => termString(t) ?? '?');
}

interface DiscoveredTest {
  name: string;
  entrypoint: string;
  file: string;
  row: number;
  todo: boolean;
  /** `test_x[case] if …` (a partial object): each case is a sub-result, all must be true (OPA's sub results). */
  cases: boolean;
}

const TEST_PREFIX = 'test_';
const SKIP_TEST_PREFIX = 'todo_test_';

/**
 * Where a rule's head names a test, as OPA's runner finds it: the first element of the head reference's ground
 * prefix whose name starts with `test_` or `todo_test_` (so `test_x[case]` is the test `test_x`). Functions are
 * not tests.
 */
function testHead(rule: Rule): { index: number; name: string } | undefined {
  if (rule.head.args && rule.head.args.length > 0) return undefined;
  const ref = rule.head.reference;
  for (let i = 0; i < ref.length; i++) {
    const t = ref[i];
    if (!(i === 0 ? t.type === 'var' : t.type === 'string')) return undefined;
    const name = (t as { value: string }).value;
    if (name.startsWith(TEST_PREFIX) || name.startsWith(SKIP_TEST_PREFIX)) return { index: i, name };
  }
  return undefined;
}

/** The head's elements up to the test name, as strings. */
function headPath(rule: Rule, index: number): string[] {
  return rule.head.reference.slice(0, index + 1).map((t) => (t as { value: string }).value);
}

/**
 * Discovers the tests of `modules` (in file order, then rule order). A test name defined more than once in a
 * package is renamed `test_x#01`, `test_x#02`… from its second definition on, in the AST, so each definition
 * is compiled and run as its own test, as OPA's runner does (tester.rewriteDuplicateTestNames).
 */
function discoverTests(modules: Module[]): DiscoveredTest[] {
  const tests: DiscoveredTest[] = [];
  const count = new Map<string, number>();
  const ordered = [...modules].sort((a, b) => (a.file < b.file ? -1 : a.file > b.file ? 1 : 0));
  for (const m of ordered) {
    const pkg = packagePath(m);
    for (const rule of m.rules) {
      const head = testHead(rule);
      if (!head) continue;
      let path = [...pkg, ...headPath(rule, head.index)];
      if (head.name.startsWith(TEST_PREFIX)) {
        const key = path.join('\u0000');
        const k = count.get(key) ?? 0;
        count.set(key, k + 1);
        if (k > 0) {
          const renamed = `${head.name}#${String(k).padStart(2, '0')}`;
          rule.head.reference[head.index] = { ...rule.head.reference[head.index], value: renamed } as Term;
          path = [...path.slice(0, -1), renamed];
        }
      }
      const tail = rule.head.reference.slice(head.index + 1);
      tests.push({
        name: `data.${path.join('.')}`,
        entrypoint: path.join('/'),
        file: m.file,
        row: rule.location?.row ?? rule.head.location?.row ?? 0,
        todo: head.name.startsWith(SKIP_TEST_PREFIX),
        cases: rule.head.kind === 'single' && tail.some((t) => t.type !== 'string'),
      });
    }
  }
  return tests;
}

/** The cases of a partial-object test that are not `true` (nested objects are cases of cases); OPA's subResults. */
function failedCases(value: Json, prefix: string[] = []): string[] {
  const failed: string[] = [];
  for (const [k, v] of Object.entries(value as Record<string, Json>)) {
    const path = [...prefix, k];
    if (v !== null && typeof v === 'object' && !Array.isArray(v)) failed.push(...failedCases(v, path));
    else if (v !== true) failed.push(path.join('.'));
  }
  return failed;
}

/** Why a test's value does not pass it, or undefined when it passes. */
function verdict(test: DiscoveredTest, value: Json | undefined): string | undefined {
  if (value === undefined) return 'test rule is undefined';
  if (test.cases && value !== null && typeof value === 'object' && !Array.isArray(value)) {
    const failed = failedCases(value);
    return failed.length === 0 ? undefined : `failed cases: ${failed.map((c) => JSON.stringify(c)).join(', ')}`;
  }
  return value === true ? undefined : `test rule produced ${JSON.stringify(value)}`;
}

function formatRegoErrors(err: unknown): string {
  if (err instanceof RegoErrors) return err.errors.map((e) => e.format()).join('\n');
  if (err instanceof RegoError) return err.format();
  return err instanceof Error ? err.message : String(err);
}

/** Discovers, compiles and runs the Rego tests under `paths`. */
export async function runPolicyTests(options: PolicyTestOptions): Promise<PolicyTestReport> {
  const started = performance.now();
  const sources = collect(options);
  if (sources.modules.length === 0)
    throw new PolicyTestSetupError(`no .rego files under ${options.paths.join(', ')}`, 'usage');
  let modules: Module[];
  try {
    modules = sources.modules.map((m) =>
      parseModule(m.file, m.text, { regoVersion: m.regoVersion ?? (options.v0Compatible ? 0 : 1) }),
    );
  } catch (err) {
    throw new PolicyTestSetupError(formatRegoErrors(err), 'compile');
  }

  const tests = discoverTests(modules);
  const selected = tests.filter((t) => !options.run || options.run.test(t.name));
  const runnable = selected.filter((t) => !t.todo);

  const results: PolicyTestResult[] = [];
  let compileMs = 0;
  const probes = options.coverage ? new CoverageProbes() : undefined;
  if (probes) instrumentForCoverage(modules, probes);
  if (runnable.length > 0) {
    let wasm: Uint8Array;
    try {
      const program = compileModules(modules, options.capabilities ? { builtins: options.capabilities.builtins } : {});
      const plan = planEntrypoints(
        program,
        runnable.map((t) => t.entrypoint),
      );
      wasm = await linkPolicyWasm(plan);
    } catch (err) {
      throw new PolicyTestSetupError(formatRegoErrors(err), 'compile');
    }
    compileMs = performance.now() - started;
    const evaluator = await createTestEvaluator({
      wasm,
      data: sources.data,
      timeoutMs: options.timeoutMs ?? 10_000,
      ...(options.hostBuiltins ? { hostBuiltins: options.hostBuiltins } : {}),
      ...(options.customBuiltins ? { customBuiltins: options.customBuiltins } : {}),
      // The policy's own print output still reaches stderr; the probes are counted.
      ...(probes ? { print: (line: string) => probes.record(line) || process.stderr.write(`${line}\n`) } : {}),
    });
    for (const t of runnable) {
      const base = { name: t.name, entrypoint: t.entrypoint, file: t.file, row: t.row };
      const t0 = performance.now();
      try {
        const value = await evaluator.evaluate(t.entrypoint, new Date());
        const durationMs = performance.now() - t0;
        const failure = verdict(t, value);
        if (failure === undefined) results.push({ ...base, status: 'pass', durationMs });
        else results.push({ ...base, status: 'fail', durationMs, message: failure });
      } catch (err) {
        const msg =
          err instanceof TestEvaluationError
            ? `${err.code}: ${err.message}`
            : err instanceof Error
              ? err.message
              : String(err);
        results.push({ ...base, status: 'error', durationMs: performance.now() - t0, message: msg });
      }
    }
  } else compileMs = performance.now() - started;
  for (const t of selected.filter((s) => s.todo))
    results.push({ name: t.name, entrypoint: t.entrypoint, file: t.file, row: t.row, status: 'skip', durationMs: 0 });

  results.sort((a, b) => (a.file === b.file ? a.row - b.row : a.file < b.file ? -1 : 1));
  return {
    results,
    passed: results.filter((r) => r.status === 'pass').length,
    failed: results.filter((r) => r.status === 'fail' || r.status === 'error').length,
    skipped: results.filter((r) => r.status === 'skip').length,
    compileMs,
    ...(probes ? { coverage: probes.report() } : {}),
  };
}

const LABEL: Record<TestStatus, string> = { pass: 'PASS', fail: 'FAIL', error: 'ERROR', skip: 'SKIPPED' };

/** Text report: failures (all results with `verbose`), each with file:line; last line `N passed, N failed`. */
export function formatPolicyTestReport(report: PolicyTestReport, options: { verbose?: boolean } = {}): string {
  const lines: string[] = [];
  for (const r of report.results) {
    const shown = options.verbose || r.status === 'fail' || r.status === 'error';
    if (!shown) continue;
    lines.push(`${LABEL[r.status]}: ${r.name} (${r.file}:${r.row}) ${r.durationMs.toFixed(2)}ms`);
    if (r.message && (options.verbose || r.status !== 'pass')) lines.push(`  ${r.message}`);
  }
  if (report.skipped > 0) lines.push(`${report.skipped} skipped`);
  lines.push(`${report.passed} passed, ${report.failed} failed`);
  return lines.join('\n');
}
