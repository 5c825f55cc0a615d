// The compile stage's output: rules grouped into rule sets by data path, with bodies rewritten so the
// planner sees resolved refs (`data.pkg.rule`), unique local names, and safely ordered expressions.
import type { Body, Location, Module, Term } from '../ast/types.ts';
import type { BuiltinTable } from '../builtins/capabilities.ts';

export type RuleKind = 'complete' | 'partial_set' | 'partial_object' | 'function';

/** One rule definition after rewriting; `else` chains keep their order. */
export interface CompiledRule {
  kind: RuleKind;
  default: boolean;
  /** Function parameters (patterns), already renamed. */
  args: Term[];
  /** Partial set element or partial object key. */
  key?: Term;
  /** Partial objects: the head's ref elements below the rule set path (`a.b[x].c := v` → [x, "c"]); `key` is the first. */
  keyPath?: Term[];
  /** Partial objects whose leaf at `keyPath` is a set (`p[q] contains r`): the element added. */
  element?: Term;
  /** Complete/function value or partial object value. */
  value?: Term;
  body: Body;
  else?: CompiledRule;
  location?: Location;
  file: string;
}

/** All definitions of one document path: OPA plans each rule set as one IR function. */
export interface RuleSet {
  /** Path below `data`, e.g. ["acs", "decision"]. */
  path: string[];
  kind: RuleKind;
  /** Number of function arguments (0 for non-functions). */
  arity: number;
  rules: CompiledRule[];
  defaultRule?: CompiledRule;
  location?: Location;
}

export interface CompileOptions {
  /** Maximum errors collected before stopping (OPA: 10). */
  maxErrors?: number;
  /**
   * OPA's compiler strict mode (`opa check --strict`, docs "Strict Mode"): unused imports, assigned vars and
   * function arguments are errors; so are, in Rego v0 modules, duplicate imports, rules and locals named
   * `input`/`data`, and deprecated builtins, which Rego v1 modules refuse anyway.
   */
  strict?: boolean;
  /** The builtins policies may call (a capabilities document's); default: every builtin of the toolchain. */
  builtins?: BuiltinTable;
  /**
   * What a call to a builtin the Guardian refuses (declarations.ts refusedBuiltins) does: `compile-error` (default;
   * `guardian policy build`, the Guardian), or `evaluation-error` (the authoring tools: it compiles against OPA's
   * declaration to a host call, which halts when reached unless a `with` replaces it; builtins/refused.ts).
   */
  refusedBuiltins?: 'compile-error' | 'evaluation-error';
  /**
   * With `builtins` from a capabilities document: the refused builtins it lists (Capabilities.refused). Under
   * `evaluation-error` they are the only ones deferred, under `compile-error` the only ones refused by name; a call
   * of a refused builtin the document does not list is OPA's `undefined function`, as for any unlisted builtin.
   * Without `builtins`, every refused builtin is deferred (or refused by name).
   */
  deferredRefused?: ReadonlySet<string>;
  /**
   * The base documents the program will be evaluated against (`opa eval -d`, `opa test`): a rule at a path they
   * occupy is `conflicting rule for data path p/q found` (OPA's WithPathConflictsCheck). Unset: no check, as for
   * `opa build`, which ships data and policy together without comparing them.
   */
  data?: Readonly<Record<string, unknown>>;
}

export interface CompiledProgram {
  modules: readonly Module[];
  ruleSets: readonly RuleSet[];
  /** Rule sets by `path.join('/')`. */
  ruleSetsByPath: ReadonlyMap<string, RuleSet>;
  /** Package paths (below `data`) of every module. */
  packages: readonly string[][];
  /** Builtin names called anywhere in the program (OPA names). */
  builtinsUsed: ReadonlySet<string>;
  /** The builtins the program was compiled against (the planner declares calls from it). */
  builtins: BuiltinTable;
  /** Each rule set's dependencies (checks.ts ruleDependencies): the recursion check's graph, kept for builds. */
  dependencies: ReadonlyMap<RuleSet, readonly RuleSet[]>;
}

export const pathKey = (path: readonly string[]): string => path.join('/');
