// `guardian policy test`: like `opa test` (OPA's tester.Runner). Discovers the test rules — every rule whose head
// names `test_*` (`todo_test_*`: reported as skipped) in the ground prefix of its reference — in every .rego file
// under the given paths, compiles the whole set once through our compiler with one entrypoint per test, and
// evaluates each through opa-wasm with the data files found alongside (OPA's loader rules: src/rego/bundle/loader.ts).
// A test name defined more than once in a package (chained bodies `test_x if { a } { b }` included: the parser makes
// them two rules) is one test per definition, `test_x`, `test_x#01`, `test_x#02`… (tester.rewriteDuplicateTestNames).
// A test passes when its rule evaluates to `true`; a `test_x[case]` rule (a partial object) when every case is
// `true` (OPA's sub results). Undefined or any other value fails it; a runtime error (a conflict, a refused builtin
// reached) errors it; a test that is a function errors, as OPA's query of it does not type-check. A builtin the
// Guardian refuses compiles, and errors the test that reaches it unless the test replaces it with `with`
// (builtins/refused.ts).
import { RE2JS } from 're2js';
import { parseModule } from '../ast/index.ts';
import type { Body, Module, Rule, Term } from '../ast/types.ts';
import { forEachVar, forEachVarInBody, isConstantTerm, refName } from '../semantic/terms.ts';
import { compileModules } from '../semantic/index.ts';
import { planEntrypoints } from '../planner/index.ts';
import { linkPolicyWasm } from '../wasm/index.ts';
import { IgnorePatternError, LoaderError, loadPaths } from '../bundle/loader.ts';
import { isOpaWasmRuntimeError, RegoError, RegoErrors } from '../errors.ts';
import { allowsTemplateStrings, type Capabilities } from '../builtins/capabilities.ts';
import { isObject, type JsonObject, type JsonValue as Json } from '../json.ts';
import { CoverageProbes, type CoverageReport, instrumentForCoverage } from './coverage.ts';
import { createTestEvaluator, TestEvaluationError, type HostBuiltinTable } from './evaluator.ts';

export type TestStatus = 'pass' | 'fail' | 'error' | 'skip';

/** One case of a `test_x[case]` rule: OPA's tester SubResult. */
export interface TestCaseResult {
  /** The case's key (OPA names a case reached with a null value `""`). */
  name: string;
  fail: boolean;
  /** The cases of a case whose value is an object (`test_x[group][case]`), by key. */
  subResults?: Map<string, TestCaseResult>;
}

/** An error as OPA's JSON report carries it (topdown.Error, ast.Error). */
export interface TestErrorValue {
  code: string;
  message: string;
  location?: { file: string; row: number; col?: number };
}

export interface PolicyTestResult {
  /**
   * The test as OPA prints it, `<package>.<rule>`: `data.pkg.test_x`, a duplicate `data.pkg.test_x#01`, a ref head
   * `data.pkg.a.b["test_x#01"]`.
   */
  name: string;
  /** OPA's Result.Package: the package path as a ref (`data.pkg`, `data.a["b:1"]`). */
  package: string;
  /** OPA's Result.Name: the head's reference up to the test name, as a ref (`test_x`, `a.b.test_x`). */
  rule: string;
  /** Entrypoint form `<package path>/<rule>`. */
  entrypoint: string;
  file: string;
  row: number;
  col: number;
  status: TestStatus;
  durationMs: number;
  /** With status 'error': the error as OPA prints it. */
  message?: string;
  /** With status 'error': the error as OPA's JSON report has it; a list when the test's query did not compile. */
  error?: TestErrorValue | TestErrorValue[];
  /** A `test_x[case]` rule's cases by key (OPA's sub results). */
  subResults?: Map<string, TestCaseResult>;
  /** Lines the test printed (print and trace), which opa test shows for failed tests and with -v. */
  output?: string[];
}

export interface PolicyTestReport {
  /** In file order, then by position in the file. */
  results: PolicyTestResult[];
  /** OPA's summary counts: a test with cases counts each case (leaf) as a pass or a failure. */
  passed: number;
  failed: number;
  errored: number;
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
  /**
   * An RE2 pattern (Go's regexp, as `opa test --run`): only tests whose full reference matches run, e.g.
   * `data.pkg.test_x`, `data.pkg["test_x#01"]` for a renamed duplicate.
   */
  run?: string;
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

/** The `run` pattern (opa test --run), compiled as Go's regexp.Compile would (RE2); a syntax error is a usage error. */
function testFilter(pattern: string | undefined): (fullName: string) => boolean {
  if (pattern === undefined || pattern === '') return () => true;
  try {
    const re = RE2JS.compile(pattern);
    return (fullName) => re.test(fullName);
  } catch (err) {
    throw new PolicyTestSetupError(`--run: invalid regular expression: ${(err as Error).message}`, 'usage');
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
  /** `<package>.<rule>`, as OPA prints the test. */
  name: string;
  package: string;
  rule: string;
  /** What `--run` matches: the package path extended by the rule's reference, as a ref (OPA's shouldRun). */
  fullName: string;
  /** The elements of that reference after `data`. */
  path: string[];
  entrypoint: string;
  file: string;
  row: number;
  col: number;
  /** A `todo_test_` rule (skipped), or a `test_` function (its query does not type-check in OPA). */
  kind: 'test' | 'todo' | 'function';
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
 * Where a rule's head names a test, as OPA's runner finds it (tester.ruleName): the first element of the head
 * reference's ground prefix whose name starts with `test_` or `todo_test_` (so `test_x[case]` is the test
 * `test_x`, `a.b.test_x` the test `a.b.test_x`). Functions are found too.
 */
function testHead(rule: Rule): { index: number; name: string } | undefined {
  const ref = rule.head.reference;
  for (let i = 0; i < ref.length; i++) {
    const t = ref[i];
    if (i > 0 && !isConstantTerm(t)) return undefined;
    const name = i === 0 ? (t.type === 'var' ? t.value : '') : t.type === 'string' ? t.value : '';
    if (name.startsWith(TEST_PREFIX) || name.startsWith(SKIP_TEST_PREFIX)) return { index: i, name };
  }
  return undefined;
}

/** The head's elements up to the test name, as strings. */
function headPath(rule: Rule, index: number): string[] {
  return rule.head.reference.slice(0, index + 1).map((t) => termString(t) ?? '?');
}

/**
 * A partial object (OPA's Head.DocKind): a single-value rule whose reference has a variable after its first
 * element, or a v0 `p[k] = v`.
 */
function isPartialObject(rule: Rule): boolean {
  return (
    rule.head.kind === 'single' &&
    !rule.head.args?.length &&
    rule.head.reference.slice(1).some((t) => !isConstantTerm(t))
  );
}

/**
 * Discovers the tests of `modules` (in file order, then rule order). A `test_` name defined more than once in a
 * package is renamed `test_x#01`, `test_x#02`… from its second definition on, in the AST, so each definition
 * is compiled and run as its own test, as OPA's runner does (tester.rewriteDuplicateTestNames: every rule the
 * name heads, functions and `default` rules included; `todo_test_` names are not renamed). OPA counts the
 * modules in map order; here files are taken in name order.
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
      let path = headPath(rule, head.index);
      const todo = head.name.startsWith(SKIP_TEST_PREFIX);
      if (!todo) {
        const key = [...pkg, ...path].join('\u0000');
        const k = count.get(key) ?? 0;
        count.set(key, k + 1);
        if (k > 0) {
          const renamed = `${head.name}#${String(k).padStart(2, '0')}`;
          rule.head.reference[head.index] = { ...rule.head.reference[head.index], value: renamed } as Term;
          path = [...path.slice(0, -1), renamed];
        }
      }
      const isFunction = (rule.head.args?.length ?? 0) > 0;
      const cases = isPartialObject(rule);
      const entrypoint = [...pkg, ...path].join('/');
      let probe: string | undefined;
      if (probes && cases && !todo && head.index === 0) {
        const name = `${path[path.length - 1]}${PROBE_SUFFIX}`;
        probes.push({ module: m, rule: caseProbe(rule, head.index, name) });
        probe = [...pkg, ...path.slice(0, -1), name].join('/');
      }
      const location = rule.location ?? rule.head.location;
      const pkgName = refName(['data', ...pkg]);
      // The rule's name is a ref whose first element is a var (printed as it is, `test_x#01` too); the full
      // name `--run` matches extends the package by it, so a renamed one reads `data.pkg["test_x#01"]`.
      const ruleName = refName(path);
      tests.push({
        name: `${pkgName}.${ruleName}`,
        package: pkgName,
        rule: ruleName,
        fullName: refName(['data', ...pkg, ...path]),
        path: [...pkg, ...path],
        entrypoint,
        file: m.file,
        row: location?.row ?? 0,
        col: location?.col ?? 0,
        kind: todo ? 'todo' : isFunction ? 'function' : 'test',
        cases,
        ...(probe ? { probe } : {}),
      });
    }
  }
  for (const p of probes ?? []) p.module.rules.push(p.rule);
  return tests;
}

/** A case key as OPA's runner names it: a string as it is, anything else as JSON. */
function caseName(key: Json): string {
  return typeof key === 'string' ? key : JSON.stringify(key);
}

/** A case's result from its value (OPA's tester.subResult): true passes, an object is a group of cases. */
function caseResult(name: string, value: Json): TestCaseResult {
  // OPA's subResult gives a nil value an unnamed passing result.
  if (value === null) return { name: '', fail: false };
  if (isObject(value)) {
    const { fail, results } = caseResults(value);
    return { name, fail, subResults: results };
  }
  return { name, fail: value !== true };
}

function caseResults(value: JsonObject): { fail: boolean; results: Map<string, TestCaseResult> } {
  const results = new Map<string, TestCaseResult>();
  let fail = false;
  for (const [k, v] of Object.entries(value)) {
    const r = caseResult(k, v);
    results.set(k, r);
    fail ||= r.fail;
  }
  return { fail, results };
}

/**
 * A case the body reached (OPA: an internal.test_case event): missing from the value, it is a failed case (and
 * so are the groups it is in); present, its result stands. Whether the path failed (tester.SubResultMap.update).
 */
function markReached(results: Map<string, TestCaseResult>, path: string[], i = 0): boolean {
  if (i >= path.length) return true;
  let entry = results.get(path[i]);
  if (!entry) {
    entry = { name: path[i], fail: true, subResults: new Map() };
    results.set(path[i], entry);
  }
  if (i === path.length - 1) return entry.fail;
  entry.subResults ??= new Map();
  const fail = markReached(entry.subResults, path, i + 1);
  if (fail) entry.fail = true;
  return fail;
}

/** Whether a test's value fails it, and its cases (a `test_x[case]` rule). */
function verdict(
  test: DiscoveredTest,
  value: Json | undefined,
  reached?: Json,
): { fail: boolean; subResults?: Map<string, TestCaseResult> } {
  if (value === undefined) return { fail: true };
  if (!test.cases) return { fail: value !== true };
  if (!isObject(value)) return { fail: true };
  const { fail, results } = caseResults(value);
  let reachedFailed = false;
  if (Array.isArray(reached))
    for (const keys of reached)
      if (Array.isArray(keys) && markReached(results, keys.map(caseName))) reachedFailed = true;
  return { fail: fail || reachedFailed, subResults: results };
}

/** OPA's Wasm run-time errors name a conflict: a complete rule or function with two values, an object key with two. */
const CONFLICT_CODE = 'eval_conflict_error';
/** `<file>:<row>[:<col>]: <code>: <message>`, as compiled Rego aborts and host builtins halt. */
const LOCATED_ERROR = /^(.+?):(\d+)(?::(\d+))?: ((?:eval|rego)_[a-z_]+): ([\s\S]*)$/;
const WASM_RUNTIME_ERROR = /^(.+?):(\d+):(\d+): ([\s\S]*)$/;

/** An evaluation error: its text as OPA prints it, and its JSON value. */
function evaluationError(err: unknown): { message: string; error: TestErrorValue } {
  if (!(err instanceof TestEvaluationError)) {
    const message = err instanceof Error ? err.message : String(err);
    return { message, error: { code: 'eval_internal_error', message } };
  }
  if (err.code !== 'policy_error') {
    const message = `${err.code}: ${err.message}`;
    return { message, error: { code: err.code, message: err.message } };
  }
  // A policy error reads as OPA prints its error value: `lib.rego:9: eval_builtin_error: http.send: …`.
  const message = err.message;
  const located = LOCATED_ERROR.exec(message);
  if (located) {
    const [, file, row, col, code, text] = located;
    return {
      message,
      error: { code, message: text, location: { file, row: Number(row), ...(col ? { col: Number(col) } : {}) } },
    };
  }
  const runtime = isOpaWasmRuntimeError(message) ? WASM_RUNTIME_ERROR.exec(message) : null;
  if (runtime) {
    const [, file, row, col, text] = runtime;
    return {
      message,
      error: { code: CONFLICT_CODE, message: text, location: { file, row: Number(row), col: Number(col) } },
    };
  }
  const coded = /^((?:eval|rego)_[a-z_]+): ([\s\S]*)$/.exec(message);
  return { message, error: coded ? { code: coded[1], message: coded[2] } : { code: 'eval_internal_error', message } };
}

/**
 * A `test_` function: OPA queries it like any test (`data.pkg.test_f`), and the query's type check refuses a
 * function used as a value (ast refChecker.checkApply, "undefined ref"), so the test errors. OPA also prints the
 * function's type (`have: …`) under the caret; the toolchain infers no types, so that line is left out.
 */
function functionTestError(t: DiscoveredTest): { message: string; error: TestErrorValue[] } {
  const ref = t.fullName;
  const parent = refName(['data', ...t.path.slice(0, -1)]);
  const text = `undefined ref: ${ref}`;
  return {
    message: `1 error occurred: 1:1: rego_type_error: ${text}\n\t${ref}\n\t${' '.repeat(parent.length + 1)}^`,
    error: [{ code: 'rego_type_error', message: text, location: { file: '', row: 1, col: 1 } }],
  };
}

/** OPA's summary counts (PrettyReporter): cases count one each. */
function tally(
  results: readonly PolicyTestResult[],
): Pick<PolicyTestReport, 'passed' | 'failed' | 'errored' | 'skipped'> {
  const counts = { passed: 0, failed: 0, errored: 0, skipped: 0 };
  const leaves = (cases: Map<string, TestCaseResult>): void => {
    for (const c of cases.values()) {
      if (c.subResults && c.subResults.size > 0) leaves(c.subResults);
      else if (c.fail) counts.failed++;
      else counts.passed++;
    }
  };
  for (const r of results) {
    if (r.status === 'skip') counts.skipped++;
    else if (r.status === 'error') counts.errored++;
    else if (r.subResults && r.subResults.size > 0) leaves(r.subResults);
    else if (r.status === 'pass') counts.passed++;
    else counts.failed++;
  }
  return counts;
}

function formatRegoErrors(err: unknown): string {
  if (err instanceof RegoErrors) return err.errors.map((e) => e.format()).join('\n');
  if (err instanceof RegoError) return err.format();
  return err instanceof Error ? err.message : String(err);
}

/** Discovers, compiles and runs the Rego tests under `paths`. */
export async function runPolicyTests(options: PolicyTestOptions): Promise<PolicyTestReport> {
  const started = performance.now();
  const shouldRun = testFilter(options.run);
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
    const selected = tests.filter((t) => shouldRun(t.fullName));
    const runnable = selected.filter((t) => t.kind === 'test');
    const coverage = options.coverage ? new CoverageProbes() : undefined;
    if (coverage) instrumentForCoverage(modules, coverage);
    return { modules, selected, runnable, coverage, probed: runnable.some((t) => t.probe !== undefined) };
  };
  let prepared = prepare(true);
  const { selected, runnable } = prepared;
  const described = (t: DiscoveredTest) => ({
    name: t.name,
    package: t.package,
    rule: t.rule,
    entrypoint: t.entrypoint,
    file: t.file,
    row: t.row,
    col: t.col,
  });

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
    // as it comes. trace() notes are events of OPA's trace, not output: a compiled module has no trace, so only
    // the coverage probes (trace calls the instrumentation adds) are read from them, and counted.
    let output: string[] | undefined;
    const printed = (line: string): void => {
      output?.push(line);
    };
    const traced = (line: string): void => {
      coverage?.record(line);
    };
    const evaluator = await createTestEvaluator({
      wasm,
      data: sources.data,
      timeoutMs: options.timeoutMs ?? 10_000,
      ...(options.hostBuiltins ? { hostBuiltins: options.hostBuiltins } : {}),
      ...(options.customBuiltins ? { customBuiltins: options.customBuiltins } : {}),
      print: printed,
      trace: traced,
    });
    for (const t of prepared.runnable) {
      const base = described(t);
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
        const { fail, subResults } = verdict(t, value, reached);
        results.push({
          ...base,
          status: fail ? 'fail' : 'pass',
          durationMs,
          ...(subResults ? { subResults } : {}),
          ...withOutput(),
        });
      } catch (err) {
        output = undefined;
        results.push({
          ...base,
          status: 'error',
          durationMs: performance.now() - t0,
          ...evaluationError(err),
          ...withOutput(),
        });
      }
    }
  } else compileMs = performance.now() - started;
  for (const t of selected) {
    if (t.kind === 'todo') results.push({ ...described(t), status: 'skip', durationMs: 0 });
    else if (t.kind === 'function')
      results.push({ ...described(t), status: 'error', durationMs: 0, ...functionTestError(t) });
  }

  // OPA sends the results of one file together (its files, and tests within a file, in the order they finish).
  results.sort((a, b) => (a.file === b.file ? a.row - b.row || a.col - b.col : a.file < b.file ? -1 : 1));
  return {
    results,
    ...tally(results),
    compileMs,
    ...(prepared.coverage ? { coverage: prepared.coverage.report() } : {}),
  };
}
