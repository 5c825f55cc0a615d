// What a negated expression evaluates before its `not` applies. OPA's compiler rewrites every body
// (stages RewriteExprTerms, RewriteEquals, RewriteDynamicTerms, ast/compile.go) so that, in
// `not f(input.x)`, nested calls and the refs passed as call operands are assigned to generated
// locals by expressions placed before the negated one: `__local0__ = input.x; not f(__local0__)`.
// When such an operand is undefined the whole expression is undefined, not true (OPA issues 1877 and
// 7558 document this). Non-negated expressions need no rewrite: an undefined operand already makes
// them undefined. `x == y` counts as unification here, as RewriteEquals makes it, so `not input.x == 1`
// hoists only the refs inside brackets of its operands.
import type { Body, Expr, RefTerm, Term, VarTerm } from '../ast/types.ts';
import type { NameGen } from './rewrite.ts';
import { operatorName } from './terms.ts';

const EQ_OPERATOR: RefTerm = { type: 'ref', value: [{ type: 'var', value: 'eq' }] };

class NegationHoister {
  constructor(private readonly names: NameGen) {}

  body(b: Body): Body {
    const out: Body = [];
    for (const e of b) {
      const x = this.nested(e);
      if (x.negated && (x.terms.type === 'term' || x.terms.type === 'call')) out.push(...this.hoist(x));
      else out.push(x);
    }
    return out;
  }

  /** The expression with the bodies nested in it (comprehensions, every) rewritten. */
  private nested(e: Expr): Expr {
    const x = e.terms;
    const withs = e.with.map((w) => ({ ...w, value: this.term(w.value) }));
    switch (x.type) {
      case 'term':
        return { ...e, terms: { type: 'term', term: this.term(x.term) }, with: withs };
      case 'call':
        return { ...e, terms: { ...x, args: x.args.map((a) => this.term(a)) }, with: withs };
      case 'somein':
        return {
          ...e,
          terms: { ...x, key: x.key && this.term(x.key), value: this.term(x.value), domain: this.term(x.domain) },
          with: withs,
        };
      case 'every':
        return { ...e, terms: { ...x, domain: this.term(x.domain), body: this.body(x.body) }, with: withs };
      default:
        return e;
    }
  }

  /** Rewrite the bodies of the comprehensions inside a term. */
  term(t: Term): Term {
    switch (t.type) {
      case 'ref':
      case 'array':
      case 'set':
        return { ...t, value: t.value.map((v) => this.term(v)) };
      case 'object':
        return { ...t, value: t.value.map(([k, v]) => [this.term(k), this.term(v)] as [Term, Term]) };
      case 'call':
        return { ...t, args: t.args.map((a) => this.term(a)) };
      case 'arraycomprehension':
      case 'setcomprehension':
        return { ...t, term: this.term(t.term), body: this.body(t.body) };
      case 'objectcomprehension':
        return { ...t, key: this.term(t.key), value: this.term(t.value), body: this.body(t.body) };
      default:
        return t;
    }
  }

  /**
   * The assignments a negated expression needs first, then the expression on the generated locals. With
   * `callOperands`, the refs among a nested call's operands get assignments of their own too, as RewriteDynamicTerms
   * treats the call expressions RewriteExprTerms makes (`count([i, a[i]])` → `t1 = a[i]`, `t0 = count([i, t1])`).
   */
  hoist(e: Expr, callOperands = false): Body {
    const before: Body = [];
    const bind = (value: Term): VarTerm => {
      const v: VarTerm = { type: 'var', value: this.names.temp(), location: value.location };
      before.push({
        index: e.index,
        negated: false,
        terms: { type: 'call', operator: EQ_OPERATOR, args: [v, value] },
        with: e.with,
        generated: true,
        location: e.location,
      });
      return v;
    };
    // RewriteExprTerms: every call nested in the expression (outside comprehensions) is evaluated first.
    const expand = (t: Term): Term => {
      switch (t.type) {
        case 'call': {
          const args = t.args.map(expand);
          return bind({ ...t, args: callOperands ? args.map(dynamicOne) : args });
        }
        case 'ref':
        case 'array':
        case 'set':
          return { ...t, value: t.value.map(expand) };
        case 'object':
          return { ...t, value: t.value.map(([k, v]) => [expand(k), expand(v)] as [Term, Term]) };
        default:
          return t;
      }
    };
    // RewriteDynamicTerms: a ref, or a comprehension, standing as a value is evaluated first.
    const dynamicOne = (t: Term): Term => {
      switch (t.type) {
        case 'ref':
          return bind({ ...t, value: [t.value[0], ...t.value.slice(1).map(dynamicOne)] });
        case 'array':
        case 'set':
          return { ...t, value: t.value.map(dynamicOne) };
        case 'object':
          return { ...t, value: t.value.map(([k, v]) => [dynamicOne(k), dynamicOne(v)] as [Term, Term]) };
        case 'arraycomprehension':
        case 'setcomprehension':
        case 'objectcomprehension':
          return bind(t);
        default:
          return t;
      }
    };
    // An operand of unification, or a bare term: only what a ref's brackets hold.
    const dynamicIn = (t: Term): Term => {
      switch (t.type) {
        case 'ref':
          return { ...t, value: [t.value[0], ...t.value.slice(1).map(dynamicOne)] };
        case 'arraycomprehension':
        case 'setcomprehension':
        case 'objectcomprehension':
          return t;
        default:
          return dynamicOne(t);
      }
    };
    const x = e.terms;
    if (x.type === 'term') {
      const term = dynamicIn(expand(x.term));
      return [...before, { ...e, terms: { type: 'term', term } }];
    }
    if (x.type !== 'call') return [e];
    const args = x.args.map(expand);
    const name = operatorName(x.operator);
    const unify = (name === 'eq' || name === 'equal') && args.length === 2;
    const operands = args.map(unify ? dynamicIn : dynamicOne);
    return [...before, { ...e, terms: { ...x, args: operands } }];
  }
}

/** The body with each negated expression's operands evaluated before its `not`, as OPA compiles it. */
export function hoistNegatedOperands(body: Body, names: NameGen): Body {
  return new NegationHoister(names).body(body);
}

/**
 * One expression as OPA's RewriteExprTerms and RewriteDynamicTerms leave it: its nested calls and the refs it uses
 * as values assigned to generated locals by expressions of their own, then the expression on those locals. The
 * safety check splits an expression this way when it cannot be ordered whole (SafetyContext.split).
 */
export function splitOperands(e: Expr, names: NameGen): Body {
  return new NegationHoister(names).hoist(e, true);
}

/** A term with the bodies of its comprehensions rewritten by hoistNegatedOperands. */
export function hoistNegatedOperandsInTerm(t: Term, names: NameGen): Term {
  return new NegationHoister(names).term(t);
}
