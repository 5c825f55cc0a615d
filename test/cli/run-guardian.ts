// Runs `guardian <args>` in this process through main(), capturing stdout/stderr, with process.exitCode
// reset around the call (a command sets it; it must not leak into the next run).
import { main } from '../../src/cli/main.ts';

export interface GuardianRun {
  code: number;
  stdout: string;
  stderr: string;
}

export async function runGuardian(args: string[]): Promise<GuardianRun> {
  let stdout = '';
  let stderr = '';
  const write = { out: process.stdout.write, err: process.stderr.write };
  process.stdout.write = ((c: string | Uint8Array) => ((stdout += String(c)), true)) as typeof write.out;
  process.stderr.write = ((c: string | Uint8Array) => ((stderr += String(c)), true)) as typeof write.err;
  const saved = process.exitCode;
  process.exitCode = undefined;
  try {
    return { code: await main(['node', 'guardian', ...args]), stdout, stderr };
  } finally {
    process.stdout.write = write.out;
    process.stderr.write = write.err;
    process.exitCode = saved;
  }
}
