// Safety (OPA's CheckSafety + body reordering): every variable must be bound by a positive expression
// before it is used. Bodies are reordered the way OPA does it — repeatedly pick the first expression
// whose inputs are bound — and vars that can never be bound are reported as unsafe.
import type { Body, Expr, Term, VarTerm } from '../ast/types.ts';
import { RegoError } from '../errors.ts';
import { MAX_DEPTH } from './rewrite.ts';
import { forEachVar, forEachVarInBody, operatorName, type VarWalkOptions } from './terms.ts';

export interface SafetyContext {
  /** Arity of builtins and Rego functions by call operator name (`count`, `data.pkg.f`). */
  arity(name: string): number | undefined;
  /** Builtin or Rego function name (`count`, `data.pkg.f`). */
  isFunction(name: string): boolean;
  errors: RegoError[];
  /**
   * An expression split into its operands' assignments and itself on generated locals (negation.ts
   * splitOperands). OPA splits every expression so before its safety check; only the expressions that cannot be
   * ordered whole are split here, so that one part can bind what another needs (`x := {"p": f(i), "v": a[i]}`).
   */
  split?: (e: Expr) => Body;
}

interface Analysis {
  needs: Map<string, VarTerm>;
  binds: Set<string>;
}

const isWildcard = (name: string): boolean => name.startsWith('$w');

/** `input` and `data` are always bound (OPA's RootDocumentNames); locals never take these names. */
const isRootDocument = (name: string): boolean => name === 'input' || name === 'data';

/** Vars occurring in a body/term outside nested comprehension and `every` bodies. */
function shallowVars(t: Term, out: Set<string>, depth = 0): void {
  if (depth > MAX_DEPTH) return;
  switch (t.type) {
    case 'var':
      out.add(t.value);
      return;
    case 'ref':
    case 'array':
    case 'set':
      for (const e of t.value) shallowVars(e, out, depth + 1);
      return;
    case 'object':
      for (const [k, v] of t.value) {
        shallowVars(k, out, depth + 1);
        shallowVars(v, out, depth + 1);
      }
      return;
    case 'call':
      for (const a of t.args) shallowVars(a, out, depth + 1);
      return;
    default:
      return;
  }
}

function shallowExprVars(e: Expr, out: Set<string>): void {
  const x = e.terms;
  switch (x.type) {
    case 'term':
      shallowVars(x.term, out);
      break;
    case 'call':
      for (const a of x.args) shallowVars(a, out);
      break;
    case 'somein':
      if (x.key) shallowVars(x.key, out);
      shallowVars(x.value, out);
      shallowVars(x.domain, out);
      break;
    case 'every':
      shallowVars(x.domain, out);
      break;
    default:
      break;
  }
  for (const w of e.with) shallowVars(w.value, out);
}

/** Safety's reading of "the vars in here": values only, not function names nor every's own declarations. */
const VALUE_VARS: VarWalkOptions = { callOperators: false, declarations: false };

/** All vars of a term or body including comprehension and every bodies, first occurrence kept. */
function deepVars(t: Term | Body, out: Map<string, VarTerm>): void {
  const add = (v: VarTerm): void => {
    if (!out.has(v.value)) out.set(v.value, v);
  };
  if (Array.isArray(t)) forEachVarInBody(t, add, VALUE_VARS);
  else forEachVar(t, add, VALUE_VARS);
}

export class SafetyChecker {
  constructor(private readonly ctx: SafetyContext) {}

  /**
   * Reorder `body` so each expression's inputs are bound first. `bound` are the vars bound on entry
   * (function args, enclosing scopes); `headTerms` are terms that must be bound by the body.
   * Returns the reordered body (nested comprehension/every bodies reordered too) and the final bound set.
   */
  reorder(body: Body, bound: ReadonlySet<string>, headTerms: Term[], depth = 0): { body: Body; bound: Set<string> } {
    const b = new Set(bound);
    if (depth > MAX_DEPTH) return { body, bound: b };
    const outer = new Set<string>(bound);
    for (const e of body) shallowExprVars(e, outer);
    for (const t of headTerms) shallowVars(t, outer);
    const pending = [...body];
    const out: Body = [];
    while (pending.length > 0) {
      let picked = -1;
      for (let i = 0; i < pending.length; i++) {
        const a = this.analyzeExpr(pending[i], b, outer);
        if (a.needs.size === 0) {
          picked = i;
          break;
        }
      }
      if (picked < 0) {
        const split = this.splitStuck(pending, b, outer);
        if (split) {
          pending.splice(0, pending.length, ...split);
          continue;
        }
        this.reportUnsafe(pending, b, outer);
        return { body: [...out, ...pending], bound: b };
      }
      const [e] = pending.splice(picked, 1);
      const a = this.analyzeExpr(e, b, outer);
      out.push(this.reorderNested(e, b, depth));
      for (const v of a.binds) b.add(v);
    }
    for (const t of headTerms) {
      const a: Analysis = { needs: new Map(), binds: new Set() };
      this.analyzeTerm(t, 'value', b, outer, a);
      for (const [name, v] of a.needs) {
        if (!isWildcard(name)) this.unsafe(v);
      }
    }
    return { body: out, bound: b };
  }

  /** Reorder comprehension bodies inside a term (used for rule heads and expression terms). */
  reorderTerm(t: Term, bound: ReadonlySet<string>, depth = 0): Term {
    if (depth > MAX_DEPTH) return t;
    switch (t.type) {
      case 'ref':
      case 'array':
      case 'set':
        return { ...t, value: t.value.map((e) => this.reorderTerm(e, bound, depth + 1)) };
      case 'object':
        return {
          ...t,
          value: t.value.map(
            ([k, v]) => [this.reorderTerm(k, bound, depth + 1), this.reorderTerm(v, bound, depth + 1)] as [Term, Term],
          ),
        };
      case 'call':
        return { ...t, args: t.args.map((a) => this.reorderTerm(a, bound, depth + 1)) };
      case 'arraycomprehension':
      case 'setcomprehension': {
        const r = this.reorder(t.body, bound, [t.term], depth + 1);
        return { ...t, body: r.body, term: this.reorderTerm(t.term, r.bound, depth + 1) };
      }
      case 'objectcomprehension': {
        const r = this.reorder(t.body, bound, [t.key, t.value], depth + 1);
        return {
          ...t,
          body: r.body,
          key: this.reorderTerm(t.key, r.bound, depth + 1),
          value: this.reorderTerm(t.value, r.bound, depth + 1),
        };
      }
      default:
        return t;
    }
  }

  /** The expressions split once more where that can help ordering them, or undefined when none can be split. */
  private splitStuck(pending: Body, bound: ReadonlySet<string>, outer: ReadonlySet<string>): Body | undefined {
    const split = this.ctx.split;
    if (!split) return undefined;
    let changed = false;
    const next = pending.flatMap((e) => {
      if (e.negated || this.splitDone.has(e)) return [e];
      this.splitDone.add(e);
      const parts = split(e);
      if (parts.length < 2) return [e];
      // Only a split that lets a part be ordered now is kept: otherwise the errors name the expression as written.
      if (!parts.some((p) => this.analyzeExpr(p, bound, outer).needs.size === 0)) return [e];
      changed = true;
      for (const p of parts) this.splitDone.add(p);
      return parts;
    });
    return changed ? next : undefined;
  }

  /** Expressions already split (or produced by a split): each is split at most once. */
  private readonly splitDone = new WeakSet<Expr>();

  private reorderNested(e: Expr, bound: ReadonlySet<string>, depth: number): Expr {
    const x = e.terms;
    const rt = (t: Term): Term => this.reorderTerm(t, bound, depth + 1);
    const withs = e.with.map((w) => ({ ...w, value: rt(w.value) }));
    switch (x.type) {
      case 'term':
        return { ...e, with: withs, terms: { type: 'term', term: rt(x.term) } };
      case 'call':
        return { ...e, with: withs, terms: { ...x, args: x.args.map(rt) } };
      case 'somein':
        return { ...e, with: withs, terms: { ...x, domain: rt(x.domain) } };
      case 'every': {
        const inner = new Set(bound);
        const declared = new Map<string, VarTerm>();
        if (x.key) deepVars(x.key, declared);
        deepVars(x.value, declared);
        for (const k of declared.keys()) inner.add(k);
        const r = this.reorder(x.body, inner, [], depth + 1);
        return { ...e, with: withs, terms: { ...x, domain: rt(x.domain), body: r.body } };
      }
      default:
        return e;
    }
  }

  private unsafe(v: VarTerm): void {
    const name = v.original ?? v.value;
    const dup = this.ctx.errors.some(
      (er) =>
        er.code === 'rego_unsafe_var_error' && er.message === `var ${name} is unsafe` && er.location === v.location,
    );
    if (!dup) this.ctx.errors.push(new RegoError('rego_unsafe_var_error', `var ${name} is unsafe`, v.location));
  }

  private reportUnsafe(pending: Body, bound: Set<string>, outer: Set<string>): void {
    // Vars some pending expression could bind are not the culprits; report those nothing binds.
    const bindable = new Set<string>();
    for (const e of pending) for (const v of this.analyzeExpr(e, bound, outer).binds) bindable.add(v);
    let reported = false;
    const names = new Set<string>();
    for (const e of pending) {
      for (const [name, v] of this.analyzeExpr(e, bound, outer).needs) {
        if (bindable.has(name) || names.has(name)) continue;
        names.add(name);
        this.unsafe(v);
        reported = true;
      }
    }
    if (!reported) {
      // Circular dependency (e.g. `x = y; y = x`): report every needed var.
      for (const e of pending) for (const [, v] of this.analyzeExpr(e, bound, outer).needs) this.unsafe(v);
    }
  }

  analyzeExpr(e: Expr, bound: ReadonlySet<string>, outer: ReadonlySet<string>): Analysis {
    const a: Analysis = { needs: new Map(), binds: new Set() };
    const x = e.terms;
    if (e.negated) {
      const inner = this.analyzeExpr({ ...e, negated: false }, bound, outer);
      for (const [k, v] of inner.needs) a.needs.set(k, v);
      for (const k of inner.binds) {
        if (!isWildcard(k)) {
          const vt: VarTerm = findVar(e, k) ?? { type: 'var', value: k, location: e.location };
          a.needs.set(k, vt);
        }
      }
      return a;
    }
    for (const w of e.with) {
      // `with f as count`: a function reference, not a variable.
      const fnName =
        w.value.type === 'var' ? w.value.value : w.value.type === 'ref' ? operatorName(w.value) : undefined;
      if (fnName !== undefined && !bound.has(fnName) && this.ctx.isFunction(fnName)) continue;
      this.analyzeTerm(w.value, 'value', bound, outer, a);
    }
    switch (x.type) {
      case 'term':
        this.analyzeTerm(x.term, 'value', bound, outer, a);
        break;
      case 'call': {
        const name = operatorName(x.operator);
        if ((name === 'eq' || name === 'assign') && x.args.length === 2) {
          const [l, r] = x.args;
          if (l.type === 'var' && r.type === 'var' && !bound.has(l.value) && !bound.has(r.value)) {
            a.needs.set(r.value, r);
            break;
          }
          // An unbound var unified with an array, object or set literal takes the literal's value, so the
          // literal's vars must be bound first (OPA's unification safety): `x := {"k": v}` waits for `v`.
          const composite = (t: Term): boolean => t.type === 'array' || t.type === 'object' || t.type === 'set';
          const free = (t: Term): boolean => t.type === 'var' && !bound.has(t.value);
          if ((free(l) && composite(r)) || (free(r) && composite(l))) {
            const [v, c] = free(l) ? [l, r] : [r, l];
            this.analyzeTerm(c, 'value', bound, outer, a);
            this.analyzeTerm(v, 'pattern', bound, outer, a);
            break;
          }
          this.analyzeTerm(l, 'pattern', bound, outer, a);
          this.analyzeTerm(r, 'pattern', bound, outer, a);
          break;
        }
        const arity = name !== undefined ? this.ctx.arity(name) : undefined;
        x.args.forEach((arg, i) => {
          const isOut = arity !== undefined && i === arity && x.args.length === arity + 1;
          this.analyzeTerm(arg, isOut ? 'pattern' : 'value', bound, outer, a);
        });
        break;
      }
      case 'somein':
        this.analyzeTerm(x.domain, 'value', bound, outer, a);
        if (x.key) this.analyzeTerm(x.key, 'pattern', bound, outer, a);
        this.analyzeTerm(x.value, 'pattern', bound, outer, a);
        break;
      case 'every': {
        this.analyzeTerm(x.domain, 'value', bound, outer, a);
        const inner = new Map<string, VarTerm>();
        deepVars(x.body, inner);
        for (const [name, v] of inner) {
          if (outer.has(name) && !bound.has(name) && !isRootDocument(name)) a.needs.set(name, v);
        }
        break;
      }
      default:
        break;
    }
    // A var both needed and bound by the same expression (`x = x + 1`) stays needed.
    return a;
  }

  private analyzeTerm(
    t: Term,
    mode: 'pattern' | 'value',
    bound: ReadonlySet<string>,
    outer: ReadonlySet<string>,
    a: Analysis,
    depth = 0,
  ): void {
    if (depth > MAX_DEPTH) return;
    switch (t.type) {
      case 'var':
        if (bound.has(t.value) || isRootDocument(t.value)) return;
        if (mode === 'pattern') a.binds.add(t.value);
        else if (!a.binds.has(t.value)) a.needs.set(t.value, t);
        return;
      case 'ref': {
        const [head, ...rest] = t.value;
        if (head.type === 'var') {
          if (!(isRootDocument(head.value) || bound.has(head.value))) a.needs.set(head.value, head);
        } else {
          this.analyzeTerm(head, 'value', bound, outer, a, depth + 1);
        }
        for (const e of rest) {
          if (e.type === 'var') {
            if (!bound.has(e.value)) a.binds.add(e.value);
          } else this.analyzeTerm(e, 'pattern', bound, outer, a, depth + 1);
        }
        return;
      }
      case 'array':
        for (const e of t.value) this.analyzeTerm(e, mode, bound, outer, a, depth + 1);
        return;
      case 'object':
        for (const [k, v] of t.value) {
          this.analyzeTerm(k, 'value', bound, outer, a, depth + 1);
          this.analyzeTerm(v, mode, bound, outer, a, depth + 1);
        }
        return;
      case 'set':
        for (const e of t.value) this.analyzeTerm(e, 'value', bound, outer, a, depth + 1);
        return;
      case 'call':
        for (const e of t.args) this.analyzeTerm(e, 'value', bound, outer, a, depth + 1);
        return;
      case 'arraycomprehension':
      case 'setcomprehension':
      case 'objectcomprehension': {
        const vars = new Map<string, VarTerm>();
        deepVars(t, vars);
        for (const [name, v] of vars) {
          if (outer.has(name) && !bound.has(name) && !isRootDocument(name)) a.needs.set(name, v);
        }
        return;
      }
      default:
        return;
    }
  }
}

function findVar(e: Expr, name: string): VarTerm | undefined {
  const m = new Map<string, VarTerm>();
  deepVars([e], m);
  return m.get(name);
}
