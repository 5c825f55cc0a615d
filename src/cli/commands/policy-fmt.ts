// `guardian policy fmt`: like `opa fmt`, prints each module in canonical form (src/rego/format); `-w` rewrites
// the files, `--check` lists the files whose formatting differs, `--diff` prints a unified diff, `--rego-v1`
// reads the modules as Rego v0 and writes them as v1.
import { renameSync, writeFileSync } from 'node:fs';
import type { Command } from 'commander';
import { RegoErrors } from '../../rego/errors.ts';
import { unifiedDiff } from '../../rego/format/diff.ts';
import { formatSource } from '../../rego/format/index.ts';
import { CliError, ExitCode } from '../exit-codes.ts';
import { IgnorePatternError, LoaderError, loadPaths } from '../../rego/bundle/loader.ts';
import { ignoreOption } from './policy-inputs.ts';

interface FmtOptions {
  check?: boolean;
  list?: boolean;
  fail?: boolean;
  diff?: boolean;
  write?: boolean;
  regoV1?: boolean;
  ignore: string[];
}

function regoFiles(paths: string[], ignore: string[]): { path: string; text: string }[] {
  try {
    return loadPaths(paths, { ignore, onlyRego: true }).modules.map((m) => ({ path: m.path, text: m.text }));
  } catch (e) {
    if (e instanceof LoaderError) throw new CliError(e.message.split('\n')[0], ExitCode.Usage);
    if (e instanceof IgnorePatternError) throw new CliError(`--ignore: ${e.message}`, ExitCode.Usage);
    throw e;
  }
}

/** Whether a module that failed to parse as v1 parses as Rego v0 (then the user wants --rego-v1). */
function readsAsV0(file: string, text: string): boolean {
  try {
    formatSource(file, text, { regoV1: true });
    return true;
  } catch {
    return false;
  }
}

function fmt(paths: string[], opts: FmtOptions): void {
  if (opts.write && (opts.check || opts.diff))
    throw new CliError('-w cannot be combined with --check or --diff', ExitCode.Usage);
  // opa fmt -l lists the files to change and, like -w, exits non-zero for them only with --fail.
  const failOnChange = opts.fail === true;
  const files = regoFiles(paths, opts.ignore);
  if (files.length === 0) throw new CliError('no .rego files found', ExitCode.Usage);
  const formatted: { path: string; text: string; out: string }[] = [];
  let errors = 0;
  for (const f of files) {
    try {
      formatted.push({ ...f, out: formatSource(f.path, f.text, { regoV1: opts.regoV1 === true }) });
    } catch (e) {
      if (!(e instanceof RegoErrors)) throw e;
      for (const err of e.errors) process.stderr.write(`${err.format()}\n`);
      errors += e.errors.length;
      if (!opts.regoV1 && readsAsV0(f.path, f.text))
        process.stderr.write(`${f.path}: this is Rego v0; --rego-v1 rewrites it to Rego v1\n`);
    }
  }
  if (errors) throw new CliError(`${errors} error${errors === 1 ? '' : 's'} occurred`, ExitCode.CompileError);
  const differing = formatted.filter((f) => f.out !== f.text);
  if (opts.check || opts.diff || opts.list) {
    for (const f of differing) process.stdout.write(opts.diff ? unifiedDiff(f.path, f.text, f.out) : `${f.path}\n`);
    if (differing.length && (opts.check || opts.diff || failOnChange)) process.exitCode = ExitCode.Failed;
    return;
  }
  if (opts.write) {
    for (const f of differing) {
      // Write then rename, so an interrupted run never leaves a half-written module.
      const tmp = `${f.path}.fmt-${process.pid}`;
      try {
        writeFileSync(tmp, f.out);
        renameSync(tmp, f.path);
      } catch (e) {
        throw new CliError(`cannot write ${f.path}: ${(e as Error).message}`, ExitCode.Usage);
      }
    }
    if (differing.length && failOnChange) process.exitCode = ExitCode.Failed;
    return;
  }
  for (const f of formatted) process.stdout.write(f.out);
}

/** Adds `guardian policy fmt` (like `opa fmt`). */
export function addPolicyFmtCommand(policy: Command): void {
  policy
    .command('fmt')
    .description('format Rego files canonically (like opa fmt): print, rewrite (-w), --check or --diff')
    .argument('<paths...>', '.rego files or directories (every .rego below them)')
    .option('--check', 'list the files whose formatting differs; exit 1 if there are any')
    .option('-l, --list', 'list the files whose formatting differs (opa fmt -l; exit 1 for them only with --fail)')
    .option('-d, --diff', 'print a unified diff of the changes; exit 1 if there are any')
    .option('-w, --write', 'rewrite the files that are not formatted')
    .option('--fail', 'with -l or -w: exit 1 when a file is (to be) reformatted, as opa fmt --fail')
    .option(
      '--rego-v1',
      'read the modules as Rego v0 and write them as Rego v1 (adds import rego.v1, as opa fmt --rego-v1)',
    )
    .addOption(ignoreOption())
    .addHelpText(
      'after',
      '\nWithout --check, --diff or -w the formatted modules are printed to stdout.\n' +
        'Exit codes: 0 done (or nothing to change), 1 --check/--diff (or -l/-w with --fail) found files to change, 2 bad usage or\n' +
        'an unwritable file,\n' +
        '3 a module does not parse.',
    )
    .action((paths: string[], opts: FmtOptions) => fmt(paths, opts));
}
