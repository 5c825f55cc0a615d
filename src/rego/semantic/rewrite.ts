// Reference resolution and local-variable rewriting (OPA's ResolveRefs + RewriteLocalVars stages):
// rule names of the package and import aliases become full `data.…`/`input.…` refs, `:=`/`some`
// declared vars and function parameters get unique names (so nested scopes cannot capture each
// other), wildcards become unique generated vars.
import type { Body, Expr, ExprTerms, Location, RefTerm, Term, VarTerm, With } from '../ast/types.ts';
import { RegoError } from '../errors.ts';
import { refTerm } from './terms.ts';

/** Maximum AST nesting we walk; deeper input gets a compile error instead of a stack overflow. */
export const MAX_DEPTH = 400;

export class NameGen {
  private n = 0;
  local(): string {
    return `$l${this.n++}`;
  }
  wildcard(): string {
    return `$w${this.n++}`;
  }
  temp(): string {
    return `$t${this.n++}`;
  }
}

class Scope {
  readonly names = new Map<string, string>();
  /** Plain (undeclared) vars referenced in this scope, for "var x referenced above". */
  readonly seen = new Set<string>();
  constructor(readonly parent?: Scope) {}
  lookup(name: string): string | undefined {
    for (let s: Scope | undefined = this; s; s = s.parent) {
      const n = s.names.get(name);
      if (n !== undefined) return n;
    }
    return undefined;
  }
}

export interface RewriteContext {
  /** Package rule names and import aliases → the ref they stand for. */
  globals: ReadonlyMap<string, RefTerm>;
  names: NameGen;
  errors: RegoError[];
}

function fail(ctx: RewriteContext, msg: string, loc?: Location): void {
  ctx.errors.push(new RegoError('rego_compile_error', msg, loc));
}

/** The head var of a ref that is exactly `input` or `data` (how the parser reads a bare root document). */
function bareRootDocument(t: RefTerm): VarTerm | undefined {
  const head = t.value[0];
  if (t.value.length !== 1 || head?.type !== 'var') return undefined;
  return head.value === 'input' || head.value === 'data' ? head : undefined;
}

function withLoc(t: Term, loc: Location | undefined): Term {
  return loc ? ({ ...t, location: loc } as Term) : t;
}

/** Whether a term holds a ref, a call or a comprehension (OPA's requiresEval: ContainsRefs || ContainsComprehensions). */
function needsEvaluation(t: Term, depth = 0): boolean {
  if (depth > MAX_DEPTH) return false;
  switch (t.type) {
    case 'ref':
    case 'call':
    case 'arraycomprehension':
    case 'setcomprehension':
    case 'objectcomprehension':
      return true;
    case 'array':
    case 'set':
      return t.value.some((e) => needsEvaluation(e, depth + 1));
    case 'object':
      return t.value.some(([k, v]) => needsEvaluation(k, depth + 1) || needsEvaluation(v, depth + 1));
    default:
      return false;
  }
}

export class Rewriter {
  constructor(private readonly ctx: RewriteContext) {}

  /** Declare function parameters: every var in them becomes a unique local. */
  declareArgs(args: Term[], scope: ScopeHandle): Term[] {
    const s = scope as unknown as Scope;
    return args.map((a) => this.declarePattern(a, s, false));
  }

  newScope(parent?: ScopeHandle): ScopeHandle {
    return new Scope(parent as unknown as Scope | undefined) as unknown as ScopeHandle;
  }

  rewriteBody(body: Body, scope: ScopeHandle, depth = 0): Body {
    const s = scope as unknown as Scope;
    const out: Body = [];
    for (const e of body) {
      const r = this.rewriteExpr(e, s, depth + 1);
      if (r) out.push(r);
    }
    return out;
  }

  rewriteTerm(t: Term, scope: ScopeHandle, depth = 0): Term {
    return this.term(t, scope as unknown as Scope, depth);
  }

  private declarePattern(t: Term, s: Scope, checkAssigned: boolean): Term {
    const declare = (v: VarTerm): Term => {
      if (v.wildcard || v.value === '_') return { ...v, value: this.ctx.names.wildcard(), wildcard: true };
      if (checkAssigned) {
        if (s.names.has(v.value)) fail(this.ctx, `var ${v.value} assigned above`, v.location);
        else if (s.seen.has(v.value)) fail(this.ctx, `var ${v.value} referenced above`, v.location);
      }
      const fresh = this.ctx.names.local();
      s.names.set(v.value, fresh);
      return { ...v, value: fresh, original: v.original ?? v.value };
    };
    const walk = (x: Term, depth: number): Term => {
      if (depth > MAX_DEPTH) {
        fail(this.ctx, 'expression nesting too deep', x.location);
        return x;
      }
      switch (x.type) {
        case 'var':
          return declare(x);
        case 'ref': {
          // `input := …` / `data := …` declare a local of that name, shadowing the root document in the rest
          // of the scope (OPA's rewriteDeclaredAssignment accepts the bare root refs); only Rego v0 modules get
          // here outside strict mode, checkKeywordOverrides refusing them elsewhere (reserved-names.ts).
          const root = bareRootDocument(x);
          return root ? declare(root) : this.term(x, s, depth + 1);
        }
        case 'array':
          return { ...x, value: x.value.map((e) => walk(e, depth + 1)) };
        case 'object':
          // Object keys in patterns are values, not declarations.
          return {
            ...x,
            value: x.value.map(([k, v]) => [this.term(k, s, depth + 1), walk(v, depth + 1)] as [Term, Term]),
          };
        default:
          return this.term(x, s, depth + 1);
      }
    };
    return walk(t, 0);
  }

  private rewriteExpr(e: Expr, s: Scope, depth: number): Expr | undefined {
    if (depth > MAX_DEPTH) {
      fail(this.ctx, 'expression nesting too deep', e.location);
      return e;
    }
    const withs: With[] = e.with.map((w) => ({
      ...w,
      target: this.withTarget(w.target, s),
      value: this.term(w.value, s, depth + 1),
    }));
    const x = e.terms;
    let terms: ExprTerms;
    switch (x.type) {
      case 'somedecl': {
        for (const v of x.vars) {
          if (s.names.has(v.value) && s.names.get(v.value) !== undefined) {
            // Redeclaring in the same scope is allowed by OPA only for distinct names.
          }
          s.names.set(v.value, this.ctx.names.local());
        }
        return undefined;
      }
      case 'somein': {
        const domain = this.term(x.domain, s, depth + 1);
        const key = x.key ? this.declarePattern(x.key, s, false) : undefined;
        const value = this.declarePattern(x.value, s, false);
        terms = { type: 'somein', key, value, domain };
        break;
      }
      case 'every': {
        const domain = this.term(x.domain, s, depth + 1);
        const inner = new Scope(s);
        const key = x.key ? this.declarePattern(x.key, inner, false) : undefined;
        const value = this.declarePattern(x.value, inner, false);
        const body = this.rewriteBody(x.body, inner as unknown as ScopeHandle, depth + 1);
        terms = { type: 'every', key, value, domain, body };
        break;
      }
      case 'term':
        terms = { type: 'term', term: this.term(x.term, s, depth + 1) };
        break;
      case 'call': {
        const opName =
          x.operator.value.length === 1 && x.operator.value[0].type === 'var' ? x.operator.value[0].value : undefined;
        if (opName === 'assign' && x.args.length === 2) {
          const rhs = this.term(x.args[1], s, depth + 1);
          const lhs = this.declarePattern(x.args[0], s, true);
          terms = { type: 'call', operator: x.operator, args: [lhs, rhs] };
        } else {
          terms = {
            type: 'call',
            operator: this.operator(x.operator, s),
            args: x.args.map((a) => this.term(a, s, depth + 1)),
          };
        }
        break;
      }
    }
    return { ...e, terms, with: withs };
  }

  /** `with` targets: input/data refs stay; rule names and import aliases resolve; builtins stay by name. */
  private withTarget(t: RefTerm, s: Scope): RefTerm {
    const head = t.value[0];
    if (head?.type === 'var' && head.value !== 'input' && head.value !== 'data' && !s.lookup(head.value)) {
      const g = this.ctx.globals.get(head.value);
      if (g) return refTerm([...g.value, ...t.value.slice(1)], t.location);
    }
    return t;
  }

  /** Call operators: package functions and import aliases become data refs; builtins keep their name. */
  private operator(op: RefTerm, s: Scope): RefTerm {
    const head = op.value[0];
    if (head?.type === 'var' && head.value !== 'data' && !s.lookup(head.value)) {
      const g = this.ctx.globals.get(head.value);
      if (g) return refTerm([...g.value.map((e) => withLoc(e, op.location)), ...op.value.slice(1)], op.location);
    }
    return op;
  }

  private term(t: Term, s: Scope, depth: number): Term {
    if (depth > MAX_DEPTH) {
      fail(this.ctx, 'expression nesting too deep', t.location);
      return t;
    }
    switch (t.type) {
      case 'var': {
        if (t.wildcard || t.value === '_') return { ...t, value: this.ctx.names.wildcard(), wildcard: true };
        const local = s.lookup(t.value);
        if (local !== undefined) return { ...t, value: local, original: t.original ?? t.value };
        if (t.value === 'input' || t.value === 'data') {
          // The head of `input.x` counts as a use (a later `input := …` is "referenced above"); a bare
          // `input` does not (OPA's rewriteDeclaredVarsInTerm walks into refs but stops at a root ref).
          s.seen.add(t.value);
          return t;
        }
        const g = this.ctx.globals.get(t.value);
        if (g)
          return refTerm(
            g.value.map((e) => withLoc(e, t.location)),
            t.location,
          );
        s.seen.add(t.value);
        return t;
      }
      case 'ref': {
        const root = bareRootDocument(t);
        if (root) {
          const local = s.lookup(root.value);
          return local === undefined ? t : withLoc({ ...root, value: local, original: root.value }, t.location);
        }
        const [head, ...rest] = t.value;
        const h = this.term(head, s, depth + 1);
        const tail = rest.map((e) => this.term(e, s, depth + 1));
        if (h.type === 'ref') return { ...t, value: [...h.value, ...tail] };
        return { ...t, value: [h, ...tail] };
      }
      case 'array':
      case 'set':
        return { ...t, value: t.value.map((e) => this.term(e, s, depth + 1)) };
      case 'object':
        return {
          ...t,
          value: t.value.map(([k, v]) => [this.term(k, s, depth + 1), this.term(v, s, depth + 1)] as [Term, Term]),
        };
      case 'call':
        return { ...t, operator: this.operator(t.operator, s), args: t.args.map((a) => this.term(a, s, depth + 1)) };
      case 'arraycomprehension':
      case 'setcomprehension': {
        const inner = new Scope(s);
        const body = this.rewriteBody(t.body, inner as unknown as ScopeHandle, depth + 1);
        const term = this.evaluatedInBody(this.term(t.term, inner, depth + 1), body);
        return { ...t, body, term };
      }
      case 'objectcomprehension': {
        const inner = new Scope(s);
        const body = this.rewriteBody(t.body, inner as unknown as ScopeHandle, depth + 1);
        const key = this.evaluatedInBody(this.term(t.key, inner, depth + 1), body);
        const value = this.evaluatedInBody(this.term(t.value, inner, depth + 1), body);
        return { ...t, body, key, value };
      }
      default:
        return t;
    }
  }

  /**
   * OPA's rewriteComprehensionTerms: a comprehension head that must be evaluated (it holds a ref, a call or a
   * comprehension) becomes a generated var, assigned by `var = <head>` appended to the body, so the head's
   * refs can bind vars as body refs do: `{k: labels[k] | startswith(k, "a")}` is safe.
   */
  private evaluatedInBody(t: Term, body: Body): Term {
    if (!needsEvaluation(t)) return t;
    const v: VarTerm = { type: 'var', value: this.ctx.names.temp(), location: t.location };
    body.push({
      index: body.length,
      negated: false,
      terms: {
        type: 'call',
        operator: refTerm([{ type: 'var', value: 'eq', location: t.location }], t.location),
        args: [v, t],
      },
      with: [],
      generated: true,
      location: t.location,
    });
    return v;
  }
}

/** Opaque scope handle so callers outside this file cannot poke at scopes. */
export interface ScopeHandle {
  readonly __scope: unique symbol;
}
