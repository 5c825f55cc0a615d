import { writeFileSync } from 'node:fs';
import type { Command } from 'commander';
import { CliError, ExitCode } from '../exit-codes.ts';
import { capabilitiesDocument } from '../../rego/builtins/capabilities.ts';

/** Adds `guardian policy capabilities`: prints the OPA capabilities JSON of the Guardian's toolchain. */
export function addPolicyCapabilitiesCommand(policy: Command): void {
  policy
    .command('capabilities')
    .description('print the OPA capabilities document (builtins, features, Wasm ABI) policies are compiled against')
    .option('-o, --output <file>', 'write to a file instead of stdout')
    .action((opts: { output?: string }) => {
      const text = JSON.stringify(capabilitiesDocument(), null, 2) + '\n';
      if (!opts.output) {
        process.stdout.write(text);
        return;
      }
      try {
        writeFileSync(opts.output, text);
      } catch (e) {
        throw new CliError(`cannot write ${opts.output}: ${(e as Error).message}`, ExitCode.Usage);
      }
    });
}
