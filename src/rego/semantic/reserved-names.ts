// OPA's CheckKeywordOverrides and CheckDuplicateImports stages (v1/ast/compile.go checkKeywordOverrides,
// checkImports; check.go checkRootDocumentOverrides, checkDuplicateImports). They apply to Rego v1 modules
// (a v0 module importing rego.v1 is one) and, in strict mode, to every module.
import type { Body, Expr, Module, Rule, Term } from '../ast/types.ts';
import { RegoError } from '../errors.ts';
import { bareRootName, importName, importText, isAssignment } from './global-refs.ts';

/** Every expression of a rule, head comprehensions first, in OPA's WalkExprs order (pre-order, else chain last). */
function forEachExpr(rule: Rule, fn: (e: Expr) => void): void {
  const term = (t: Term): void => {
    switch (t.type) {
      case 'ref':
      case 'array':
      case 'set':
        for (const e of t.value) term(e);
        return;
      case 'object':
        for (const [k, v] of t.value) {
          term(k);
          term(v);
        }
        return;
      case 'call':
        term(t.operator);
        for (const a of t.args) term(a);
        return;
      case 'arraycomprehension':
      case 'setcomprehension':
        term(t.term);
        body(t.body);
        return;
      case 'objectcomprehension':
        term(t.key);
        term(t.value);
        body(t.body);
        return;
      case 'templatestring':
        for (const p of t.parts)
          if ('terms' in p) expr(p);
          else term(p);
        return;
      default:
        return;
    }
  };
  const expr = (e: Expr): void => {
    fn(e);
    const x = e.terms;
    switch (x.type) {
      case 'term':
        term(x.term);
        break;
      case 'call':
        term(x.operator);
        for (const a of x.args) term(a);
        break;
      case 'somedecl':
        break;
      case 'somein':
        if (x.key) term(x.key);
        term(x.value);
        term(x.domain);
        break;
      case 'every':
        if (x.key) term(x.key);
        term(x.value);
        term(x.domain);
        body(x.body);
        break;
    }
    for (const w of e.with) {
      term(w.target);
      term(w.value);
    }
  };
  const body = (b: Body): void => {
    for (const e of b) expr(e);
  };
  for (let r: Rule | undefined = rule; r; r = r.else) {
    for (const a of r.head.args ?? []) term(a);
    if (r.head.key) term(r.head.key);
    if (r.head.value) term(r.head.value);
    body(r.body);
  }
}

/**
 * `rules must not shadow input (use a different rule name)` for rules named `input`/`data` (not their else
 * branches), `args must not shadow …` for such arguments, then `variables must not shadow …` for every
 * `input := …` / `data := …`.
 */
export function rootDocumentOverrides(m: Module): RegoError[] {
  const errors: RegoError[] = [];
  for (const rule of m.rules) {
    const first = rule.head.reference[0];
    if (first?.type === 'var' && (first.value === 'input' || first.value === 'data'))
      errors.push(
        new RegoError(
          'rego_compile_error',
          `rules must not shadow ${first.value} (use a different rule name)`,
          rule.location ?? rule.head.location,
        ),
      );
    for (const a of rule.head.args ?? []) {
      const root = bareRootName(a);
      if (root)
        errors.push(
          new RegoError(
            'rego_compile_error',
            `args must not shadow ${root} (use a different variable name)`,
            a.location,
          ),
        );
    }
  }
  for (const rule of m.rules) {
    forEachExpr(rule, (e) => {
      if (!isAssignment(e) || e.terms.args.length === 0) return;
      const lhs = e.terms.args[0];
      const name = bareRootName(lhs) ?? (lhs.type === 'var' ? lhs.value : undefined);
      if (name === 'input' || name === 'data')
        errors.push(
          new RegoError(
            'rego_compile_error',
            `variables must not shadow ${name} (use a different variable name)`,
            e.location,
          ),
        );
    });
  }
  return errors;
}

/** `import must not shadow import data.x` at each import whose name an earlier import of the module has. */
export function duplicateImports(m: Module): RegoError[] {
  const errors: RegoError[] = [];
  const seen = new Map<string, string>();
  for (const imp of m.imports) {
    const name = importName(imp);
    const earlier = seen.get(name);
    if (earlier !== undefined)
      errors.push(new RegoError('rego_compile_error', `import must not shadow ${earlier}`, imp.location));
    else seen.set(name, importText(imp));
  }
  return errors;
}
