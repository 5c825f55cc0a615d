// `guardian policy capabilities`, and the two files the other policy verbs read for custom builtins:
// `--capabilities FILE` (OPA's capabilities JSON: the builtins policies may call, custom ones declared
// with their types) and `--builtins module.mjs` (their JavaScript implementations).
import { readFileSync, writeFileSync } from 'node:fs';
import type { Command } from 'commander';
import type { LoadedPolicy } from '@open-policy-agent/opa-wasm';
import { builtinsNeeded } from '../../policy/wasm-abi.ts';
import { CliError, ExitCode } from '../exit-codes.ts';
import {
  CapabilitiesError,
  capabilitiesDocument,
  readCapabilities,
  type Capabilities,
} from '../../rego/builtins/capabilities.ts';

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

/** `--capabilities FILE`: an OPA capabilities JSON document; a bad file is a usage error naming it. */
export function readCapabilitiesFile(file: string): Capabilities {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (e) {
    throw new CliError(`cannot read ${file}: ${(e as Error).message}`, ExitCode.Usage);
  }
  let doc: unknown;
  try {
    doc = JSON.parse(text);
  } catch (e) {
    throw new CliError(`${file}: invalid JSON: ${(e as Error).message}`, ExitCode.Usage);
  }
  try {
    return readCapabilities(doc);
  } catch (e) {
    if (e instanceof CapabilitiesError) throw new CliError(`${file}: ${e.message}`, ExitCode.Usage);
    throw e;
  }
}

/**
 * `--builtins module.mjs`: an ES module whose default export maps builtin names to functions
 * (`export default { 'custom.func': (x) => … }`), as opa-wasm's `customBuiltins` takes them.
 */
export async function importCustomBuiltins(file: string): Promise<Record<string, unknown>> {
  const { CustomBuiltinsModuleError, importCustomBuiltinsModule } = await import('../../policy/custom-builtins.ts');
  try {
    return await importCustomBuiltinsModule(file);
  } catch (e) {
    if (e instanceof CustomBuiltinsModuleError) throw new CliError(e.message, ExitCode.Usage);
    throw e;
  }
}

/** The builtins a loaded Wasm module dispatches to the host (its `builtins()` export), sorted. */
export const dispatchedBuiltins = (policy: LoadedPolicy): string[] => builtinsNeeded(policy).sort();

/**
 * Refuses, before evaluating, a module that dispatches to a builtin no implementation supplies, as the
 * Guardian refuses such a bundle at load: opa-wasm would throw only when the call is reached.
 */
export function requireImplementations(
  dispatched: string[],
  implementations: Readonly<Record<string, unknown>>[],
  what: string,
): void {
  const implemented = new Set(implementations.flatMap((impls) => Object.keys(impls)));
  const missing = dispatched.filter((name) => !implemented.has(name));
  if (missing.length)
    throw new CliError(
      `${what}: no implementation of builtin${missing.length === 1 ? '' : 's'} ${missing.join(', ')} (custom builtins come from --builtins module.mjs)`,
      ExitCode.Usage,
    );
}
