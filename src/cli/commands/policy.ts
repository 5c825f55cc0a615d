// `guardian policy build|eval|inspect|check` (docs/bundles.md): compile Rego to an OPA bundle with our Wasm
// toolchain (policy-build.ts), evaluate a bundle's entrypoint through opa-wasm, show what a bundle holds, and
// check modules (opa check, optionally strict, plus the Guardian's lint rules).
import { readFileSync } from 'node:fs';
import type { Command } from 'commander';
import { CliError, ExitCode } from '../exit-codes.ts';
import { BundleError, readBundle } from '../../rego/bundle/index.ts';
import { loweredBuiltinNames } from '../../rego/builtins/host/names.ts';
import { bundleModeOption, gatherInputs, ignoreOption, readDataFile } from './policy-inputs.ts';
import { buildAndWatch, STRICT_BUILTIN_ERRORS_METADATA, type BuildOptions } from './policy-build.ts';
import { evaluateQueryCommand, type QueryOptions } from './policy-query.ts';
import { evaluateExact, printExact } from './exact-result.ts';
import { addPolicyBenchCommand } from './policy-bench.ts';
import { addPolicyFmtCommand } from './policy-fmt.ts';
import { addPolicyTestCommand } from './policy-test.ts';
import {
  addPolicyCapabilitiesCommand,
  dispatchedBuiltins,
  importCustomBuiltins,
  readCapabilitiesFile,
  requireImplementations,
} from './policy-capabilities.ts';

interface EvalOptions {
  bundle: string;
  entrypoint: string;
  input?: string;
  strictBuiltinErrors?: boolean;
  capabilities?: string;
  builtins?: string;
}

interface CheckOptions {
  strict?: boolean;
  lint?: boolean;
  format: string;
  v0Compatible?: boolean;
  capabilities?: string;
  ignore: string[];
  bundle?: boolean;
}

const CAPABILITIES_HELP =
  'OPA capabilities JSON: policies may call only the builtins it lists; the ones the toolchain lacks are custom builtins, called on the host';

interface InspectOptions {
  bundle: string;
  json?: boolean;
}

const collect = (value: string, previous: string[] = []): string[] => [...previous, value];

function readBundleFile(path: string): Uint8Array {
  try {
    return new Uint8Array(readFileSync(path));
  } catch (e) {
    throw new CliError(`cannot read bundle ${path}: ${(e as Error).message}`, ExitCode.Usage);
  }
}

async function evaluate(opts: EvalOptions): Promise<void> {
  const bytes = readBundleFile(opts.bundle);
  const input = opts.input !== undefined ? readDataFile(opts.input) : undefined;
  const capabilities = opts.capabilities !== undefined ? readCapabilitiesFile(opts.capabilities) : undefined;
  const customBuiltins = opts.builtins !== undefined ? await importCustomBuiltins(opts.builtins) : {};
  const { hostBuiltins, loadBundle } = await import('../../rego/index.ts');
  let manifestStrict = false;
  try {
    manifestStrict = readBundle(bytes).manifest.metadata?.[STRICT_BUILTIN_ERRORS_METADATA] === true;
  } catch {
    // an unreadable bundle is reported by loadBundle below
  }
  // Strict when asked for, or when the bundle was built strict (its Wasm already aborts on native builtin errors).
  const strict = opts.strictBuiltinErrors === true || manifestStrict;
  let loaded;
  try {
    loaded = await loadBundle(bytes, { builtinContext: { strict }, customBuiltins });
  } catch (e) {
    if (e instanceof BundleError) throw new CliError(`${opts.bundle}: not a bundle: ${e.message}`, ExitCode.Usage);
    if (e instanceof TypeError && /^custom builtin /.test(e.message))
      throw new CliError(`${opts.builtins}: ${e.message}`, ExitCode.Usage);
    throw new CliError(`bundle does not load: ${e instanceof Error ? e.message : String(e)}`, ExitCode.Failed);
  }
  const dispatched = dispatchedBuiltins(loaded.policy);
  if (capabilities) {
    // The plan names every builtin the policies call (natives too); without one, the host-called ones.
    const plan = loaded.bundle.plan as { static?: { builtin_funcs?: { name: string }[] } } | undefined;
    const called = plan?.static?.builtin_funcs?.map((b) => b.name) ?? dispatched;
    // A planner-lowered host builtin is its OPA builtin's call (internal.cidr_contains_matches: net.cidr_contains_matches).
    const outside = called
      .map((name) => loweredBuiltinNames.get(name) ?? name)
      .filter((name) => !capabilities.builtins.has(name) && name !== 'internal.print')
      .sort();
    if (outside.length)
      throw new CliError(
        `${opts.bundle}: the policy calls builtins outside ${opts.capabilities}: ${outside.join(', ')}`,
        ExitCode.CompileError,
      );
  }
  requireImplementations(dispatched, [hostBuiltins(), customBuiltins], opts.bundle);
  if (!(opts.entrypoint in loaded.entrypoints)) {
    throw new CliError(
      `entrypoint ${opts.entrypoint} not in bundle (has: ${Object.keys(loaded.entrypoints).join(', ') || 'none'})`,
      ExitCode.Usage,
    );
  }
  let result;
  try {
    result = await evaluateExact(loaded.policy, opts.entrypoint, input);
  } catch (e) {
    throw new CliError(`evaluation failed: ${e instanceof Error ? e.message : String(e)}`, ExitCode.Failed);
  }
  process.stdout.write(printExact(result));
}

async function inspect(opts: InspectOptions): Promise<void> {
  let bundle;
  try {
    bundle = readBundle(readBundleFile(opts.bundle));
  } catch (e) {
    if (e instanceof BundleError) throw new CliError(`${opts.bundle}: not a bundle: ${e.message}`, ExitCode.Usage);
    throw e;
  }
  const plan = bundle.plan as { static?: { builtin_funcs?: { name: string }[] } } | undefined;
  const builtins = (plan?.static?.builtin_funcs ?? []).map((b) => b.name).sort();
  let hostBuiltins: string[] | undefined;
  if (bundle.wasm) {
    try {
      const { instantiatePolicy } = await import('../../rego/index.ts');
      hostBuiltins = dispatchedBuiltins(await instantiatePolicy(bundle.wasm, {}));
    } catch {
      hostBuiltins = undefined; // a module that does not instantiate is reported by eval, not here
    }
  }
  const entrypoints = (bundle.manifest.wasm ?? []).map((w) => w.entrypoint);
  const report = {
    manifest: bundle.manifest,
    entrypoints,
    builtins,
    ...(hostBuiltins ? { host_builtins: hostBuiltins } : {}),
    signed: bundle.signatures !== undefined,
    files: bundle.files.map((f) => ({ path: f.path, size: f.bytes.length })),
  };
  if (opts.json) {
    process.stdout.write(`${JSON.stringify(report, null, 2)}\n`);
    return;
  }
  const lines = [
    `revision:    ${bundle.manifest.revision ?? '(none)'}`,
    `roots:       ${(bundle.manifest.roots ?? ['']).map((r) => JSON.stringify(r)).join(', ')}`,
    `signed:      ${report.signed ? 'yes' : 'no'}`,
    `entrypoints: ${entrypoints.join(', ') || '(none)'}`,
    `builtins:    ${builtins.join(', ') || '(none)'}`,
    ...(hostBuiltins ? [`host builtins: ${hostBuiltins.join(', ') || '(none)'}`] : []),
    'files:',
    ...report.files.map((f) => `  ${f.path} (${f.size} bytes)`),
  ];
  process.stdout.write(`${lines.join('\n')}\n`);
}

async function check(paths: string[], opts: CheckOptions): Promise<void> {
  if (opts.format === 'pretty') opts.format = 'text';
  if (opts.format !== 'text' && opts.format !== 'json')
    throw new CliError(`--format must be text or json, not ${JSON.stringify(opts.format)}`, ExitCode.Usage);
  const { sources, shownAs } = gatherInputs(paths, { ...opts, onlyRego: true });
  if (sources.length === 0) throw new CliError('no .rego files found', ExitCode.Usage);
  const { checkPolicies, formatFinding } = await import('../../rego/lint/index.ts');
  const { allowsTemplateStrings } = await import('../../rego/builtins/capabilities.ts');
  // No bundle is written: findings name the files as the user typed them.
  const capabilities = opts.capabilities !== undefined ? readCapabilitiesFile(opts.capabilities) : undefined;
  const result = checkPolicies(
    sources.map((s) => ({ ...s, file: shownAs.get(s.file) ?? s.file })),
    {
      strict: opts.strict === true,
      ...(capabilities
        ? {
            builtins: capabilities.builtins,
            deferredRefused: capabilities.refused,
            templateStrings: allowsTemplateStrings(capabilities),
          }
        : {}),
    },
  );
  // Lint findings are the Guardian's advice, shown only when asked for: without --lint the command reports
  // what `opa check` (with --strict, `opa check --strict`) reports.
  const findings = opts.lint ? result.findings : [];
  if (opts.format === 'json') {
    const where = (l: { file: string; row: number; col: number } | undefined) =>
      l ? { file: l.file, row: l.row, col: l.col } : {};
    const report = {
      modules: result.modules,
      errors: result.errors.map((e) => ({ ...where(e.location), code: e.code, message: e.message })),
      ...(opts.lint
        ? { findings: findings.map((f) => ({ ...where(f.location), code: f.code, message: f.message })) }
        : {}),
    };
    process.stdout.write(`${JSON.stringify(report, null, 2)}\n`);
  } else {
    for (const e of result.errors) process.stdout.write(`${e.format()}\n`);
    for (const f of findings) process.stdout.write(`${formatFinding(f)}\n`);
  }
  const plural = (n: number, word: string): string => `${n} ${word}${n === 1 ? '' : 's'}`;
  const summary =
    `${plural(result.modules, 'module')} checked: ${plural(result.errors.length, 'error')}` +
    (opts.lint ? `, ${plural(findings.length, 'lint finding')}` : '');
  if (result.errors.length) throw new CliError(summary, ExitCode.CompileError);
  if (findings.length) throw new CliError(summary, ExitCode.Failed);
  if (opts.format === 'text') process.stderr.write(`${summary}\n`);
}

/** Registers `guardian policy …`. */
export function registerPolicyCommands(program: Command): void {
  const policy = program
    .command('policy')
    .description('Build, evaluate and inspect Rego policy bundles (Rego v1 → Wasm)');

  policy
    .command('build')
    .description(
      'compile Rego files/directories into an OPA bundle (.tar.gz with policy.wasm, plan.json, data.json, sources)',
    )
    .argument(
      '<paths...>',
      "files or directories: every .rego, .json, .yaml/.yml below them, data mounted at its directory ('a.b:path' mounts at data.a.b)",
    )
    .option(
      '-e, --entrypoint <pkg/rule>',
      'entrypoint to compile (repeatable; default: the rules METADATA marks entrypoint: true)',
      collect,
      [],
    )
    .option('-o, --output <file>', 'bundle file to write', 'bundle.tar.gz')
    .option(
      '-t, --target <target>',
      'wasm (opa build -t wasm; the bundle also holds plan.json, so plan is accepted too); rego bundles are not built',
      'wasm',
    )
    .option(
      '-O, --optimize <level>',
      "opa build's optimization level 0-2: accepted; OPA's partial-evaluation rewrite is not applied (the Wasm is optimized by the toolchain's own passes)",
    )
    .option('-r, --revision <revision>', 'manifest revision (default: content hash of the bundle inputs)')
    .option('--data <file>', 'JSON/YAML base document merged at the root of data')
    .option('-q, --quiet', 'no progress lines')
    .option(
      '--strict-builtin-errors',
      'builtin failures abort evaluation (eval_builtin_error/eval_type_error) instead of being undefined; recorded in the manifest metadata',
    )
    .option('-w, --watch', 'rebuild whenever a .rego or data file changes, until interrupted')
    .option('--v0-compatible', "read modules as Rego v0 (OPA's --v0-compatible); a module importing rego.v1 stays v1")
    .option('--capabilities <file>', CAPABILITIES_HELP)
    .addOption(ignoreOption())
    .addOption(bundleModeOption())
    .action(async (paths: string[], opts: BuildOptions) => buildAndWatch(paths, opts));

  policy
    .command('eval')
    .description(
      "evaluate a bundle's entrypoint (-b bundle.tar.gz -e pkg/rule: OPA's result set), or a query against -d paths like opa eval",
    )
    .argument(
      '[query]',
      "a Rego query, e.g. 'data.authz.allow' or 'x := data.a[_]; x > 1' (expressions, with, some, not; no imports or package)",
    )
    .option('-b, --bundle <file>', 'bundle .tar.gz (with -e), or with a query: a bundle directory or .tar.gz to load')
    .option('-e, --entrypoint <pkg/rule>', 'entrypoint to evaluate (with -b)')
    .option(
      '-d, --data <path>',
      'with a query: Rego and data files or directories (repeatable; OPA loader rules)',
      collect,
      [],
    )
    .option('-i, --input <file>', "input JSON/YAML file, or '-' for stdin")
    .option('-I, --stdin-input', 'read the input from stdin (as -i -)')
    .option(
      '-f, --format <format>',
      "with a query: opa eval's output format: json, values (each result's values), bindings, raw (strings as they are, for scripts) or pretty",
      'json',
    )
    .option('--fail', 'with a query: exit 1 when the result is undefined')
    .option('--fail-defined', 'with a query: exit 1 when the result is defined')
    .addOption(ignoreOption())
    .option('--v0-compatible', "read modules as Rego v0 (OPA's --v0-compatible); a module importing rego.v1 stays v1")
    .option(
      '--strict-builtin-errors',
      'host builtin failures abort evaluation instead of being undefined (default: as the bundle manifest says)',
    )
    .option(
      '--capabilities <file>',
      'OPA capabilities JSON: a query compiles against the builtins it lists (custom ones declared); a bundle that calls others is refused',
    )
    .option(
      '--builtins <module.mjs>',
      'JavaScript implementations of custom builtins: an ES module whose default export maps names to functions',
    )
    .addHelpText(
      'after',
      '\nWith a query the output is opa eval\'s JSON: {"result":[{"expressions":[{"value":…,"text":…,"location":…}],"bindings":{…}}]},\n' +
        'or {} when the query is undefined; -f values, bindings, raw and pretty print as opa eval --format does. Builtins the Guardian refuses (http.send, net.lookup_ip_addr, opa.runtime, …)\n' +
        'compile with a query: reaching one fails the evaluation with the reason, unless the query replaces it\n' +
        '(`with http.send as <value or function>`); `guardian policy build` still refuses them.\n' +
        'Exit codes: 0 evaluated, 1 evaluation failed (or undefined with --fail),\n' +
        '2 bad usage or unreadable files, 3 the modules or the query do not compile.',
    )
    .action(async (query: string | undefined, opts: EvalOptions & QueryOptions) => {
      if (opts.stdinInput && opts.input !== undefined)
        throw new CliError('give the input with -i or with -I (stdin), not both', ExitCode.Usage);
      if (opts.stdinInput) opts.input = '-';
      if (query !== undefined) return evaluateQueryCommand(query, opts);
      // Flags of the query form would otherwise be ignored here: the bundle carries its own data.
      if (opts.format !== 'json' || opts.failDefined || opts.fail || opts.data.length > 0)
        throw new CliError(
          '-d, -f, --fail and --fail-defined apply to a query (policy eval -d … QUERY)',
          ExitCode.Usage,
        );
      if (!opts.bundle || !opts.entrypoint)
        throw new CliError('give a query, or -b bundle.tar.gz and -e pkg/rule', ExitCode.Usage);
      return evaluate({ ...opts, bundle: opts.bundle, entrypoint: opts.entrypoint });
    });

  policy
    .command('check')
    .description(
      "parse and compile Rego files as `opa check` does (no Wasm); --strict: OPA's strict mode; --lint: the Guardian's lint rules",
    )
    .argument('<paths...>', '.rego files or directories')
    .option(
      '-S, --strict',
      "OPA's compiler strict mode (opa check --strict): unused imports, unused assigned vars and unused function arguments are errors, and in Rego v0 modules also duplicate imports, input/data as rule or variable names and deprecated builtins",
    )
    .option(
      '--lint',
      "also run the Guardian's lint rules (builtins shadowed by rules, deprecated builtins with their replacement, redundant future/rego.v1 imports, builtins the Guardian refuses); exit 1 when one finds something",
    )
    .option('-f, --format <format>', "text (opa check's pretty, also accepted) or json", 'text')
    .option('--v0-compatible', "read modules as Rego v0 (OPA's --v0-compatible); a module importing rego.v1 stays v1")
    .option('--capabilities <file>', CAPABILITIES_HELP)
    .addOption(ignoreOption())
    .addOption(bundleModeOption())
    .addHelpText(
      'after',
      '\nA call of a builtin the Guardian refuses (http.send, …) compiles, as for policy test and eval, and\n' +
        '`guardian policy build` refuses it; --lint reports each call (rego_lint_refused_builtin).\n' +
        'Exit codes: 0 checked, 1 lint findings with --lint, 2 bad usage,\n' +
        '3 a module does not parse or compile (with --strict: in strict mode).',
    )
    .action(async (paths: string[], opts: CheckOptions) => check(paths, opts));

  policy
    .command('inspect')
    .description('show a bundle: manifest, entrypoints, builtins used, files')
    .requiredOption('-b, --bundle <file>', 'bundle .tar.gz')
    .option('--json', 'machine-readable output')
    .action(async (opts: InspectOptions) => inspect(opts));

  addPolicyTestCommand(policy);
  addPolicyBenchCommand(policy);
  addPolicyFmtCommand(policy);
  addPolicyCapabilitiesCommand(policy);
}
