// Template strings lowered to calls, as OPA's compiler stage RewriteTemplateStrings does (v1/ast/compile.go,
// rewriteTemplateString): `$"hi {input.name}!"` becomes
// `internal.template_string(["hi ", {x | x = input.name}, "!"])`. Each expression part is wrapped in a set
// comprehension, so an undefined expression is the empty set (the builtin writes `<undefined>`) instead of
// making the whole string undefined; text and scalar-literal parts stay as they are. After this pass no
// later stage (renaming, safety, planning) sees a template string.
import {
  isExprPart,
  type Body,
  type Expr,
  type Location,
  type Module,
  type RefTerm,
  type Rule,
  type TemplateStringTerm,
  type Term,
} from '../ast/types.ts';
import type { BuiltinTable } from '../builtins/capabilities.ts';
import { RegoError } from '../errors.ts';
import { operatorName } from './terms.ts';

export const TEMPLATE_STRING_BUILTIN = 'internal.template_string';

/** Where an expression of a template string was, so a var unsafe inside it can be reported as OPA does. */
export interface TemplateHole {
  file: string;
  start: number;
  end: number;
  location: Location;
}

interface LowerContext {
  builtins: BuiltinTable;
  errors: RegoError[];
  holes: TemplateHole[];
  /** Counter for the comprehension variables; `$` keeps them apart from anything a policy can spell. */
  next: number;
}

function lowerTemplate(t: TemplateStringTerm, cx: LowerContext): Term {
  const loc = t.location;
  // OPA checks the capabilities feature in the parser and the builtin here (compile error text as OPA's).
  if (!cx.builtins.has(TEMPLATE_STRING_BUILTIN)) {
    cx.errors.push(new RegoError('rego_compile_error', 'template-strings are not supported', loc));
    return t;
  }
  const items: Term[] = [];
  if (t.parts.length === 0) items.push({ type: 'string', value: '', location: loc });
  for (const p of t.parts) {
    if (!isExprPart(p)) {
      items.push(p);
      continue;
    }
    const x = p.terms;
    let value: Term;
    if (x.type === 'call') {
      const name = operatorName(x.operator);
      if (name && cx.builtins.get(name)?.relation) {
        cx.errors.push(
          new RegoError(
            'rego_compile_error',
            `illegal call to relation built-in '${name}' that may cause multiple outputs`,
            p.location,
          ),
        );
        continue;
      }
      value = { type: 'call', operator: x.operator, args: x.args, location: p.location };
    } else if (x.type === 'term') {
      value = x.term;
    } else {
      // The parser refuses `some` and `every` here; keep OPA's message for an AST built otherwise.
      cx.errors.push(
        new RegoError('rego_compile_error', `unexpected template-string expression type: ${x.type}`, p.location),
      );
      continue;
    }
    const where = value.location ?? p.location;
    const span = p.location;
    if (where && span?.offset !== undefined && span.text !== undefined)
      cx.holes.push({ file: span.file, start: span.offset, end: span.offset + span.text.length, location: where });
    const name = `$tmpl${cx.next++}`;
    const v = (): Term => ({ type: 'var', value: name, location: where });
    const eq: RefTerm = { type: 'ref', value: [{ type: 'var', value: 'eq', location: where }], location: where };
    const capture: Expr = {
      index: 0,
      negated: false,
      terms: { type: 'call', operator: eq, args: [v(), lowerTerm(value, cx)] },
      with: p.with.map((w) => ({ ...w, value: lowerTerm(w.value, cx) })),
      generated: true,
      location: where,
    };
    items.push({ type: 'setcomprehension', term: v(), body: [capture], location: where });
  }
  const op: RefTerm = {
    type: 'ref',
    value: [
      { type: 'var', value: 'internal', location: loc },
      { type: 'string', value: 'template_string', location: loc },
    ],
    location: loc,
  };
  return { type: 'call', operator: op, args: [{ type: 'array', value: items, location: loc }], location: loc };
}

function lowerTerm(t: Term, cx: LowerContext): Term {
  switch (t.type) {
    case 'templatestring':
      return lowerTemplate(t, cx);
    case 'ref':
    case 'array':
    case 'set':
      t.value = t.value.map((x) => lowerTerm(x, cx));
      return t;
    case 'object':
      t.value = t.value.map(([k, v]) => [lowerTerm(k, cx), lowerTerm(v, cx)]);
      return t;
    case 'call':
      t.args = t.args.map((x) => lowerTerm(x, cx));
      return t;
    case 'arraycomprehension':
    case 'setcomprehension':
      t.term = lowerTerm(t.term, cx);
      lowerBody(t.body, cx);
      return t;
    case 'objectcomprehension':
      t.key = lowerTerm(t.key, cx);
      t.value = lowerTerm(t.value, cx);
      lowerBody(t.body, cx);
      return t;
    default:
      return t;
  }
}

function lowerExpr(e: Expr, cx: LowerContext): void {
  const x = e.terms;
  switch (x.type) {
    case 'term':
      x.term = lowerTerm(x.term, cx);
      break;
    case 'call':
      x.args = x.args.map((a) => lowerTerm(a, cx));
      break;
    case 'somein':
      if (x.key) x.key = lowerTerm(x.key, cx);
      x.value = lowerTerm(x.value, cx);
      x.domain = lowerTerm(x.domain, cx);
      break;
    case 'every':
      x.domain = lowerTerm(x.domain, cx);
      lowerBody(x.body, cx);
      break;
    default:
      break;
  }
  for (const w of e.with) w.value = lowerTerm(w.value, cx);
}

function lowerBody(b: Body, cx: LowerContext): void {
  for (const e of b) lowerExpr(e, cx);
}

function lowerRule(rule: Rule, cx: LowerContext): void {
  for (let r: Rule | undefined = rule; r; r = r.else) {
    lowerBody(r.body, cx);
    const h = r.head;
    if (h.value) h.value = lowerTerm(h.value, cx);
    if (h.key) h.key = lowerTerm(h.key, cx);
    if (h.args) h.args = h.args.map((a) => lowerTerm(a, cx));
    h.reference = h.reference.map((t, i) => (i === 0 ? t : lowerTerm(t, cx)));
  }
}

/**
 * Lower every template string in the modules' rules, in place; problems are pushed onto `errors`. Returns
 * where the expressions were (for `reportUndeclared`).
 */
export function lowerTemplateStrings(
  modules: readonly Module[],
  builtins: BuiltinTable,
  errors: RegoError[],
): TemplateHole[] {
  const cx: LowerContext = { builtins, errors, holes: [], next: 0 };
  for (const m of modules) for (const r of m.rules) lowerRule(r, cx);
  return cx.holes;
}

/** Lower the template strings of a query body, in place. */
export function lowerTemplateStringsInBody(body: Body, builtins: BuiltinTable, errors: RegoError[]): TemplateHole[] {
  const cx: LowerContext = { builtins, errors, holes: [], next: 0 };
  lowerBody(body, cx);
  return cx.holes;
}

/**
 * OPA checks the vars of a template expression against the vars its body can bind before any safety check,
 * and reports one it cannot bind as `var x is undeclared` (rego_compile_error, at the expression). Our
 * safety check finds the same vars later, as `var x is unsafe` inside the generated comprehension; those
 * errors are given OPA's wording here, in place.
 */
export function reportUndeclared(errors: RegoError[], holes: readonly TemplateHole[]): void {
  if (holes.length === 0) return;
  errors.forEach((e, i) => {
    const l = e.location;
    const m = /^var (.+) is unsafe$/.exec(e.message);
    if (e.code !== 'rego_unsafe_var_error' || !m || l?.offset === undefined) return;
    const offset = l.offset;
    const hole = holes.find((h) => h.file === l.file && h.start <= offset && offset < h.end);
    if (hole) errors[i] = new RegoError('rego_compile_error', `var ${m[1]} is undeclared`, hole.location);
  });
}
