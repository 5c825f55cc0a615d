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

/**
 * A custom builtin threw during an evaluation. Its message is OPA's text for a builtin that returns an error
 * (`eval_builtin_error: <name>: <message>`, OPA's topdown errors), which the engine reports as a policy error;
 * the Guardian's fail-closed DENY carries it in its reasoning, which the agent reads, so only a safe summary
 * of what the builtin threw is kept (builtinFailure).
 */
export class CustomBuiltinError extends Error {
  constructor(
    readonly builtin: string,
    thrown: unknown,
  ) {
    super(`eval_builtin_error: ${builtin}: ${builtinFailure(thrown)}`);
    this.name = 'CustomBuiltinError';
  }
}

const MAX_FAILURE_CHARS = 200;

/**
 * What a thrown value says, fit for an answer: its message's first line (a stack trace, or the lines of context
 * some errors append, never), credentials in URLs and `password=…`-style pairs masked, at most 200 characters.
 */
export function builtinFailure(thrown: unknown): string {
  let text: string;
  if (typeof thrown === 'string') text = thrown;
  else if (thrown instanceof Error) text = thrown.message;
  else if (
    thrown !== null &&
    typeof thrown === 'object' &&
    typeof (thrown as { message?: unknown }).message === 'string'
  )
    text = (thrown as { message: string }).message;
  else text = `threw ${thrown === null ? 'null' : typeof thrown}`;
  text = (text.split(/\r?\n/)[0] ?? '')
    .replace(/\p{Cc}/gu, ' ')
    .replace(/([a-z][a-z0-9+.-]*:\/\/)[^\s/@]+@/gi, '$1[redacted]@')
    .replace(/\b(bearer|basic)\s+[A-Za-z0-9._~+/=-]+/gi, '$1 [redacted]')
    .replace(
      /\b(password|passwd|pwd|secret|token|api[_-]?key|access[_-]?key|authorization|credentials?)(["']?\s*[=:]\s*)("[^"]*"|'[^']*'|[^\s,;&)\]}]+)/gi,
      '$1$2[redacted]',
    )
    .trim();
  if (text.length > MAX_FAILURE_CHARS) text = `${text.slice(0, MAX_FAILURE_CHARS - 1)}…`;
  return text || 'no message';
}

/**
 * `base` (default: the project's host builtins) plus `custom`: a host-builtin table factory for the engine.
 * Whatever a custom builtin throws becomes a CustomBuiltinError naming it.
 */
export function hostBuiltinsWithCustom(base: HostBuiltinFactory, custom: CustomBuiltins): HostBuiltinFactory {
  return (clock) => {
    const table = withCustomBuiltins(base(clock) as CustomBuiltins, custom) as Record<string, HostBuiltin>;
    for (const name of Object.keys(custom)) {
      const impl = table[name];
      table[name] = (...args) => {
        try {
          return impl(...args);
        } catch (e) {
          throw new CustomBuiltinError(name, e);
        }
      };
    }
    return table;
  };
}
