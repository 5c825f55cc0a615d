// `guardian policy check`: parse + compile every module as `policy build` does (minus planning and Wasm),
// optionally in OPA's strict mode, then lint. As in the other authoring tools, a call of a builtin the
// Guardian refuses compiles (builtins/refused.ts): the lint rule rego_lint_refused_builtin warns that
// `policy build` refuses it.
import { parseModules } from '../ast/index.ts';
import type { BuiltinTable } from '../builtins/capabilities.ts';
import { compileModules } from '../semantic/index.ts';
import { type RegoError, RegoErrors } from '../errors.ts';
import { lintModules, type LintFinding } from './rules.ts';

export { formatFinding, lintModules, type LintCode, type LintFinding } from './rules.ts';

export interface CheckSource {
  file: string;
  text: string;
  /** 0 to read the file as Rego v0 (`--v0-compatible`); default 1. */
  regoVersion?: 0 | 1;
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
 * `strict` compiles in OPA's strict mode (`opa check --strict`; semantic/types.ts CompileOptions.strict).
 * `templateStrings: false` refuses template strings, as a capabilities document without OPA's
 * `template_strings` feature does (`allowsTemplateStrings(capabilities)`).
 */
export function checkPolicies(
  sources: readonly CheckSource[],
  options: {
    strict?: boolean;
    builtins?: BuiltinTable;
    deferredRefused?: ReadonlySet<string>;
    templateStrings?: boolean;
  } = {},
): CheckResult {
  const { modules, errors } = parseModules(sources, { templateStrings: options.templateStrings });
  // Compile only a complete set: with a file missing, references into it would be reported as errors.
  if (errors.length === 0 && modules.length > 0) {
    try {
      compileModules(modules, {
        ...(options.builtins ? { builtins: options.builtins, deferredRefused: options.deferredRefused } : {}),
        refusedBuiltins: 'evaluation-error',
        strict: options.strict === true,
      });
    } catch (e) {
      if (!(e instanceof RegoErrors)) throw e;
      errors.push(...e.errors);
    }
  }
  const v0Files = new Set(sources.filter((s) => s.regoVersion === 0).map((s) => s.file));
  return { errors, findings: lintModules(modules, { v0Files }), modules: modules.length };
}
