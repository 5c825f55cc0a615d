// Small structural helpers over the Rego AST shared by the compile stage and the planner.
import type { Body, Expr, Location, RefTerm, Term, VarTerm } from '../ast/types.ts';

function varTerm(name: string, location?: Location): VarTerm {
  return { type: 'var', value: name, location };
}

function stringTerm(value: string, location?: Location): Term {
  return { type: 'string', value, location };
}

export function refTerm(value: Term[], location?: Location): RefTerm {
  return { type: 'ref', value, location };
}

/** `data.a.b` as a ref with string elements. */
export function dataRef(path: readonly string[], location?: Location): RefTerm {
  return refTerm([varTerm('data', location), ...path.map((p) => stringTerm(p, location))], location);
}



/** Dotted name of a call operator (`array.concat`, `data.pkg.f`), or undefined if it has non-string parts. */
export function operatorName(op: RefTerm): string | undefined {
  const parts: string[] = [];
  for (let i = 0; i < op.value.length; i++) {
    const t = op.value[i];
    if (i === 0 && t.type === 'var') parts.push(t.value);
    else if (i > 0 && t.type === 'string') parts.push(t.value);
    else return undefined;
  }
  return parts.join('.');
}


/** Visit every var occurring in a term (including inside comprehensions), depth-first. */
export function forEachVar(t: Term, fn: (v: VarTerm) => void, depth = 0): void {
  if (depth > 2000) return;
  switch (t.type) {
    case 'var':
      fn(t);
      return;
    case 'ref':
    case 'array':
    case 'set':
      for (const e of t.value) forEachVar(e, fn, depth + 1);
      return;
    case 'object':
      for (const [k, v] of t.value) {
        forEachVar(k, fn, depth + 1);
        forEachVar(v, fn, depth + 1);
      }
      return;
    case 'call':
      forEachVar(t.operator, fn, depth + 1);
      for (const a of t.args) forEachVar(a, fn, depth + 1);
      return;
    case 'arraycomprehension':
    case 'setcomprehension':
      forEachVar(t.term, fn, depth + 1);
      forEachVarInBody(t.body, fn, depth + 1);
      return;
    case 'objectcomprehension':
      forEachVar(t.key, fn, depth + 1);
      forEachVar(t.value, fn, depth + 1);
      forEachVarInBody(t.body, fn, depth + 1);
      return;
    default:
      return;
  }
}

function forEachVarInExpr(e: Expr, fn: (v: VarTerm) => void, depth = 0): void {
  const x = e.terms;
  switch (x.type) {
    case 'term':
      forEachVar(x.term, fn, depth + 1);
      break;
    case 'call':
      for (const a of x.args) forEachVar(a, fn, depth + 1);
      break;
    case 'somedecl':
      for (const v of x.vars) fn(v);
      break;
    case 'somein':
      if (x.key) forEachVar(x.key, fn, depth + 1);
      forEachVar(x.value, fn, depth + 1);
      forEachVar(x.domain, fn, depth + 1);
      break;
    case 'every':
      if (x.key) forEachVar(x.key, fn, depth + 1);
      forEachVar(x.value, fn, depth + 1);
      forEachVar(x.domain, fn, depth + 1);
      forEachVarInBody(x.body, fn, depth + 1);
      break;
  }
  for (const w of e.with) {
    forEachVar(w.value, fn, depth + 1);
  }
}

export function forEachVarInBody(b: Body, fn: (v: VarTerm) => void, depth = 0): void {
  for (const e of b) forEachVarInExpr(e, fn, depth);
}


