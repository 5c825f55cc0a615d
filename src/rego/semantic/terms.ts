// Small structural helpers over the Rego AST shared by the compile stage and the planner.
import {
  isExprPart,
  type Body,
  type Expr,
  type Location,
  type RefTerm,
  type Term,
  type VarTerm,
} from '../ast/types.ts';
import { pathKey } from './types.ts';

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

/** A ref element OPA prints after a dot (Ref.String); any other string is printed as `["…"]`. */
const DOTTED_ELEMENT = /^[A-Za-z_][A-Za-z0-9_]*$/;

/** `parts` as OPA prints a ref: `data.a["b:1.0"].f`, identifiers after dots, other strings quoted in brackets. */
export function refName(parts: readonly string[]): string {
  let out = parts[0] ?? '';
  for (const p of parts.slice(1)) out += DOTTED_ELEMENT.test(p) ? `.${p}` : `[${JSON.stringify(p)}]`;
  return out;
}

/**
 * Name of a call operator (`array.concat`, `data.pkg.f`, `data.a["b:1.0"].f`, as `refName` prints it), or
 * undefined if it has non-string parts. `refNameParts` reads it back.
 */
export function operatorName(op: RefTerm): string | undefined {
  const parts: string[] = [];
  for (let i = 0; i < op.value.length; i++) {
    const t = op.value[i];
    if (i === 0 && t.type === 'var') parts.push(t.value);
    else if (i > 0 && t.type === 'string') parts.push(t.value);
    else return undefined;
  }
  return refName(parts);
}

/** The elements of a name `refName` printed (`data.a["b:1.0"].f` → data, a, b:1.0, f). */
export function refNameParts(name: string): string[] {
  const parts: string[] = [];
  let i = name.search(/[.[]|$/);
  parts.push(name.slice(0, i));
  while (i < name.length) {
    if (name[i] === '.') {
      const end = name.slice(i + 1).search(/[.[]|$/) + i + 1;
      parts.push(name.slice(i + 1, end));
      i = end;
    } else {
      // `["…"]`: a JSON string, whose end is the first unescaped quote.
      let j = i + 2;
      while (j < name.length && name[j] !== '"') j += name[j] === '\\' ? 2 : 1;
      parts.push(JSON.parse(name.slice(i + 1, j + 1)) as string);
      i = j + 2;
    }
  }
  return parts;
}

/** Whether a name `operatorName` printed is a ref into data (`data.pkg.f`, `data["a:1"].f`). */
export const isDataName = (name: string): boolean => name.startsWith('data.') || name.startsWith('data[');

/** The rule-set key (`RuleSet` paths joined by `/`) of a `data.…` function name `operatorName` printed. */
export const dataNameKey = (name: string): string => pathKey(refNameParts(name).slice(1));

/**
 * Which vars a walk visits besides those standing as values. The compile stage needs both readings: a
 * call operator (`count` in `count(x)`) names a function, and `some x` / every's key and value declare
 * vars in their own scope, so safety analysis skips them while collecting every name skips nothing.
 */
export interface VarWalkOptions {
  /** Vars heading call operators. Default true. */
  callOperators?: boolean;
  /** Vars declared by `some x` and by every's key and value. Default true. */
  declarations?: boolean;
}

/** Bound on the walk's recursion; the parser already refuses ASTs deeper than this. */
const MAX_WALK_DEPTH = 2000;

/** Visit every var occurring in a term (including inside comprehensions), depth-first, in source order. */
export function forEachVar(t: Term, fn: (v: VarTerm) => void, options: VarWalkOptions = {}, depth = 0): void {
  if (depth > MAX_WALK_DEPTH) return;
  switch (t.type) {
    case 'var':
      fn(t);
      return;
    case 'ref':
    case 'array':
    case 'set':
      for (const e of t.value) forEachVar(e, fn, options, depth + 1);
      return;
    case 'object':
      for (const [k, v] of t.value) {
        forEachVar(k, fn, options, depth + 1);
        forEachVar(v, fn, options, depth + 1);
      }
      return;
    case 'call':
      if (options.callOperators !== false) forEachVar(t.operator, fn, options, depth + 1);
      for (const a of t.args) forEachVar(a, fn, options, depth + 1);
      return;
    case 'arraycomprehension':
    case 'setcomprehension':
      forEachVar(t.term, fn, options, depth + 1);
      forEachVarInBody(t.body, fn, options, depth + 1);
      return;
    case 'objectcomprehension':
      forEachVar(t.key, fn, options, depth + 1);
      forEachVar(t.value, fn, options, depth + 1);
      forEachVarInBody(t.body, fn, options, depth + 1);
      return;
    case 'templatestring':
      for (const p of t.parts)
        if (isExprPart(p)) forEachVarInBody([p], fn, options, depth + 1);
        else forEachVar(p, fn, options, depth + 1);
      return;
    default:
      return;
  }
}

function forEachVarInExpr(e: Expr, fn: (v: VarTerm) => void, options: VarWalkOptions, depth: number): void {
  const x = e.terms;
  const declarations = options.declarations !== false;
  switch (x.type) {
    case 'term':
      forEachVar(x.term, fn, options, depth + 1);
      break;
    case 'call':
      for (const a of x.args) forEachVar(a, fn, options, depth + 1);
      break;
    case 'somedecl':
      if (declarations) for (const v of x.vars) fn(v);
      break;
    case 'somein':
      if (x.key) forEachVar(x.key, fn, options, depth + 1);
      forEachVar(x.value, fn, options, depth + 1);
      forEachVar(x.domain, fn, options, depth + 1);
      break;
    case 'every':
      if (declarations) {
        if (x.key) forEachVar(x.key, fn, options, depth + 1);
        forEachVar(x.value, fn, options, depth + 1);
      }
      forEachVar(x.domain, fn, options, depth + 1);
      forEachVarInBody(x.body, fn, options, depth + 1);
      break;
  }
  for (const w of e.with) {
    forEachVar(w.value, fn, options, depth + 1);
  }
}

export function forEachVarInBody(b: Body, fn: (v: VarTerm) => void, options: VarWalkOptions = {}, depth = 0): void {
  for (const e of b) forEachVarInExpr(e, fn, options, depth);
}

/** A term with no vars, refs or comprehensions in it: OPA's `IsConstant`. */
export function isConstantTerm(t: Term): boolean {
  switch (t.type) {
    case 'string':
    case 'number':
    case 'boolean':
    case 'null':
      return true;
    case 'array':
    case 'set':
      return t.value.every(isConstantTerm);
    case 'object':
      return t.value.every(([k, v]) => isConstantTerm(k) && isConstantTerm(v));
    default:
      return false;
  }
}
