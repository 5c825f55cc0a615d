// The Rego AST: the contract between the parser (ast/), the semantic stage (semantic/) and the planner
// (planner/). It follows the shape of OPA's ast package so OPA's documentation of the language applies.
// Contract rule: add optional fields freely; never change or remove an existing one without updating
// every stage that reads it.

/** A position in a source file; rows and columns start at 1. */
export interface Location {
  file: string;
  row: number;
  col: number;
  /** Byte offset of the start in the file's text, when known. */
  offset?: number;
  /** The source text of the node, when the parser kept it (used in error messages). */
  text?: string;
}

export type Term =
  | NullTerm
  | BooleanTerm
  | NumberTerm
  | StringTerm
  | VarTerm
  | RefTerm
  | ArrayTerm
  | ObjectTerm
  | SetTerm
  | ArrayComprehensionTerm
  | SetComprehensionTerm
  | ObjectComprehensionTerm
  | CallTerm
  | TemplateStringTerm;

interface TermBase {
  location?: Location;
}

export interface NullTerm extends TermBase {
  type: 'null';
}
export interface BooleanTerm extends TermBase {
  type: 'boolean';
  value: boolean;
}
/** Numbers keep their literal text: Rego numbers are arbitrary-precision (`1e400`, `12345678901234567890`). */
export interface NumberTerm extends TermBase {
  type: 'number';
  value: string;
}
export interface StringTerm extends TermBase {
  type: 'string';
  value: string;
  /** True when written as a `raw string` literal (matters only for formatting). */
  raw?: boolean;
}
/**
 * A variable. `_` is the wildcard; the parser renames each occurrence to a unique `$wildcardN`-style name
 * only if `wildcard` is kept true, so later stages can recognise it.
 */
export interface VarTerm extends TermBase {
  type: 'var';
  value: string;
  wildcard?: boolean;
  /** Set by the compile stage when it renamed a local (the original name, for error messages). */
  original?: string;
}
/**
 * A reference: head term then path elements. `input.a[x]` is `[var input, string "a", var x]`;
 * `data.p.q` is `[var data, string "p", string "q"]`; `f(x).y` has a call term as its head.
 */
export interface RefTerm extends TermBase {
  type: 'ref';
  value: Term[];
}
export interface ArrayTerm extends TermBase {
  type: 'array';
  value: Term[];
}
export interface ObjectTerm extends TermBase {
  type: 'object';
  value: [Term, Term][];
}
export interface SetTerm extends TermBase {
  type: 'set';
  value: Term[];
}
export interface ArrayComprehensionTerm extends TermBase {
  type: 'arraycomprehension';
  term: Term;
  body: Body;
}
export interface SetComprehensionTerm extends TermBase {
  type: 'setcomprehension';
  term: Term;
  body: Body;
}
export interface ObjectComprehensionTerm extends TermBase {
  type: 'objectcomprehension';
  key: Term;
  value: Term;
  body: Body;
}
/**
 * A call used as a term, e.g. `count(x)` inside `y := count(x) + 1`. `operator` is a ref (`count`,
 * `data.pkg.f`, `array.concat`). Infix operators are calls too: `a + b` is `plus(a, b)`, `a == b` is
 * `equal(a, b)`, `a | b` is `or(a, b)`, `x in xs` is `internal.member_2(x, xs)`.
 */
export interface CallTerm extends TermBase {
  type: 'call';
  operator: RefTerm;
  args: Term[];
}

/**
 * A template string, `$"hello {input.name}!"` or the raw multi-line `` $`...{x}...` `` (OPA's TemplateString).
 * Parts are string terms for the text between expressions, the expressions (`{input.name}`) as `Expr`s, and,
 * as OPA's parser keeps them, a lone scalar literal expression (`{1}`) as its term. The compile stage lowers
 * it to a call of `internal.template_string` (semantic/template-strings.ts), so no later stage sees it.
 */
export interface TemplateStringTerm extends TermBase {
  type: 'templatestring';
  /** The raw backtick form, which may span lines and has no escapes but `\{`. */
  multiLine: boolean;
  parts: TemplatePart[];
}

/** A part of a template string: a term (text, or a scalar literal) or an expression (`Expr`, which has `terms`). */
export type TemplatePart = Term | Expr;

/** Whether a template-string part is an expression (`{expr}`) rather than a term. */
export function isExprPart(p: TemplatePart): p is Expr {
  return 'terms' in p;
}

/** `with <target> as <value>` on an expression. */
export interface With {
  target: RefTerm;
  value: Term;
  location?: Location;
}

/** `some x, y` (declaration only); `some x in xs` / `some k, v in xs` is parsed into `SomeInExpr`. */
export interface SomeDecl {
  type: 'somedecl';
  vars: VarTerm[];
}

/** `some [k,] v in domain` */
export interface SomeIn {
  type: 'somein';
  key?: Term;
  value: Term;
  domain: Term;
}

/** `every [k,] v in domain { body }` */
export interface Every {
  type: 'every';
  key?: Term;
  value: Term;
  domain: Term;
  body: Body;
}

/** What an expression holds. */
export type ExprTerms =
  | { type: 'term'; term: Term } // a bare term: `input.allowed`, `x`, `count(y) > 0` is a call, not this
  | { type: 'call'; operator: RefTerm; args: Term[] } // `f(a, b)`, `a == b`, `x := y` (operator `assign`), `x = y` (operator `eq`)
  | SomeDecl
  | SomeIn
  | Every;

export interface Expr {
  /** Position of the expression within its body (0-based), assigned by the parser. */
  index: number;
  negated: boolean;
  terms: ExprTerms;
  with: With[];
  /** True for expressions the compiler introduced (not written by the author). */
  generated?: boolean;
  location?: Location;
}

export type Body = Expr[];

/**
 * A rule head. OPA 1.x models every head as a reference: `p` is `[p]`, `a.b[x]` is
 * `[a, "b", x]`. Legacy forms map as: `p contains x` → kind 'multi' with key x;
 * `p[k] := v` → reference `[p, k]` kind 'single' with value v.
 */
export interface Head {
  /** The head reference (first element a var naming the rule, then path elements). */
  reference: Term[];
  /** Function arguments, for `f(x, y) := z`. */
  args?: Term[];
  /** Partial set rules (`p contains x`): the element. */
  key?: Term;
  /** The rule's value; for `p if {…}` and `p := true` forms the parser stores boolean `true`. */
  value?: Term;
  /** `:=` was used (assignment) rather than `=`. */
  assign: boolean;
  /** 'single' for complete/partial-object/function rules, 'multi' for `contains` (partial set) rules. */
  kind: 'single' | 'multi';
  location?: Location;
}

export interface Annotations {
  scope: 'package' | 'rule' | 'document' | 'subpackages';
  title?: string;
  description?: string;
  entrypoint?: boolean;
  organizations?: string[];
  related_resources?: { ref: string; description?: string }[];
  authors?: { name?: string; email?: string }[];
  schemas?: unknown[];
  /** The `custom:` map (e.g. policy_id, rule_id, reason_code for the ACS library). */
  custom?: Record<string, unknown>;
  location?: Location;
}

export interface Rule {
  default: boolean;
  head: Head;
  body: Body;
  /** `else [= value] [if] { body }` chain. */
  else?: Rule;
  annotations?: Annotations[];
  location?: Location;
}

export interface Import {
  /** `data.x.y` or `input.x` or `future.keywords.in` or `rego.v1`. */
  path: RefTerm;
  alias?: string;
  location?: Location;
}

export interface Package {
  /** Path including the leading `data` var: `package a.b` → `[var data, "a", "b"]`. */
  path: Term[];
  location?: Location;
}

export interface Comment {
  text: string;
  location: Location;
}

export interface Module {
  package: Package;
  imports: Import[];
  rules: Rule[];
  /** Package-scoped annotations (METADATA blocks before `package`). */
  annotations: Annotations[];
  comments: Comment[];
  /** The file name as given to the parser. */
  file: string;
  /** 0 for a module read as Rego v0 (OPA's v0 syntax and keywords), else 1. */
  regoVersion: 0 | 1;
}
