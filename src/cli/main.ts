import { Command, CommanderError } from 'commander';
import { CliError, ExitCode } from './exit-codes.ts';
import { packageVersion } from '../package-version.ts';

/** Set to 1 to have an internal error (a bug) print its full stack trace. */
export const DEBUG_ENV = 'GUARDIAN_DEBUG';

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
    name: 'agbom',
    summary: "Export and diff a session's Agent Bill of Materials (CycloneDX, SPDX, SWID)",
    load: async () => (await import('./commands/agbom.ts')).registerAgbomCommands,
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

const HELP_EPILOGUE = `
Exit codes:
  0   success
  1   the command ran and found a failure (a test failed, a chain is broken, a bundle was refused)
  2   usage error: unknown flag, missing argument, unreadable or malformed input file
  3   Rego compile error
  4   a required service or key is unavailable (database, key material)
  70  internal error (a bug)

Environment:
  DATABASE_URL      Postgres connection string (default: embedded PGlite under --data-dir)
  ${DEBUG_ENV}=1  print the stack trace of an internal error (exit 70)`;

function rootProgram(): Command {
  return new Command('guardian')
    .description('ACS Guardian: evaluates agent steps against Rego policies compiled to WebAssembly')
    .version(packageVersion(), '-V, --version', 'print the version of acs-guardian')
    .addHelpText('after', HELP_EPILOGUE);
}

/** `policy build` for the `build` command under `policy`: how the user types it. */
function commandPath(cmd: Command): string {
  const names: string[] = [];
  for (let c: Command | null = cmd; c?.parent; c = c.parent) names.unshift(c.name());
  return names.join(' ');
}

/**
 * Every command throws instead of exiting (main() returns the exit code) and reports a usage error on one
 * line, `guardian: <commander's message>; run 'guardian <cmd> --help' for usage`, like every other user error.
 */
function reportUsageErrorsOnOneLine(cmd: Command): void {
  const help = `guardian${commandPath(cmd) ? ` ${commandPath(cmd)}` : ''} --help`;
  cmd.exitOverride().configureOutput({
    outputError: (message, write) => {
      const text = message
        .trim()
        .replace(/^error: /, '')
        .split('\n')
        .map((line) => line.trim())
        .join(' ');
      write(`guardian: ${text}; run '${help}' for usage\n`);
    },
  });
  cmd.commands.forEach(reportUsageErrorsOnOneLine);
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
  // Commander's settings are inherited only by commands added after them: set them on each command.
  reportUsageErrorsOnOneLine(program);
  return program;
}

const USAGE_ERROR_CODES = new Set([
  'ENOENT',
  'EACCES',
  'EPERM',
  'EISDIR',
  'ENOTDIR',
  'EEXIST',
  'EROFS',
  'ENAMETOOLONG',
  'ELOOP',
]);
const UNAVAILABLE_ERROR_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ENOTFOUND',
  'EAI_AGAIN',
  'ETIMEDOUT',
  'EHOSTUNREACH',
  'ENETUNREACH',
]);

/**
 * The exit code of an error no command turned into a CliError. A file-system or network error from Node
 * (an `errno` code) names the user's file or service, not a bug; anything else is a bug.
 */
function exitCodeOf(err: unknown): ExitCode {
  const code = err instanceof Error ? (err as NodeJS.ErrnoException).code : undefined;
  if (code !== undefined && USAGE_ERROR_CODES.has(code)) return ExitCode.Usage;
  if (code !== undefined && UNAVAILABLE_ERROR_CODES.has(code)) return ExitCode.Unavailable;
  return ExitCode.Internal;
}

/**
 * The stderr text for an error no command expected. A bug gets one line and a hint; its stack only with
 * GUARDIAN_DEBUG=1, because a trace helps whoever fixes the bug, not whoever ran the command.
 */
export function describeUnexpectedError(err: unknown, env: NodeJS.ProcessEnv = process.env): string {
  const message = err instanceof Error ? err.message : String(err);
  if (exitCodeOf(err) !== ExitCode.Internal) return `guardian: ${message.split('\n')[0]}\n`;
  const debug = env[DEBUG_ENV] !== undefined && env[DEBUG_ENV] !== '' && env[DEBUG_ENV] !== '0';
  if (debug) return `guardian: internal error: ${err instanceof Error ? (err.stack ?? message) : message}\n`;
  const name = err instanceof Error ? `${err.name}: ` : '';
  return `guardian: internal error: ${name}${message.split('\n')[0]} (a bug; set ${DEBUG_ENV}=1 for the stack trace)\n`;
}

/**
 * Runs `run` with an error thrown outside its promise (an emitter's 'error' event, a timer, a rejection no one
 * awaits) reported like any other: one line and its exit code, not Node's default stack trace and exit 1.
 */
export async function withCrashReport<T>(run: () => Promise<T>): Promise<T> {
  const crash = (err: unknown): void => {
    process.stderr.write(describeUnexpectedError(err));
    process.exit(exitCodeOf(err));
  };
  process.on('uncaughtException', crash);
  process.on('unhandledRejection', crash);
  try {
    return await run();
  } finally {
    process.off('uncaughtException', crash);
    process.off('unhandledRejection', crash);
  }
}

const quietOnClosedPipe = new WeakSet<NodeJS.WriteStream>();

/**
 * A reader that stops early (`guardian policy capabilities | head`) closes the pipe: that ends the output,
 * as it ends `cat`'s, and is not an error to report with Node's stack trace. Any other write error still is.
 */
function endQuietlyWhenReaderLeaves(stream: NodeJS.WriteStream): void {
  if (quietOnClosedPipe.has(stream)) return;
  quietOnClosedPipe.add(stream);
  stream.on('error', (err: NodeJS.ErrnoException) => {
    if (err.code !== 'EPIPE') throw err;
    process.exit(typeof process.exitCode === 'number' ? process.exitCode : ExitCode.Ok);
  });
}

/** Runs the CLI and returns the process exit code (see exit-codes.ts). */
export async function main(argv: string[]): Promise<number> {
  endQuietlyWhenReaderLeaves(process.stdout);
  const words = argv.slice(2).filter((arg) => !arg.startsWith('-'));
  // `guardian help keys` needs the keys group loaded as much as `guardian keys --help` does.
  const group = words[0] === 'help' ? words[1] : words[0];
  try {
    const program = await buildProgram(commandGroups.some((g) => g.name === group) ? group : '');
    await withCrashReport(() => program.parseAsync(argv));
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
    process.stderr.write(describeUnexpectedError(err));
    return exitCodeOf(err);
  }
}
