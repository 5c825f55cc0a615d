// Lint rules of `guardian policy check --lint` (docs/policy-check.md), the Guardian's own advice beyond OPA's
// checks. They run on parsed modules, so a policy that fails to compile still gets its findings reported next
// to the compile errors.
import {
  isExprPart,
  type Body,
  type Expr,
  type Location,
  type Module,
  type RefTerm,
  type Rule,
  type Term,
} from '../ast/types.ts';
import { builtinDecls } from '../builtins/declarations.ts';
import { refusalReason } from '../semantic/checks.ts';
import { operatorName } from '../semantic/terms.ts';

export type LintCode =
  | 'rego_lint_builtin_shadowed'
  | 'rego_lint_deprecated_builtin'
  | 'rego_lint_redundant_import'
  | 'rego_lint_refused_builtin';

export interface LintFinding {
  code: LintCode;
  message: string;
  location: Location;
}

/** `file:row:col: code: message`, the same shape as compile errors. */
export function formatFinding(f: LintFinding): string {
  return `${f.location.file}:${f.location.row}:${f.location.col}: ${f.code}: ${f.message}`;
}

/** Builtins OPA deprecated and removed from Rego v1, with the replacement to use. */
const DEPRECATED_BUILTINS: ReadonlyMap<string, string> = new Map([
  ['any', 'use `some x in xs` / `in`, or a comprehension'],
  ['all', 'use `every`, or a comprehension'],
  ['re_match', 'use regex.match'],
  ['set_diff', 'use the `-` operator'],
  ['net.cidr_overlap', 'use net.cidr_contains'],
  ['cast_array', 'use an array comprehension or is_array'],
  ['cast_boolean', 'use is_boolean'],
  ['cast_null', 'use is_null'],
  ['cast_object', 'use is_object'],
  ['cast_set', 'use a set comprehension or is_set'],
  ['cast_string', 'use is_string'],
]);

/** Names a rule, function or import alias must not take: builtin names and dotted builtin namespaces. */
function builtinNames(): { exact: Set<string>; namespaces: Set<string> } {
  const exact = new Set<string>();
  const namespaces = new Set<string>();
  for (const name of builtinDecls.keys()) {
    if (name.startsWith('internal.')) continue;
    const dot = name.indexOf('.');
    if (dot < 0) exact.add(name);
    else namespaces.add(name.slice(0, dot));
  }
  // Operators are builtins (`plus`, `equal`…) but only reachable through their infix form; shadowing
  // them by name is legal and harmless, so they are not reported.
  for (const op of [
    'eq',
    'assign',
    'equal',
    'neq',
    'lt',
    'lte',
    'gt',
    'gte',
    'plus',
    'minus',
    'mul',
    'div',
    'rem',
    'and',
    'or',
  ])
    exact.delete(op);
  return { exact, namespaces };
}

let cachedBuiltinNames: ReturnType<typeof builtinNames> | undefined;

function fallbackLocation(m: Module, loc: Location | undefined): Location {
  return loc ?? m.package.location ?? { file: m.file, row: 1, col: 1 };
}

/** Calls every term below `t` (including `t`), depth-first; `visit` returns false to skip children. */
function walkTerm(t: Term, visit: (t: Term) => void): void {
  visit(t);
  switch (t.type) {
    case 'ref':
    case 'array':
    case 'set':
      for (const c of t.value) walkTerm(c, visit);
      break;
    case 'object':
      for (const [k, v] of t.value) {
        walkTerm(k, visit);
        walkTerm(v, visit);
      }
      break;
    case 'arraycomprehension':
    case 'setcomprehension':
      walkTerm(t.term, visit);
      walkBody(t.body, visit);
      break;
    case 'objectcomprehension':
      walkTerm(t.key, visit);
      walkTerm(t.value, visit);
      walkBody(t.body, visit);
      break;
    case 'call':
      walkTerm(t.operator, visit);
      for (const a of t.args) walkTerm(a, visit);
      break;
    case 'templatestring':
      for (const p of t.parts)
        if (isExprPart(p)) walkExpr(p, visit);
        else walkTerm(p, visit);
      break;
    default:
      break;
  }
}

function walkExpr(e: Expr, visit: (t: Term) => void): void {
  const x = e.terms;
  switch (x.type) {
    case 'term':
      walkTerm(x.term, visit);
      break;
    case 'call':
      walkTerm(x.operator, visit);
      for (const a of x.args) walkTerm(a, visit);
      break;
    case 'somedecl':
      for (const v of x.vars) walkTerm(v, visit);
      break;
    case 'somein':
      if (x.key) walkTerm(x.key, visit);
      walkTerm(x.value, visit);
      walkTerm(x.domain, visit);
      break;
    case 'every':
      if (x.key) walkTerm(x.key, visit);
      walkTerm(x.value, visit);
      walkTerm(x.domain, visit);
      walkBody(x.body, visit);
      break;
  }
  for (const w of e.with) {
    walkTerm(w.target, visit);
    walkTerm(w.value, visit);
  }
}

function walkBody(body: Body, visit: (t: Term) => void): void {
  for (const e of body) walkExpr(e, visit);
}

function walkRule(rule: Rule, visit: (t: Term) => void): void {
  for (let r: Rule | undefined = rule; r; r = r.else) {
    for (const t of r.head.reference) walkTerm(t, visit);
    for (const a of r.head.args ?? []) walkTerm(a, visit);
    if (r.head.key) walkTerm(r.head.key, visit);
    if (r.head.value) walkTerm(r.head.value, visit);
    walkBody(r.body, visit);
  }
}

/** Calls made anywhere in the rule: `f(x)` terms and call expressions. */
function forEachCall(rule: Rule, visit: (operator: RefTerm, location: Location | undefined) => void): void {
  const onExpr = (e: Expr): void => {
    if (e.terms.type === 'call') visit(e.terms.operator, e.terms.operator.location ?? e.location);
  };
  const visitTerm = (t: Term): void => {
    if (t.type === 'call') visit(t.operator, t.operator.location ?? t.location);
    const bodies: Body[] = [];
    if (t.type === 'arraycomprehension' || t.type === 'setcomprehension' || t.type === 'objectcomprehension')
      bodies.push(t.body);
    for (const b of bodies) forEachExpr(b, onExpr);
  };
  const forEachExpr = (body: Body, f: (e: Expr) => void): void => {
    for (const e of body) {
      f(e);
      if (e.terms.type === 'every') forEachExpr(e.terms.body, f);
    }
  };
  for (let r: Rule | undefined = rule; r; r = r.else) forEachExpr(r.body, onExpr);
  walkRule(rule, visitTerm);
}

function lintShadowing(m: Module, out: LintFinding[]): void {
  cachedBuiltinNames ??= builtinNames();
  const { exact, namespaces } = cachedBuiltinNames;
  const describe = (name: string): string | undefined => {
    if (exact.has(name)) return `builtin ${name}`;
    if (namespaces.has(name)) return `builtins ${name}.*`;
    return undefined;
  };
  const reported = new Set<string>();
  for (const rule of m.rules) {
    const first = rule.head.reference[0];
    if (first?.type !== 'var') continue;
    const what = describe(first.value);
    // One finding per name: a multi-clause function or incremental rule is one definition.
    if (!what || reported.has(first.value)) continue;
    reported.add(first.value);
    const kind = rule.head.args?.length ? 'function' : 'rule';
    out.push({
      code: 'rego_lint_builtin_shadowed',
      message: `${kind} ${first.value} shadows ${what}`,
      location: fallbackLocation(m, first.location ?? rule.head.location ?? rule.location),
    });
  }
  for (const imp of m.imports) {
    if (!imp.alias) continue;
    const what = describe(imp.alias);
    if (what)
      out.push({
        code: 'rego_lint_builtin_shadowed',
        message: `import alias ${imp.alias} shadows ${what}`,
        location: fallbackLocation(m, imp.location),
      });
  }
}

function lintImports(m: Module, out: LintFinding[]): void {
  for (const imp of m.imports) {
    const name = operatorName(imp.path);
    if (name === undefined) continue;
    if (name === 'future.keywords' || name.startsWith('future.keywords.')) {
      out.push({
        code: 'rego_lint_redundant_import',
        message: `import ${name} is redundant in Rego v1 (the keywords are always enabled): remove it`,
        location: fallbackLocation(m, imp.location),
      });
    } else if (name === 'rego.v1') {
      out.push({
        code: 'rego_lint_redundant_import',
        message: 'import rego.v1 is redundant: modules are Rego v1 already: remove it',
        location: fallbackLocation(m, imp.location),
      });
    }
  }
}

function lintBuiltinCalls(m: Module, rule: Rule, userNames: ReadonlySet<string>, out: LintFinding[]): void {
  forEachCall(rule, (operator, location) => {
    const name = operatorName(operator);
    // A call to a rule/function of this module with the same name is not a builtin call.
    if (name === undefined || userNames.has(name.split('.')[0])) return;
    const replacement = DEPRECATED_BUILTINS.get(name);
    if (replacement !== undefined) {
      out.push({
        code: 'rego_lint_deprecated_builtin',
        message: `${name} is deprecated and unavailable in Rego v1: ${replacement}`,
        location: fallbackLocation(m, location),
      });
      return;
    }
    const reason = refusalReason(name);
    if (reason !== undefined)
      out.push({
        code: 'rego_lint_refused_builtin',
        message: `${name} is refused by \`guardian policy build\` and the Guardian: ${reason}; tests can replace it with \`with ${name} as ...\``,
        location: fallbackLocation(m, location),
      });
  });
}

function compareLocations(a: LintFinding, b: LintFinding): number {
  const la = a.location;
  const lb = b.location;
  if (la.file !== lb.file) return la.file < lb.file ? -1 : 1;
  return la.row - lb.row || la.col - lb.col || (a.code < b.code ? -1 : a.code > b.code ? 1 : 0);
}

/**
 * Every lint finding of the modules, sorted by file, row, column. `v0Files` are the files read as Rego v0,
 * where future.keywords and rego.v1 imports are what enables the keywords, not redundant.
 */
export function lintModules(
  modules: readonly Module[],
  options: { v0Files?: ReadonlySet<string> } = {},
): LintFinding[] {
  const out: LintFinding[] = [];
  for (const m of modules) {
    if (!options.v0Files?.has(m.file)) lintImports(m, out);
    lintShadowing(m, out);
    const userNames = new Set<string>();
    for (const r of m.rules) {
      const first = r.head.reference[0];
      if (first?.type === 'var') userNames.add(first.value);
    }
    for (const imp of m.imports) if (imp.alias) userNames.add(imp.alias);
    for (const rule of m.rules) lintBuiltinCalls(m, rule, userNames, out);
  }
  return out.sort(compareLocations);
}
