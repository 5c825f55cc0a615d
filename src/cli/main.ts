import { Command, CommanderError } from 'commander';
import { CliError, ExitCode } from './exit-codes.ts';

type Register = (program: Command) => void;

/**
 * Top-level command groups. Each module is imported only when its group runs: the groups pull in the
 * compiler, the stores or the crypto library, and a CLI start must not pay for all of them.
 */
const commandGroups: { name: string; summary: string; load: () => Promise<Register> }[] = [
  {
    name: 'serve',
    summary: 'Serve ACS over HTTP or stdio',
    load: async () => (await import('./commands/serve.ts')).registerServeCommand,
  },
  {
    name: 'policy',
    summary: 'Build, evaluate, inspect and test Rego policy bundles',
    load: async () => (await import('./commands/policy.ts')).registerPolicyCommands,
  },
  {
    name: 'bundle',
    summary: 'Policy bundle registry, activation, rollback, signing and shadow mode',
    load: async () => (await import('./commands/bundle.ts')).registerBundleCommands,
  },
  {
    name: 'db',
    summary: 'Database schema and status',
    load: async () => (await import('./commands/db.ts')).registerDbCommands,
  },
  {
    name: 'audit',
    summary: 'Verify, export, inspect and prune the hash-chained audit log',
    load: async () => (await import('./commands/audit.ts')).registerAuditCommands,
  },
  {
    name: 'keys',
    summary: 'Manage signature keys',
    load: async () => (await import('./commands/keys.ts')).registerKeysCommands,
  },
  {
    name: 'replay',
    summary: 'Replay recorded steps against another policy version',
    load: async () => (await import('./commands/replay.ts')).registerReplayCommand,
  },
];

function rootProgram(): Command {
  return new Command('guardian')
    .description('ACS Guardian: evaluates agent steps against Rego policies compiled to WebAssembly')
    .showHelpAfterError()
    .exitOverride();
}

/**
 * Builds the `guardian` command tree. With `only`, just that group is loaded (the others are listed
 * by name so help and unknown-command errors still work); without it, every group is loaded.
 */
export async function buildProgram(only?: string): Promise<Command> {
  const program = rootProgram();
  for (const group of commandGroups) {
    if (only === undefined || group.name === only) {
      (await group.load())(program);
    } else {
      program.command(group.name).description(group.summary).allowUnknownOption().helpOption(false);
    }
  }
  // exitOverride is inherited only by commands added after it; make every sub-command throw instead of exiting.
  const override = (cmd: Command): void => {
    cmd.exitOverride();
    cmd.commands.forEach(override);
  };
  override(program);
  return program;
}

/** Runs the CLI and returns the process exit code (see exit-codes.ts). */
export async function main(argv: string[]): Promise<number> {
  const words = argv.slice(2).filter((arg) => !arg.startsWith('-'));
  // `guardian help keys` needs the keys group loaded as much as `guardian keys --help` does.
  const group = words[0] === 'help' ? words[1] : words[0];
  const program = await buildProgram(commandGroups.some((g) => g.name === group) ? group : '');
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
    process.stderr.write(
      `guardian: internal error: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`,
    );
    return ExitCode.Internal;
  }
}
