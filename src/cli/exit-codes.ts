/** Exit codes every `guardian` command shares. */
export const ExitCode = {
  /** Success. */
  Ok: 0,
  /** The command ran and found a failure: a test failed, a chain is broken, a bundle was refused. */
  Failed: 1,
  /** Bad usage: unknown flag, missing argument, unreadable input file. */
  Usage: 2,
  /** The Rego sources do not compile (parse/compile errors are printed with file:line:col). */
  CompileError: 3,
  /** A required service is unreachable or misconfigured (database, key material). */
  Unavailable: 4,
  /** Unexpected internal error (a bug): the message and stack go to stderr. */
  Internal: 70,
} as const;
export type ExitCode = (typeof ExitCode)[keyof typeof ExitCode];

/** Thrown by commands to end with a specific exit code and message (no stack trace printed). */
export class CliError extends Error {
  constructor(
    message: string,
    readonly exitCode: ExitCode = ExitCode.Failed,
  ) {
    super(message);
    this.name = 'CliError';
  }
}
