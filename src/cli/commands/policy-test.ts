import type { Command } from 'commander';
import { CliError, ExitCode } from '../exit-codes.ts';
import { importCustomBuiltins, readCapabilitiesFile } from './policy-capabilities.ts';
import { bundleModeOption, ignoreOption } from './policy-inputs.ts';

type LoaderFlags = { v0Compatible?: boolean; ignore: string[]; bundle?: boolean };
type BuiltinFlags = { capabilities?: string; builtins?: string };
type CoverageFlags = { coverage?: boolean; threshold?: string; format: string };

/** `--timeout`: a Go duration (`30s`, as opa test's flag takes it) or, as before, a number of milliseconds. */
async function timeoutMillis(text: string): Promise<number> {
  let ms = Number(text);
  if (!/^\d+(\.\d+)?$/.test(text)) {
    const { parseDuration } = await import('../../rego/builtins/host/time.ts');
    try {
      ms = Number(parseDuration(text)) / 1e6;
    } catch {
      ms = Number.NaN;
    }
  }
  if (!Number.isFinite(ms) || ms <= 0)
    throw new CliError(
      `--timeout: expected a positive duration (30s, 500ms) or milliseconds, not ${JSON.stringify(text)}`,
      ExitCode.Usage,
    );
  return ms;
}

/** Adds `guardian policy test <paths...>` to the `policy` command group (like `opa test`). */
export function addPolicyTestCommand(policy: Command): void {
  policy
    .command('test')
    .description('Run Rego unit tests (test_* rules; todo_test_* are reported as skipped) through the Wasm compiler')
    .argument(
      '<paths...>',
      'files or directories: every .rego, .json, .yaml/.yml below them (data mounted at its directory)',
    )
    .option('-v, --verbose', 'print every test, and a FAILURES section first')
    .option(
      '-r, --run <regex>',
      'only run tests whose full reference matches this RE2 pattern (data.pkg.test_x; a renamed duplicate: data.pkg["test_x#01"])',
    )
    .option('-z, --exit-zero-on-skipped', 'skipped (todo_test_) tests do not make the exit code 1')
    .option(
      '--timeout <duration>',
      'per-test evaluation bound: a Go duration as opa test takes it (30s, 500ms, 1m) or a number of milliseconds',
      '10s',
    )
    .option(
      '--explain <mode>',
      "opa test's trace mode (fails, full, notes, debug): accepted so its command lines run; the Wasm runner records no trace, so none is printed",
    )
    .option('--v0-compatible', "read modules as Rego v0 (OPA's --v0-compatible); a module importing rego.v1 stays v1")
    .option(
      '-c, --coverage',
      "report which lines the tests reached, per file: opa test --coverage's JSON report (--format text: a summary after the results)",
    )
    .option(
      '--threshold <percent>',
      'with coverage (implied): fail when the total coverage is below this percentage (opa test --threshold)',
    )
    .option(
      '-f, --format <format>',
      "text (opa test's pretty, also accepted), or json (the results as opa test --format json writes them; with --coverage: the coverage report)",
      'text',
    )
    .option(
      '--capabilities <file>',
      'OPA capabilities JSON: policies may call only the builtins it lists; the ones the toolchain lacks are custom builtins, called on the host',
    )
    .option(
      '--builtins <module.mjs>',
      'JavaScript implementations of custom builtins: an ES module whose default export maps names to functions',
    )
    .addOption(ignoreOption())
    .addOption(bundleModeOption())
    .addHelpText(
      'after',
      '\nBuiltins the Guardian refuses (http.send, net.lookup_ip_addr, opa.runtime, …) compile here, as under opa test:\n' +
        'a test that reaches one errors with the reason; replace it with `with http.send as <value or function>`.\n' +
        '`guardian policy build` still refuses them (docs/policy-authoring.md).\n' +
        "\nThe report is opa test's: the tests not passed (all with -v) under their file, then PASS: n/m, FAIL: n/m, SKIPPED: n/m,\n" +
        'ERROR: n/m. A test name defined more than once in a package runs once per definition: test_x, test_x#01, …\n' +
        '\nWith --coverage (or --threshold) the output is the coverage report as opa test --coverage prints it, JSON whatever\n' +
        '--format says unless --format text is given; it feeds the tools written for OPA (e.g. simplecov, cobertura converters).\n' +
        '\nExit codes: 0 every test passed, 1 a test failed, errored or was skipped (with -z a skipped one does not count) or the\n' +
        'coverage is below --threshold, 2 bad usage or unreadable files, 3 the modules do not compile.',
    )
    .action(
      async (
        paths: string[],
        opts: {
          verbose?: boolean;
          run?: string;
          timeout: string;
          explain?: string;
          exitZeroOnSkipped?: boolean;
        } & LoaderFlags &
          CoverageFlags &
          BuiltinFlags,
        command: Command,
      ) => {
        if (opts.format === 'pretty') opts.format = 'text';
        if (opts.format !== 'text' && opts.format !== 'json')
          throw new CliError(`--format must be text or json, not ${JSON.stringify(opts.format)}`, ExitCode.Usage);
        const threshold = opts.threshold !== undefined ? Number(opts.threshold) : 0;
        if (!Number.isFinite(threshold) || threshold < 0 || threshold > 100)
          throw new CliError('--threshold: expected a percentage between 0 and 100', ExitCode.Usage);
        // opa test: a threshold turns coverage on, and with coverage the JSON report is the output whatever
        // --format says (its JSONCoverageReporter); ours prints the text summary when text is asked for.
        const coverage = opts.coverage === true || threshold > 0;
        const json = opts.format === 'json' || (coverage && command.getOptionValueSource('format') === 'default');
        const timeoutMs = await timeoutMillis(opts.timeout);
        if (opts.explain !== undefined) {
          if (!['fails', 'full', 'notes', 'debug'].includes(opts.explain))
            throw new CliError(
              `--explain must be fails, full, notes or debug, not ${JSON.stringify(opts.explain)}`,
              ExitCode.Usage,
            );
          process.stderr.write(
            `guardian: --explain ${opts.explain}: the Wasm test runner records no evaluation trace; results are reported without one\n`,
          );
        }
        const capabilities = opts.capabilities !== undefined ? readCapabilitiesFile(opts.capabilities) : undefined;
        const customBuiltins = opts.builtins !== undefined ? await importCustomBuiltins(opts.builtins) : undefined;
        // Loaded on use: the runner pulls in the whole compiler, which every other CLI command would pay for.
        const {
          coverageThresholdError,
          formatCoverageReport,
          formatPolicyTestReport,
          policyTestReportJson,
          PolicyTestSetupError,
          runPolicyTests,
        } = await import('../../rego/tester/index.ts');
        let report;
        try {
          report = await runPolicyTests({
            paths,
            ...(opts.run !== undefined ? { run: opts.run } : {}),
            timeoutMs,
            v0Compatible: opts.v0Compatible,
            ignore: opts.ignore,
            asBundle: opts.bundle === true,
            coverage,
            ...(capabilities ? { capabilities } : {}),
            ...(customBuiltins ? { customBuiltins } : {}),
          });
        } catch (err) {
          if (err instanceof PolicyTestSetupError)
            throw new CliError(err.message, err.kind === 'compile' ? ExitCode.CompileError : ExitCode.Usage);
          if (err instanceof TypeError && /^custom builtin /.test(err.message))
            throw new CliError(`${opts.builtins}: ${err.message}`, ExitCode.Usage);
          throw err;
        }
        if (json)
          process.stdout.write(
            report.coverage ? `${JSON.stringify(report.coverage, null, 2)}\n` : policyTestReportJson(report),
          );
        else {
          process.stdout.write(formatPolicyTestReport(report, { verbose: opts.verbose === true }));
          if (report.coverage) process.stdout.write(`${formatCoverageReport(report.coverage)}\n`);
        }
        // opa test: any test not passed fails the run, a skipped one too unless --exit-zero-on-skipped.
        const failing = report.results.some(
          (r) =>
            r.status === 'fail' || r.status === 'error' || (r.status === 'skip' && opts.exitZeroOnSkipped !== true),
        );
        const below = report.coverage && coverageThresholdError(report.coverage, threshold, opts.verbose === true);
        if (below) process.stderr.write(`${below}\n`);
        if (failing || below) process.exitCode = ExitCode.Failed;
      },
    );
}
