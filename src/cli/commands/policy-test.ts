import type { Command } from 'commander';
import { CliError, ExitCode } from '../exit-codes.ts';
import { bundleModeOption, ignoreOption } from './policy-inputs.ts';

type LoaderFlags = { v0Compatible?: boolean; ignore: string[]; bundle?: boolean };

/** Adds `guardian policy test <paths...>` to the `policy` command group (like `opa test`). */
export function addPolicyTestCommand(policy: Command): void {
  policy
    .command('test')
    .description('Run Rego unit tests (test_* rules; todo_test_* are reported as skipped) through the Wasm compiler')
    .argument(
      '<paths...>',
      'files or directories: every .rego, .json, .yaml/.yml below them (data mounted at its directory)',
    )
    .option('-v, --verbose', 'print every test and failure details')
    .option('--run <regex>', 'only run tests whose full name (data.pkg.test_x) matches')
    .option('--timeout <ms>', 'per-test evaluation bound in milliseconds', '10000')
    .option('--v0-compatible', "read modules as Rego v0 (OPA's --v0-compatible); a module importing rego.v1 stays v1")
    .addOption(ignoreOption())
    .addOption(bundleModeOption())
    .action(async (paths: string[], opts: { verbose?: boolean; run?: string; timeout: string } & LoaderFlags) => {
      let run: RegExp | undefined;
      if (opts.run !== undefined) {
        try {
          run = new RegExp(opts.run);
        } catch (err) {
          throw new CliError(`--run: invalid regular expression: ${(err as Error).message}`, ExitCode.Usage);
        }
      }
      const timeoutMs = Number(opts.timeout);
      if (!Number.isFinite(timeoutMs) || timeoutMs <= 0)
        throw new CliError('--timeout: expected a positive number of milliseconds', ExitCode.Usage);
      // Loaded on use: the runner pulls in the whole compiler, which every other CLI command would pay for.
      const { formatPolicyTestReport, PolicyTestSetupError, runPolicyTests } = await import(
        '../../rego/tester/index.ts'
      );
      let report;
      try {
        report = await runPolicyTests({
          paths,
          ...(run ? { run } : {}),
          timeoutMs,
          v0Compatible: opts.v0Compatible,
          ignore: opts.ignore,
          asBundle: opts.bundle === true,
        });
      } catch (err) {
        if (err instanceof PolicyTestSetupError)
          throw new CliError(err.message, err.kind === 'compile' ? ExitCode.CompileError : ExitCode.Usage);
        throw err;
      }
      process.stdout.write(formatPolicyTestReport(report, { verbose: opts.verbose === true }) + '\n');
      if (report.failed > 0) process.exitCode = ExitCode.Failed;
    });
}
