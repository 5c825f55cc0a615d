import { Command, CommanderError } from 'commander';
import { CliError, ExitCode } from './exit-codes.ts';
import { registerServeCommand } from './commands/serve.ts';
import { registerPolicyCommands } from './commands/policy.ts';
import { registerDbCommands } from './commands/db.ts';
import { registerAuditCommands } from './commands/audit.ts';
import { registerKeysCommands } from './commands/keys.ts';
import { registerBundleCommands } from './commands/bundle.ts';
import { registerReplayCommand } from './commands/replay.ts';

/** Builds the `guardian` command tree; each feature registers its own sub-commands. */
export function buildProgram(): Command {
  const program = new Command('guardian')
    .description('ACS Guardian: evaluates agent steps against Rego policies compiled to WebAssembly')
    .showHelpAfterError()
    .exitOverride();
  registerServeCommand(program);
  registerPolicyCommands(program);
  registerBundleCommands(program);
  registerDbCommands(program);
  registerAuditCommands(program);
  registerKeysCommands(program);
  registerReplayCommand(program);
  return program;
}

/** Runs the CLI and returns the process exit code (see exit-codes.ts). */
export async function main(argv: string[]): Promise<number> {
  const program = buildProgram();
  try {
    await program.parseAsync(argv);
    return typeof process.exitCode === 'number' ? process.exitCode : ExitCode.Ok;
  } catch (err) {
    if (err instanceof CommanderError) {
      // --help and --version end here with code 0; usage errors were already printed by commander.
      return err.exitCode === 0 ? ExitCode.Ok : ExitCode.Usage;
    }
    if (err instanceof CliError) {
      process.stderr.write(`guardian: ${err.message}\n`);
      return err.exitCode;
    }
    process.stderr.write(`guardian: internal error: ${err instanceof Error ? err.stack ?? err.message : String(err)}\n`);
    return ExitCode.Internal;
  }
}
