import { writeFileSync } from 'node:fs';
import type { Command } from 'commander';
import { CliError, ExitCode } from '../exit-codes.ts';
import type { StoreLocationFlags } from '../../store/config.ts';
import { openStoreForCli, withStoreLocation } from './db.ts';

interface ReplayFlags extends StoreLocationFlags {
  against: string;
  session?: string[];
  agent?: string;
  since?: string;
  until?: string;
  method?: string[];
  decision?: string[];
  decidedBy?: string;
  format: string;
  out?: string;
  failOnDiff?: boolean;
  maxSteps: string;
  modifyCapable: string;
  askCapable: string;
  maxDeferrals?: string;
  workers: string;
  progress?: boolean;
  builtins?: string;
}

const collect = (value: string, previous: string[] | undefined): string[] => [...(previous ?? []), value];

/** `--against ./x.tar.gz` that does not exist is a missing input file (2), `--against v404` an unknown revision (1). */
function namesAFile(against: string): boolean {
  return /[\\/]/.test(against) || /\.(tar\.gz|wasm)$/.test(against);
}

function flagBoolean(name: string, v: string): boolean {
  if (v === 'true') return true;
  if (v === 'false') return false;
  throw new CliError(`${name} must be true or false`, ExitCode.Usage);
}

/**
 * `guardian replay --against <revision|file|dir|recorded> [--session ID]… [--agent ID] [--since/--until ISO]
 * [--method M]… [--decision D]… [--decided-by REV] [--format table|json|md|html] [--out FILE] [--fail-on-diff]
 * [--builtins MODULE]`.
 * Exit 0 when the replay completed (1 with --fail-on-diff and a difference, a tampered entry or non-determinism;
 * 1 also when the named revision is not in the registry), 2 on bad usage, an unusable bundle file or builtins
 * module (or a bundle calling custom builtins the module does not supply), 3 when a
 * Rego directory does not compile, 4 when the store is unavailable.
 */
export function registerReplayCommand(program: Command): void {
  withStoreLocation(
    program
      .command('replay')
      .description(
        'Replay recorded steps against a policy revision, bundle file or Rego directory and report what would change',
      ),
  )
    .requiredOption(
      '--against <policy>',
      'registry revision or sha256, bundle file (.tar.gz/.wasm), Rego directory, or "recorded" (determinism check)',
    )
    .option('--session <id>', 'only this session (repeatable)', collect)
    .option('--agent <id>', 'only sessions of this agent')
    .option('--since <iso>', 'only steps recorded at or after this time')
    .option('--until <iso>', 'only steps recorded at or before this time')
    .option('--method <m>', 'only steps of this method (repeatable, or comma-separated)', collect)
    .option('--decision <d>', 'only steps whose recorded decision is this (repeatable)', collect)
    .option('--decided-by <rev>', 'only steps decided by this bundle revision')
    .option('--format <f>', 'table | json | md | html', 'table')
    .option('--out <file>', 'write the report to a file instead of stdout')
    .option('--fail-on-diff', 'exit 1 when any selected step differs, is tampered, or is non-deterministic')
    .option('--max-steps <n>', 'steps listed in the report (the summary counts all)', '10000')
    .option('--modify-capable <bool>', 'assume clients could apply MODIFY, as the live Guardian was configured', 'true')
    .option('--ask-capable <bool>', 'assume clients could relay ASK, as the live Guardian was configured', 'true')
    .option('--max-deferrals <n>', 'the live per-session deferral bound (default 3)')
    .option(
      '--workers <n>',
      "worker threads replaying whole sessions: a number (0 = in-process) or 'auto' (one per core from 20,000 entries)",
      'auto',
    )
    .option('--no-progress', 'no progress bar on stderr')
    .option(
      '--builtins <module.mjs>',
      "the deployment's custom builtins module, as serve takes it (default GUARDIAN_POLICY_BUILTINS)",
    )
    .action(async (flags: ReplayFlags) => {
      // Loaded lazily so other commands do not pay for the policy engine and Rego toolchain imports.
      const replay = await import('../../replay/index.ts');
      /** A replay policy that cannot be had, as the CLI error with its exit code; other errors pass through. */
      const policyFailure = (err: unknown, against: string): unknown => {
        if (!(err instanceof replay.ReplayError)) return err;
        const code =
          err.code === 'policy_compile_error'
            ? ExitCode.CompileError
            : err.code === 'policy_invalid' ||
                err.code === 'builtins_invalid' ||
                (err.code === 'policy_not_found' && namesAFile(against))
              ? ExitCode.Usage
              : ExitCode.Failed;
        return new CliError(err.message, code);
      };
      const format = flags.format as (typeof replay.REPORT_FORMATS)[number];
      if (!replay.REPORT_FORMATS.includes(format))
        throw new CliError(`--format must be one of ${replay.REPORT_FORMATS.join(', ')}`, ExitCode.Usage);
      const maxSteps = Number(flags.maxSteps);
      if (!Number.isInteger(maxSteps) || maxSteps < 0)
        throw new CliError('--max-steps must be a non-negative integer', ExitCode.Usage);
      const maxDeferrals = flags.maxDeferrals === undefined ? undefined : Number(flags.maxDeferrals);
      if (maxDeferrals !== undefined && (!Number.isInteger(maxDeferrals) || maxDeferrals < 0))
        throw new CliError('--max-deferrals must be a non-negative integer', ExitCode.Usage);
      const workers = flags.workers === 'auto' ? 'auto' : Number(flags.workers);
      if (workers !== 'auto' && (!Number.isInteger(workers) || workers < 0))
        throw new CliError("--workers must be 'auto' or a non-negative integer", ExitCode.Usage);
      const client = {
        modifyCapable: flagBoolean('--modify-capable', flags.modifyCapable),
        askCapable: flagBoolean('--ask-capable', flags.askCapable),
      };
      let selection;
      try {
        selection = replay.parseSelection({
          session: flags.session,
          agent: flags.agent,
          since: flags.since,
          until: flags.until,
          method: flags.method,
          decision: flags.decision,
          decidedBy: flags.decidedBy,
        });
      } catch (err) {
        if (err instanceof replay.ReplayError) throw new CliError(err.message, ExitCode.Usage);
        throw err;
      }
      const store = await openStoreForCli(flags);
      const bar = flags.progress === false ? null : replay.progressBar(process.stderr);
      try {
        let policy;
        try {
          const builtins = flags.builtins ?? (process.env.GUARDIAN_POLICY_BUILTINS || undefined);
          policy = await replay.resolveReplayPolicy(store, flags.against, {
            allowPaths: true,
            ...(builtins !== undefined ? { customBuiltinsModule: builtins } : {}),
          });
        } catch (err) {
          throw policyFailure(err, flags.against);
        }
        // `--against recorded` loads each recorded revision as the replay reaches it: a version that does not
        // load (e.g. a custom builtin no module supplies) is refused here, with the same exit codes.
        const report = await replay
          .runReplay({
            store,
            policy,
            selection,
            client,
            maxReportedSteps: maxSteps,
            workers,
            ...(maxDeferrals !== undefined ? { maxDeferralsPerSession: maxDeferrals } : {}),
            ...(bar ? { onProgress: bar.onProgress } : {}),
          })
          .catch((err: unknown) => {
            throw policyFailure(err, flags.against);
          });
        bar?.done();
        const text = replay.renderReport(report, format);
        if (flags.out) writeFileSync(flags.out, text);
        else process.stdout.write(text);
        const s = report.summary;
        if (flags.out)
          process.stderr.write(
            `replay: ${s.compared} compared, ${s.changed} changed, ${s.tampered} tampered, ${s.nondeterministic} non-deterministic → ${flags.out}\n`,
          );
        if (flags.failOnDiff && (s.changed > 0 || s.tampered > 0 || s.nondeterministic > 0))
          process.exitCode = ExitCode.Failed;
      } finally {
        bar?.done();
        await store.close();
      }
    });
}
