// OPA's RewriteLocalVars stage (v1/ast/compile.go rewriteLocalVars and its helpers), replayed for the errors
// it raises about names never used: `declared var x unused` (a `some x`, or an every key or value, nothing
// refers to), and in strict mode `assigned var x unused` and `unused argument x. (hint: use _ (wildcard
// variable) instead)`. Which of them OPA reports depends on its bookkeeping — the scope each name lives in,
// how often it is seen, the generated names (`__localN__`) whose order sorts the errors, and the earlier
// error of a rule body that silences the later checks of that body — so the replay keeps all of it. The
// stage's other errors (`var x assigned above`, …) are our renaming's (rewrite.ts); here they only silence.
import type { Body, Expr, Location, Module, Rule, SomeIn, Term, VarTerm, With } from '../ast/types.ts';
import { RegoError } from '../errors.ts';
import { bareRootName, declaredNamesOfExpr, isAssignment, type GlobalResolution } from './global-refs.ts';

type Occurrence = 'seen' | 'arg' | 'assigned' | 'declared';

class Scope {
  /** Name → the generated name it was rewritten to (a seen var keeps its own). */
  readonly names = new Map<string, string>();
  readonly occurrence = new Map<string, Occurrence>();
  readonly count = new Map<string, number>();

  copy(): Scope {
    const s = new Scope();
    for (const [k, v] of this.names) s.names.set(k, v);
    for (const [k, v] of this.occurrence) s.occurrence.set(k, v);
    for (const [k, v] of this.count) s.count.set(k, v);
    return s;
  }
}

/** OPA's localDeclaredVars: a stack of scopes. */
class Stack {
  constructor(private readonly scopes: Scope[]) {}
  get top(): Scope {
    return this.scopes[this.scopes.length - 1];
  }
  push(): void {
    this.scopes.push(new Scope());
  }
  pop(): void {
    this.scopes.pop();
  }
  insert(name: string, generated: string, occ: Occurrence): void {
    this.top.names.set(name, generated);
    this.top.occurrence.set(name, occ);
    this.top.count.set(name, 1);
  }
  declared(name: string): string | undefined {
    for (let i = this.scopes.length - 1; i >= 0; i--) {
      const g = this.scopes[i].names.get(name);
      if (g !== undefined) return g;
    }
    return undefined;
  }
  /** The occurrence in the innermost scope only. */
  occurrence(name: string): Occurrence | undefined {
    return this.top.occurrence.get(name);
  }
  globalOccurrence(name: string): Occurrence | undefined {
    for (let i = this.scopes.length - 1; i >= 0; i--) {
      const o = this.scopes[i].occurrence.get(name);
      if (o !== undefined) return o;
    }
    return undefined;
  }
  seen(name: string): void {
    for (let i = this.scopes.length - 1; i >= 0; i--) {
      const c = this.scopes[i].count.get(name);
      if (c !== undefined) {
        this.scopes[i].count.set(name, c + 1);
        return;
      }
    }
    this.top.count.set(name, 1);
  }
  countOf(name: string): number {
    for (let i = this.scopes.length - 1; i >= 0; i--) {
      const c = this.scopes[i].count.get(name);
      if (c !== undefined) return c;
    }
    return 0;
  }
}

const isWildcard = (name: string): boolean => name.startsWith('$');
const isGenerated = (name: string): boolean => name.startsWith('__local');
const isScalar = (t: Term): boolean =>
  t.type === 'null' || t.type === 'boolean' || t.type === 'number' || t.type === 'string';

/** Names OPA's generator would produce; a module using one makes the generator skip it. */
const GENERATED_NAME = /^__local\d+__$/;

/** A body error of the replay: reported (the unused-name errors this module owns), or only silencing. */
interface BodyError {
  error?: RegoError;
}

/** Vars a term's VarVisitor collects (everything, comprehension bodies and with targets included). */
function forEachVarNode(t: Term, fn: (v: VarTerm) => void): void {
  switch (t.type) {
    case 'var':
      fn(t);
      return;
    case 'ref':
    case 'array':
    case 'set':
      for (const e of t.value) forEachVarNode(e, fn);
      return;
    case 'object':
      for (const [k, v] of t.value) {
        forEachVarNode(k, fn);
        forEachVarNode(v, fn);
      }
      return;
    case 'call':
      forEachVarNode(t.operator, fn);
      for (const a of t.args) forEachVarNode(a, fn);
      return;
    case 'arraycomprehension':
    case 'setcomprehension':
      forEachVarNode(t.term, fn);
      for (const e of t.body) forEachVarNodeInExpr(e, fn);
      return;
    case 'objectcomprehension':
      forEachVarNode(t.key, fn);
      forEachVarNode(t.value, fn);
      for (const e of t.body) forEachVarNodeInExpr(e, fn);
      return;
    case 'templatestring':
      for (const p of t.parts)
        if ('terms' in p) forEachVarNodeInExpr(p, fn);
        else forEachVarNode(p, fn);
      return;
    default:
      return;
  }
}

function forEachVarNodeInExpr(e: Expr, fn: (v: VarTerm) => void): void {
  const x = e.terms;
  switch (x.type) {
    case 'term':
      forEachVarNode(x.term, fn);
      break;
    case 'call':
      forEachVarNode(x.operator, fn);
      for (const a of x.args) forEachVarNode(a, fn);
      break;
    case 'somedecl':
      for (const v of x.vars) fn(v);
      break;
    case 'somein':
      if (x.key) forEachVarNode(x.key, fn);
      forEachVarNode(x.value, fn);
      forEachVarNode(x.domain, fn);
      break;
    case 'every':
      if (x.key) forEachVarNode(x.key, fn);
      forEachVarNode(x.value, fn);
      forEachVarNode(x.domain, fn);
      for (const b of x.body) forEachVarNodeInExpr(b, fn);
      break;
  }
  for (const w of e.with) {
    forEachVarNode(w.target, fn);
    forEachVarNode(w.value, fn);
  }
}

/** The vars Unify makes safe in a pattern: not ref heads, object keys or closures (outputVarsForExprEq). */
function patternVars(t: Term, out: Set<string>): void {
  switch (t.type) {
    case 'var':
      out.add(t.value);
      return;
    case 'ref':
      for (const e of t.value.slice(1)) patternVars(e, out);
      return;
    case 'array':
    case 'set':
      for (const e of t.value) patternVars(e, out);
      return;
    case 'object':
      for (const [, v] of t.value) patternVars(v, out);
      return;
    case 'call':
      for (const a of t.args) patternVars(a, out);
      return;
    default:
      return;
  }
}

class Replay {
  private next = 0;
  /** Errors of the body being replayed (OPA's errs): any of them silences the body's later unused checks. */
  private errs: BodyError[] = [];
  /** Generated names something referred to (they are in the rewritten body: OPA's bodyvars). */
  private readonly referenced = new Set<string>();
  /** Var nodes the rewrite renames (a declaration, or a reference to one). */
  private readonly renamed = new Set<VarTerm>();
  /** The expression declaring each generated name. */
  private readonly declaredBy = new Map<string, Expr>();
  readonly out: RegoError[] = [];

  constructor(
    private readonly resolution: GlobalResolution,
    private readonly strict: boolean,
    private readonly taken: ReadonlySet<string>,
  ) {}

  /** OPA's localVarGenerator: `__localN__`, skipping names the modules use. */
  generate(): string {
    for (;;) {
      const n = `__local${this.next++}__`;
      if (!this.taken.has(n)) return n;
    }
  }

  private silence(): void {
    this.errs.push({});
  }

  private report(message: string, location: Location | undefined): void {
    this.errs.push({ error: new RegoError('rego_compile_error', message, location) });
  }

  /** One rule and its else chain; `appended` are the head-ref equalities RewriteRuleHeadRefs added to its body. */
  rule(rule: Rule, appended: Expr[]): void {
    const args = rule.head.args ?? [];
    const argsScope = new Scope();
    const unused = new Set<string>();
    if (this.strict) for (const a of args) forEachVarNode(a, (v) => unused.add(v.value));
    const argStack = new Stack([argsScope]);
    const argVar = (t: Term): void => {
      switch (t.type) {
        case 'var':
          if (argStack.declared(t.value) !== undefined) argStack.seen(t.value);
          else argStack.insert(t.value, this.generate(), 'arg');
          return;
        case 'object':
          for (const [, v] of t.value) argVar(v);
          return;
        case 'ref':
        case 'array':
          for (const e of t.value) argVar(e);
          return;
        default:
          return;
      }
    };
    for (const a of args) argVar(a);
    let first = true;
    for (let r: Rule | undefined = rule; r; r = r.else) {
      const scope = this.branch(r, argsScope, unused, first ? appended : []);
      first = false;
      for (const a of [...unused]) if ((scope.count.get(a) ?? 0) > 1) unused.delete(a);
    }
    if (this.strict)
      for (const a of unused)
        if (!isWildcard(a))
          this.out.push(
            new RegoError(
              'rego_compile_error',
              `unused argument ${a}. (hint: use _ (wildcard variable) instead)`,
              rule.head.location ?? rule.location,
            ),
          );
  }

  private flush(): void {
    for (const e of this.errs) if (e.error) this.out.push(e.error);
    this.errs = [];
  }

  /** The vars of a term as OPA sees them after the rewrite so far: renamed ones left out, resolved ones as refs. */
  private varNames(t: Term, out: Set<string>): void {
    forEachVarNode(t, (v) => {
      if (this.renamed.has(v)) return;
      const g = this.resolution.globals.get(v);
      out.add(g ? g.head : v.value);
    });
  }

  private branch(r: Rule, argsScope: Scope, unused: Set<string>, appended: Expr[]): Scope {
    const used = new Set<string>();
    const head = r.head;
    const mayHaveVars =
      (head.args ?? []).some((a) => !isScalar(a)) ||
      (head.key !== undefined && !isScalar(head.key)) ||
      (head.value !== undefined && !isScalar(head.value)) ||
      head.reference.slice(1).some((t) => !isScalar(t));
    if (mayHaveVars) {
      // Comprehensions in the head are rewritten first, each with a stack of its own; their errors are
      // reported at once.
      this.errs = [];
      for (const t of [...(head.args ?? []), head.key, head.value]) if (t) this.headTerm(t);
      this.flush();
      appended.forEach((e) => used.add(((e.terms as { args: Term[] }).args[0] as VarTerm).value));
      const rewrittenRef = new Set(appended.map((e) => (e.terms as { args: Term[] }).args[1]));
      for (const t of head.reference.slice(1)) if (!isScalar(t) && !rewrittenRef.has(t)) this.varNames(t, used);
      if (head.key && !isScalar(head.key)) this.varNames(head.key, used);
      if (head.value && !isScalar(head.value)) {
        const valueVars = new Set<string>();
        this.varNames(head.value, valueVars);
        for (const v of valueVars) used.add(v);
        for (const a of [...unused]) if (valueVars.has(a)) unused.delete(a);
      }
    }
    const stack = new Stack([argsScope.copy()]);
    this.errs = [];
    this.body(stack, used, [...r.body, ...appended]);
    this.flush();
    return stack.top;
  }

  /** rewriteNestedHeadVarLocalTransform: objects and sets are walked, comprehensions get a fresh stack. */
  private headTerm(t: Term): void {
    switch (t.type) {
      case 'object':
        for (const [k, v] of t.value) {
          this.headTerm(k);
          this.headTerm(v);
        }
        return;
      case 'set':
        for (const e of t.value) this.headTerm(e);
        return;
      case 'arraycomprehension':
      case 'setcomprehension':
      case 'objectcomprehension':
        this.comprehension(new Stack([new Scope()]), t);
        return;
      case 'templatestring': {
        const stack = new Stack([new Scope()]);
        for (const p of t.parts)
          if ('terms' in p) {
            stack.push();
            this.exprTerms(stack, p);
            stack.pop();
          }
        return;
      }
      case 'ref':
      case 'array':
        for (const e of t.value) this.headTerm(e);
        return;
      case 'call':
        this.headTerm(t.operator);
        for (const a of t.args) this.headTerm(a);
        return;
      default:
        return;
    }
  }

  /** rewriteDeclaredVarsInBody, then its two unused checks. */
  private body(stack: Stack, used: ReadonlySet<string>, body: Body): void {
    for (const e of body) {
      const x = e.terms;
      if (isAssignment(e)) this.assignment(stack, e);
      else if (x.type === 'somedecl') this.someDecl(stack, e, x.vars);
      else if (x.type === 'somein') this.someIn(stack, e, x);
      else if (x.type === 'every') this.every(stack, e, x);
      else this.exprTerms(stack, e);
    }
    const usedGenerated = new Set([...used].map((u) => stack.declared(u) ?? u));
    const reverse = new Map<string, string>();
    for (const [name, generated] of stack.top.names) reverse.set(generated, name);
    if (this.strict && this.errs.length === 0) {
      const unusedAssigned: string[] = [];
      for (const [name, occ] of stack.top.occurrence)
        if (occ === 'assigned' && !isWildcard(name) && stack.countOf(name) <= 1) {
          const g = stack.top.names.get(name)!;
          if (!usedGenerated.has(g)) unusedAssigned.push(g);
        }
      for (const g of unusedAssigned.sort()) {
        const by = this.declaredBy.get(g);
        const at = by && body.includes(by) ? by : body[0];
        this.report(`assigned var ${reverse.get(g)} unused`, at?.location);
      }
    }
    if (this.errs.length === 0) {
      const unusedDeclared: string[] = [];
      for (const [name, occ] of stack.top.occurrence)
        if (occ === 'declared') {
          const g = stack.top.names.get(name)!;
          if (!this.referenced.has(g) && !usedGenerated.has(g)) unusedDeclared.push(g);
        }
      for (const g of unusedDeclared.sort()) {
        const name = reverse.get(g)!;
        if (isGenerated(name)) continue;
        const at = body.find((e) => declaredNamesOfExpr(e).has(name)) ?? body[0];
        this.report(`declared var ${name} unused`, at?.location);
      }
    }
  }

  /** rewriteDeclaredVar: a name new to the innermost scope gets a generated name; anything else is an error. */
  private declare(stack: Stack, name: string, occ: Occurrence, by: Expr, node?: VarTerm): boolean {
    if (stack.occurrence(name) !== undefined) {
      this.silence(); // var x referenced / assigned / declared above, arg x redeclared
      return false;
    }
    const g = this.generate();
    stack.insert(name, g, occ);
    this.declaredBy.set(g, by);
    if (node) this.renamed.add(node);
    return true;
  }

  /** A reference to a var (rewriteDeclaredVarsInTerm's Var case). */
  private seeVar(stack: Stack, name: string, node?: VarTerm): void {
    const g = stack.declared(name);
    if (g !== undefined) {
      this.referenced.add(g);
      stack.seen(name);
      if (node && g !== name) this.renamed.add(node);
    } else if (stack.occurrence(name) === undefined) {
      stack.insert(name, name, 'seen');
    }
  }

  /** A bare root document: renamed when a local of that name is declared, never counted as seen. */
  private seeRoot(stack: Stack, name: string, node?: VarTerm): void {
    const occ = stack.globalOccurrence(name);
    if (occ === undefined || occ === 'seen') return;
    const g = stack.declared(name);
    if (g !== undefined) this.referenced.add(g);
    if (node) this.renamed.add(node);
  }

  /** rewriteDeclaredVarsInTermRecursive: WalkTerms, stopping where rewriteDeclaredVarsInTerm says. */
  private term(stack: Stack, t: Term): void {
    switch (t.type) {
      case 'var': {
        const g = this.resolution.globals.get(t);
        // A resolved var is the ref of its global now: `data.pkg.rule`, or `input` alone.
        if (!g) this.seeVar(stack, t.value, t);
        else if (g.bare) this.seeRoot(stack, g.head);
        else this.seeVar(stack, g.head);
        return;
      }
      case 'ref': {
        const root = bareRootName(t);
        if (root) {
          this.seeRoot(stack, root, t.value[0] as VarTerm);
          return;
        }
        // A resolved head merges into the ref (`foo.x` → `input.x`): its head is a plain var then.
        const head = t.value[0];
        const resolvedHead = head?.type === 'var' ? this.resolution.globals.get(head) : undefined;
        if (resolvedHead) this.seeVar(stack, resolvedHead.head);
        for (const e of resolvedHead ? t.value.slice(1) : t.value) this.term(stack, e);
        return;
      }
      case 'call':
        this.calledFunction(stack, t.operator);
        this.term(stack, t.operator);
        for (const a of t.args) this.term(stack, a);
        return;
      case 'object':
        for (const [k, v] of t.value) {
          this.term(stack, k);
          this.term(stack, v);
        }
        return;
      case 'array':
      case 'set':
        for (const e of t.value) this.term(stack, e);
        return;
      case 'arraycomprehension':
      case 'setcomprehension':
      case 'objectcomprehension':
        this.comprehension(stack, t);
        return;
      case 'templatestring':
        for (const p of t.parts)
          if ('terms' in p) this.exprTerms(stack, p);
          else this.term(stack, p);
        return;
      default:
        return;
    }
  }

  /** `called function f shadowed`: a call whose operator names a local. */
  private calledFunction(stack: Stack, operator: Term): void {
    let shadowed = false;
    forEachVarNode(operator, (v) => {
      if (shadowed) return;
      const name = this.resolution.globals.get(v)?.head ?? v.value;
      const g = stack.declared(name);
      if (g !== undefined && g !== name) shadowed = true;
    });
    if (shadowed) this.silence();
  }

  private comprehension(stack: Stack, t: Term & { body: Body }): void {
    const used = new Set<string>();
    if (t.type === 'objectcomprehension') {
      this.varNames(t.key, used);
      this.varNames(t.value, used);
    } else if (t.type === 'arraycomprehension' || t.type === 'setcomprehension') {
      this.varNames(t.term, used);
    }
    stack.push();
    this.body(stack, used, t.body);
    if (t.type === 'objectcomprehension') {
      this.term(stack, t.key);
      this.term(stack, t.value);
    } else if (t.type === 'arraycomprehension' || t.type === 'setcomprehension') {
      this.term(stack, t.term);
    }
    stack.pop();
  }

  /** rewriteDeclaredVarsInExpr: the expression's terms, then its with clauses. */
  private exprTerms(stack: Stack, e: Expr): void {
    const x = e.terms;
    switch (x.type) {
      case 'term':
        this.term(stack, x.term);
        break;
      case 'call':
        this.term(stack, x.operator);
        for (const a of x.args) this.term(stack, a);
        break;
      case 'somedecl':
        for (const v of x.vars) this.term(stack, v);
        break;
      case 'somein':
        if (x.key) this.term(stack, x.key);
        this.term(stack, x.value);
        this.term(stack, x.domain);
        break;
      case 'every':
        if (x.key) this.term(stack, x.key);
        this.term(stack, x.value);
        this.term(stack, x.domain);
        for (const b of x.body) this.exprTerms(stack, b);
        break;
    }
    for (const w of e.with) this.withClause(stack, w);
  }

  private withClause(stack: Stack, w: With): void {
    this.term(stack, w.target);
    this.term(stack, w.value);
  }

  private assignment(stack: Stack, e: Expr & { terms: { type: 'call'; args: Term[] } }): void {
    if (e.negated) {
      this.silence(); // cannot assign vars inside negated expression
      return;
    }
    const args = e.terms.args;
    if (args.length !== 2) return;
    this.term(stack, args[1]);
    for (const w of e.with) this.term(stack, w.value);
    const lhs = (t: Term): void => {
      switch (t.type) {
        case 'var':
          this.declare(stack, t.value, 'assigned', e, t);
          return;
        case 'array':
          for (const x of t.value) lhs(x);
          return;
        case 'object':
          for (const [, v] of t.value) lhs(v);
          return;
        case 'ref': {
          const root = bareRootName(t);
          if (root) this.declare(stack, root, 'assigned', e, t.value[0] as VarTerm);
          else this.silence(); // cannot assign to ref
          return;
        }
        default:
          this.silence(); // cannot assign to <type>
          return;
      }
    };
    lhs(args[0]);
  }

  private someDecl(stack: Stack, e: Expr, vars: VarTerm[]): void {
    for (const v of vars) if (!this.declare(stack, v.value, 'declared', e, v)) return;
  }

  /**
   * `some k, v in xs` becomes `v = xs[k]` (a generated key when there is none), declaring the vars that
   * equality binds, in name order, before its terms are walked.
   */
  private someIn(stack: Stack, e: Expr, x: SomeIn): void {
    const key: Term = x.key ?? { type: 'var', value: this.generate(), location: e.location };
    const container = new Set<string>();
    this.varNames(x.domain, container);
    const outputs = new Set<string>();
    patternVars(key, outputs);
    patternVars(x.value, outputs);
    for (const name of [...outputs].filter((n) => !container.has(n)).sort())
      if (!this.declare(stack, name, 'declared', e)) return;
    this.seeVar(stack, 'eq');
    this.term(stack, x.value);
    const d = x.domain;
    if (d.type === 'ref') for (const el of d.value) this.term(stack, el);
    else if (d.type === 'var' && this.resolution.globals.has(d))
      this.seeVar(stack, this.resolution.globals.get(d)!.head);
    else this.term(stack, d);
    if (x.key) this.term(stack, x.key);
    else this.seeVar(stack, (key as VarTerm).value);
    for (const w of e.with) this.withClause(stack, w);
  }

  private every(stack: Stack, e: Expr, x: Extract<Expr['terms'], { type: 'every' }>): void {
    this.term(stack, x.domain);
    stack.push();
    try {
      if (x.key) {
        if (x.key.type === 'var' && !isWildcard(x.key.value) && !this.declare(stack, x.key.value, 'declared', e, x.key))
          return;
      } else {
        this.generate();
      }
      if (
        x.value.type === 'var' &&
        !isWildcard(x.value.value) &&
        !this.declare(stack, x.value.value, 'declared', e, x.value)
      )
        return;
      this.body(stack, new Set(), x.body);
      for (const w of e.with) this.withClause(stack, w);
    } finally {
      stack.pop();
    }
  }
}

/**
 * The unused-name errors of OPA's RewriteLocalVars over modules (already in OPA's module order), after the
 * head-ref rewrite that precedes it: a non-var, non-scalar element of a rule head's ref (`p[[x]]`) takes a
 * generated name, its term moving to an equality appended to the rule's body.
 */
export function unusedLocalErrors(
  modules: readonly Module[],
  resolution: GlobalResolution,
  strict: boolean,
): RegoError[] {
  const taken = new Set<string>();
  const collect = (t: Term): void =>
    forEachVarNode(t, (v) => {
      if (GENERATED_NAME.test(v.value)) taken.add(v.value);
    });
  for (const m of modules)
    for (const rule of m.rules)
      for (let r: Rule | undefined = rule; r; r = r.else) {
        for (const t of [...r.head.reference, ...(r.head.args ?? []), r.head.key, r.head.value]) if (t) collect(t);
        for (const e of r.body)
          forEachVarNodeInExpr(e, (v) => {
            if (GENERATED_NAME.test(v.value)) taken.add(v.value);
          });
      }
  const replay = new Replay(resolution, strict, taken);
  const appended = new Map<Rule, Expr[]>();
  for (const m of modules)
    for (const rule of m.rules) {
      const extra: Expr[] = [];
      for (const t of rule.head.reference.slice(1)) {
        if (t.type === 'var' || isScalar(t)) continue;
        const generated: VarTerm = { type: 'var', value: replay.generate(), location: t.location };
        extra.push({
          index: rule.body.length + extra.length,
          negated: false,
          terms: {
            type: 'call',
            operator: {
              type: 'ref',
              value: [{ type: 'var', value: 'eq', location: t.location }],
              location: t.location,
            },
            args: [generated, t],
          },
          with: [],
          generated: true,
          location: t.location,
        });
      }
      appended.set(rule, extra);
    }
  for (const m of modules) for (const rule of m.rules) replay.rule(rule, appended.get(rule) ?? []);
  return replay.out;
}
