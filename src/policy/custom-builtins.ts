// A deployment's custom builtins (docs/policy-authoring.md, "Custom builtins"): an ES module whose default export
// maps builtin names to functions, as opa-wasm's `customBuiltins` takes them. One loader for `guardian serve`
// (GUARDIAN_POLICY_BUILTINS / --builtins), the engine pool's workers (which import the same file by path, since
// functions do not cross a thread) and `guardian policy eval --builtins`.
import { isAbsolute, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { type CustomBuiltins, withCustomBuiltins } from '../rego/builtins/custom.ts';
import type { HostBuiltin, HostBuiltinFactory } from './host-builtins.ts';

/** The builtins module is missing, does not load, or does not default-export a table of functions. */
export class CustomBuiltinsModuleError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'CustomBuiltinsModuleError';
  }
}

/**
 * Imports `file` (relative to `cwd`, default the working directory) and checks its default export: every entry a function,
 * none named after a builtin the toolchain implements (withCustomBuiltins). Throws CustomBuiltinsModuleError
 * with a one-line message naming the file as given.
 */
export async function importCustomBuiltinsModule(file: string, cwd = process.cwd()): Promise<CustomBuiltins> {
  let mod: { default?: unknown };
  try {
    mod = (await import(pathToFileURL(isAbsolute(file) ? file : resolve(cwd, file)).href)) as { default?: unknown };
  } catch (e) {
    // Node names the importing file too ("… imported from dist/policy/…"): noise to the operator.
    const reason = (e instanceof Error ? e.message : String(e)).split('\n')[0].replace(/ imported from \S+$/, '');
    throw new CustomBuiltinsModuleError(`cannot load builtins module ${file}: ${reason}`);
  }
  const table = mod.default;
  if (table === null || typeof table !== 'object' || Array.isArray(table))
    throw new CustomBuiltinsModuleError(`${file}: the default export must map builtin names to functions`);
  for (const [name, impl] of Object.entries(table))
    if (typeof impl !== 'function') throw new CustomBuiltinsModuleError(`${file}: builtin ${name} is not a function`);
  try {
    withCustomBuiltins({}, table as Record<string, unknown>);
  } catch (e) {
    throw new CustomBuiltinsModuleError(`${file}: ${(e as Error).message}`);
  }
  return table as CustomBuiltins;
}

/** `base` (default: the project's host builtins) plus `custom`: a host-builtin table factory for the engine. */
export function hostBuiltinsWithCustom(base: HostBuiltinFactory, custom: CustomBuiltins): HostBuiltinFactory {
  return (clock) => withCustomBuiltins(base(clock) as CustomBuiltins, custom) as Record<string, HostBuiltin>;
}
