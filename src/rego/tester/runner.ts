// `guardian policy test`: like `opa test`. Discovers `test_*` rules (and `todo_test_*`, reported as skipped)
// in every .rego file under the given paths, compiles the whole set once through our compiler with one
// entrypoint per test rule, and evaluates each through opa-wasm with the data files found alongside (OPA's
// loader rules: src/rego/bundle/loader.ts).
// A test passes when its rule evaluates to `true` (a `test_x[case]` rule: when every case is `true`); undefined,
// any other value or a runtime error fails it (OPA's tester.Runner). A builtin the Guardian refuses compiles, and
// errors the test that reaches it unless the test replaces it with `with` (builtins/refused.ts).
import { parseModule } from '../ast/index.ts';
import type { Body, Module, Rule, Term } from '../ast/types.ts';
import { forEachVar, forEachVarInBody, refName } from '../semantic/terms.ts';
import { compileModules } from '../semantic/index.ts';
import { planEntrypoints } from '../planner/index.ts';
import { linkPolicyWasm } from '../wasm/index.ts';
import { IgnorePatternError, LoaderError, loadPaths } from '../bundle/loader.ts';
import { RegoError, RegoErrors } from '../errors.ts';
import { allowsTemplateStrings, type Capabilities } from '../builtins/capabilities.ts';
import { isObject, type JsonObject, type JsonValue as Json } from '../json.ts';
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
  /** Lines the test printed (print and trace), which opa test shows for failed tests and with -v. */
  output?: string[];
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
  data: JsonObject;
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
      data: loaded.data as JsonObject,
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
  /** With `cases`: the entrypoint of the rule listing the cases the body reached (caseProbe). */
  probe?: string;
}

/** Suffix of a probe rule's name; `#` keeps it apart from any name a policy can write. */
const PROBE_SUFFIX = '#cases';

/**
 * OPA's runner injects `internal.test_case([<case>])` into a `test_x[case]` rule right after the body
 * expression where the case's variables are first seen (tester.injectTestCaseFunc) and fails every case that
 * reached that call without ending up true, so a case whose later expressions fail is reported, not dropped.
 * The same is found here with a partial set rule over a copy of the body up to that expression, listing the
 * cases reached.
 */
function caseProbe(rule: Rule, index: number, name: string): Rule {
  const keys = rule.head.reference.slice(index + 1);
  const vars = new Set<string>();
  for (const k of keys) forEachVar(k, (v) => vars.add(v.value), { callOperators: false });
  let end = -1;
  for (const v of vars) {
    const first = rule.body.findIndex((e) => {
      let seen = false;
      forEachVarInBody([e], (x) => (seen ||= x.value === v), { callOperators: false });
      return seen;
    });
    end = Math.max(end, first);
  }
  const location = rule.location ?? rule.head.location;
  const body: Body =
    end >= 0
      ? structuredClone(rule.body.slice(0, end + 1))
      : [{ index: 0, negated: false, terms: { type: 'term', term: { type: 'boolean', value: true } }, with: [] }];
  return {
    default: false,
    head: {
      reference: [{ type: 'var', value: name, ...(location ? { location } : {}) }],
      key: { type: 'array', value: structuredClone(keys) },
      assign: false,
      kind: 'multi',
      ...(location ? { location } : {}),
    },
    body,
    ...(location ? { location } : {}),
  };
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
function discoverTests(modules: Module[], probes?: { module: Module; rule: Rule }[]): DiscoveredTest[] {
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
      const todo = head.name.startsWith(SKIP_TEST_PREFIX);
      const cases = rule.head.kind === 'single' && tail.some((t) => t.type !== 'string');
      let probe: string | undefined;
      if (probes && cases && !todo && head.index === 0) {
        const name = `${path[path.length - 1]}${PROBE_SUFFIX}`;
        probes.push({ module: m, rule: caseProbe(rule, head.index, name) });
        probe = [...path.slice(0, -1), name].join('/');
      }
      tests.push({
        // OPA prints the package as a ref (`data.a["b:1"].c`) and the test's own name as written.
        name: `${refName(['data', ...pkg])}.${path.slice(pkg.length).join('.')}`,
        entrypoint: path.join('/'),
        file: m.file,
        row: rule.location?.row ?? rule.head.location?.row ?? 0,
        todo,
        cases,
        ...(probe ? { probe } : {}),
      });
    }
  }
  for (const p of probes ?? []) p.module.rules.push(p.rule);
  return tests;
}

/** The cases of a partial-object test that are not `true` (nested objects are cases of cases); OPA's subResults. */
function failedCases(value: Json, prefix: string[] = []): string[] {
  const failed: string[] = [];
  for (const [k, v] of Object.entries(value as Record<string, Json>)) {
    const path = [...prefix, k];
    if (isObject(v)) failed.push(...failedCases(v, path));
    else if (v !== true) failed.push(path.join('.'));
  }
  return failed;
}

/** A case key as OPA's runner names it: a string as it is, anything else as JSON. */
function caseName(key: Json): string {
  return typeof key === 'string' ? key : JSON.stringify(key);
}

/** The reached cases (probe result: arrays of keys) that are missing from the test's value. */
function droppedCases(value: Json, reached: Json | undefined): string[] {
  if (!Array.isArray(reached)) return [];
  const dropped: string[] = [];
  for (const keys of reached) {
    if (!Array.isArray(keys)) continue;
    let node: Json | undefined = value;
    for (const k of keys) node = isObject(node) ? node[caseName(k)] : undefined;
    if (node === undefined) dropped.push(keys.map(caseName).join('.'));
  }
  return dropped;
}

/** Why a test's value does not pass it, or undefined when it passes. */
function verdict(test: DiscoveredTest, value: Json | undefined, reached?: Json): string | undefined {
  if (value === undefined) return 'test rule is undefined';
  if (test.cases && isObject(value)) {
    const failed = [...new Set([...failedCases(value), ...droppedCases(value, reached)])].sort();
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
  const parse = (): Module[] => {
    try {
      return sources.modules.map((m) =>
        parseModule(m.file, m.text, {
          regoVersion: m.regoVersion ?? (options.v0Compatible ? 0 : 1),
          templateStrings: allowsTemplateStrings(options.capabilities),
        }),
      );
    } catch (err) {
      throw new PolicyTestSetupError(formatRegoErrors(err), 'compile');
    }
  };
  // Parsed, tests discovered (renaming duplicates, adding case probes when asked) and instrumented.
  const prepare = (withProbes: boolean) => {
    const modules = parse();
    const caseProbes: { module: Module; rule: Rule }[] = [];
    const tests = discoverTests(modules, withProbes ? caseProbes : undefined);
    const selected = tests.filter((t) => !options.run || options.run.test(t.name));
    const runnable = selected.filter((t) => !t.todo);
    const coverage = options.coverage ? new CoverageProbes() : undefined;
    if (coverage) instrumentForCoverage(modules, coverage);
    return { modules, selected, runnable, coverage, probed: runnable.some((t) => t.probe !== undefined) };
  };
  let prepared = prepare(true);
  const { selected, runnable } = prepared;

  const results: PolicyTestResult[] = [];
  let compileMs = 0;
  if (runnable.length > 0) {
    // Refused builtins (http.send, …) compile to calls that halt when reached, so a test may replace them with
    // `with` and a module that only has to compile does (builtins/refused.ts); the call sites locate the halts.
    const compileOptions = {
      ...(options.capabilities
        ? { builtins: options.capabilities.builtins, deferredRefused: options.capabilities.refused }
        : {}),
      refusedBuiltins: 'evaluation-error' as const,
      // opa test compiles with the path-conflict check against the loaded data.
      data: sources.data,
    };
    const build = async (p: typeof prepared): Promise<Uint8Array> => {
      const program = compileModules(p.modules, compileOptions);
      const entrypoints = p.runnable.flatMap((t) => (t.probe ? [t.entrypoint, t.probe] : [t.entrypoint]));
      return linkPolicyWasm(planEntrypoints(program, entrypoints), { hostCallSites: true });
    };
    let wasm: Uint8Array;
    try {
      try {
        wasm = await build(prepared);
      } catch (err) {
        if (!prepared.probed) throw err;
        // A body prefix the compiler refuses on its own (e.g. unsafe without the rest): without the probes,
        // the modules compile or fail as written.
        prepared = prepare(false);
        wasm = await build(prepared);
      }
    } catch (err) {
      throw new PolicyTestSetupError(formatRegoErrors(err), 'compile');
    }
    compileMs = performance.now() - started;
    const coverage = prepared.coverage;
    // opa test keeps each test's print output with its result (tester Result.Output) instead of writing it
    // as it comes; the coverage probes are counted, not output.
    let output: string[] | undefined;
    const printed = (line: string): void => {
      if (coverage?.record(line)) return;
      output?.push(line);
    };
    const evaluator = await createTestEvaluator({
      wasm,
      data: sources.data,
      timeoutMs: options.timeoutMs ?? 10_000,
      ...(options.hostBuiltins ? { hostBuiltins: options.hostBuiltins } : {}),
      ...(options.customBuiltins ? { customBuiltins: options.customBuiltins } : {}),
      print: printed,
    });
    for (const t of prepared.runnable) {
      const base = { name: t.name, entrypoint: t.entrypoint, file: t.file, row: t.row };
      const t0 = performance.now();
      const lines: string[] = [];
      const withOutput = () => (lines.length > 0 ? { output: lines } : {});
      try {
        const now = new Date();
        output = lines;
        const value = await evaluator.evaluate(t.entrypoint, now);
        // The case probe re-evaluates a body prefix: what it prints is no output of the test.
        output = undefined;
        const reached = t.probe ? await evaluator.evaluate(t.probe, now) : undefined;
        const durationMs = performance.now() - t0;
        const failure = verdict(t, value, reached);
        if (failure === undefined) results.push({ ...base, status: 'pass', durationMs, ...withOutput() });
        else results.push({ ...base, status: 'fail', durationMs, message: failure, ...withOutput() });
      } catch (err) {
        output = undefined;
        const msg =
          err instanceof TestEvaluationError
            ? `${err.code}: ${err.message}`
            : err instanceof Error
              ? err.message
              : String(err);
        results.push({ ...base, status: 'error', durationMs: performance.now() - t0, message: msg, ...withOutput() });
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
    ...(prepared.coverage ? { coverage: prepared.coverage.report() } : {}),
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
    // What the test printed, indented under it (OPA's PrettyReporter prints tr.Output the same way).
    for (const out of r.output ?? []) for (const l of out.split('\n')) lines.push(`    ${l}`);
  }
  if (report.skipped > 0) lines.push(`${report.skipped} skipped`);
  lines.push(`${report.passed} passed, ${report.failed} failed`);
  return lines.join('\n');
}
