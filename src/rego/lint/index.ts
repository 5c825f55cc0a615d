// `guardian policy check`: parse + compile every module as `policy build` does (minus planning and Wasm),
// then lint. Compile errors and lint findings are reported together. As in the other authoring tools, a call
// of a builtin the Guardian refuses compiles (builtins/refused.ts): the lint rule rego_lint_refused_builtin
// warns that `policy build` refuses it.
import { parseModules } from '../ast/index.ts';
import type { BuiltinTable } from '../builtins/capabilities.ts';
import { compileModules } from '../semantic/index.ts';
import { type RegoError, RegoErrors } from '../errors.ts';
import { lintModules, type LintFinding } from './rules.ts';

export { formatFinding, lintModules, type LintCode, type LintFinding } from './rules.ts';

export interface CheckSource {
  file: string;
  text: string;
}

export interface CheckResult {
  /** Parse and compile errors (a policy with any of these does not build). */
  errors: RegoError[];
  /** Lint findings of every module that parsed. */
  findings: LintFinding[];
  /** How many modules parsed. */
  modules: number;
}

/**
 * Parses every source (collecting errors across files), compiles them together, and lints what parsed.
 * `templateStrings: false` refuses template strings, as a capabilities document without OPA's
 * `template_strings` feature does (`allowsTemplateStrings(capabilities)`).
 */
export function checkPolicies(
  sources: readonly CheckSource[],
  options: { builtins?: BuiltinTable; deferredRefused?: ReadonlySet<string>; templateStrings?: boolean } = {},
): CheckResult {
  const { modules, errors } = parseModules(sources, { templateStrings: options.templateStrings });
  // Compile only a complete set: with a file missing, references into it would be reported as errors.
  if (errors.length === 0 && modules.length > 0) {
    try {
      compileModules(modules, {
        ...(options.builtins ? { builtins: options.builtins, deferredRefused: options.deferredRefused } : {}),
        refusedBuiltins: 'evaluation-error',
      });
    } catch (e) {
      if (!(e instanceof RegoErrors)) throw e;
      errors.push(...e.errors);
    }
  }
  return { errors, findings: lintModules(modules), modules: modules.length };
}
