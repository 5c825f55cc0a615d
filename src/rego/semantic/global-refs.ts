// OPA's ResolveRefs stage (v1/ast/compile.go resolveAllRefs), as far as the checks of the next stages need it:
// which vars of a rule stand for a global — a rule of the package or an import — rather than a local, and
// which imports no var resolves to (strict mode's `import data.x unused`). Our own resolution happens
// while renaming (rewrite.ts); this replay only observes.
import type { Body, Expr, Import, Location, Module, Rule, Term, VarTerm } from '../ast/types.ts';
import { RegoError } from '../errors.ts';
import { refName } from './terms.ts';

/** What a resolved var becomes: a ref headed by `data` or `input`; `bare` when it is that root document alone. */
export interface ResolvedGlobal {
  head: 'data' | 'input';
  bare: boolean;
}

export interface GlobalResolution {
  /** Vars OPA replaces by the ref of a global, and what they become. */
  readonly globals: ReadonlyMap<VarTerm, ResolvedGlobal>;
  /** Imports of `data`/`input` no var of their module resolves to, per module, in order. */
  readonly unusedImports: ReadonlyMap<Module, readonly Import[]>;
  /** Per module, `args must not shadow input (use a different variable name)`, one per rule, in order. */
  readonly errors: ReadonlyMap<Module, readonly RegoError[]>;
}

/** OPA's Import.Name: the alias, else the last path element. */
export function importName(imp: Import): string {
  if (imp.alias !== undefined) return imp.alias;
  const last = imp.path.value[imp.path.value.length - 1];
  return last?.type === 'var' || last?.type === 'string' ? last.value : '';
}

/** OPA's Import.String: `import data.a.b` or `import data.a.b as c`. */
export function importText(imp: Import): string {
  const parts = imp.path.value.map((t) => (t.type === 'var' || t.type === 'string' ? t.value : ''));
  return `import ${refName(parts)}${imp.alias !== undefined ? ` as ${imp.alias}` : ''}`;
}

/** `future.keywords…` and `rego.v1` imports bring no name into scope. */
export function isKeywordImport(imp: Import): boolean {
  const head = imp.path.value[0];
  return head?.type === 'var' && (head.value === 'future' || head.value === 'rego');
}

/** The bare root document `input` or `data` (how the parser reads either alone), else undefined. */
export function bareRootName(t: Term): 'input' | 'data' | undefined {
  if (t.type !== 'ref' || t.value.length !== 1) return undefined;
  const head = t.value[0];
  return head.type === 'var' && (head.value === 'input' || head.value === 'data') ? head.value : undefined;
}

/** Whether an expression is `x := y` (OPA's Expr.IsAssignment), however many operands it has. */
export function isAssignment(e: Expr): e is Expr & { terms: { type: 'call'; args: Term[] } } {
  const x = e.terms;
  if (x.type !== 'call' || x.operator.value.length !== 1) return false;
  const op = x.operator.value[0];
  return op.type === 'var' && op.value === 'assign';
}

/** Every var inside a term, depth-first (OPA's WalkVars). */
function varsOf(t: Term, out: Set<string>): void {
  switch (t.type) {
    case 'var':
      out.add(t.value);
      return;
    case 'ref':
    case 'array':
    case 'set':
      for (const e of t.value) varsOf(e, out);
      return;
    case 'object':
      for (const [k, v] of t.value) {
        varsOf(k, out);
        varsOf(v, out);
      }
      return;
    case 'call':
      varsOf(t.operator, out);
      for (const a of t.args) varsOf(a, out);
      return;
    default:
      return;
  }
}

/**
 * OPA's declaredVars: names a body declares with `:=` or `some` (also inside `every` bodies, not inside
 * comprehensions, which have their own).
 */
export function declaredNames(body: Body, out = new Set<string>()): Set<string> {
  for (const e of body) declaredNamesOfExpr(e, out);
  return out;
}

export function declaredNamesOfExpr(e: Expr, out = new Set<string>()): Set<string> {
  const x = e.terms;
  if (isAssignment(e)) {
    if (x.type === 'call' && x.args.length === 2) varsOf(x.args[0], out);
  } else if (x.type === 'somedecl') {
    for (const v of x.vars) out.add(v.value);
  } else if (x.type === 'somein') {
    if (x.key) varsOf(x.key, out);
    varsOf(x.value, out);
  } else if (x.type === 'every') {
    declaredNames(x.body, out);
  }
  return out;
}

/** Walks one module's rules the way resolveRefsInRule does, recording the vars that resolve to a global. */
class Resolver {
  private ignore: ReadonlySet<string>[] = [];
  readonly used = new Set<string>();

  constructor(
    private readonly names: ReadonlyMap<string, ResolvedGlobal>,
    private readonly out: Map<VarTerm, ResolvedGlobal>,
  ) {}

  /** Resolves a rule (not its else chain); returns the arg shadowing a root document, if any. */
  rule(rule: Rule): 'input' | 'data' | undefined {
    const args = new Set<string>();
    let shadowed: 'input' | 'data' | undefined;
    const argVars = (t: Term): void => {
      if (shadowed) return;
      const root = bareRootName(t);
      if (root) {
        shadowed = root;
        return;
      }
      switch (t.type) {
        case 'var':
          args.add(t.value);
          return;
        case 'object':
          for (const [, v] of t.value) argVars(v);
          return;
        case 'ref':
        case 'array':
          for (const e of t.value) argVars(e);
          return;
        default:
          return;
      }
    };
    for (const a of rule.head.args ?? []) argVars(a);
    if (shadowed) return shadowed;
    this.ignore = [args, declaredNames(rule.body)];
    for (const t of rule.head.reference.slice(1)) this.term(t);
    if (rule.head.key) this.term(rule.head.key);
    if (rule.head.value) this.term(rule.head.value);
    this.body(rule.body);
    return undefined;
  }

  private var(v: VarTerm): void {
    if (v.wildcard) return;
    const g = this.names.get(v.value);
    if (!g || this.ignore.some((s) => s.has(v.value))) return;
    this.out.set(v, g);
    this.used.add(v.value);
  }

  private scoped(names: ReadonlySet<string>, f: () => void): void {
    this.ignore = [...this.ignore, names];
    try {
      f();
    } finally {
      this.ignore = this.ignore.slice(0, -1);
    }
  }

  private term(t: Term): void {
    switch (t.type) {
      case 'var':
        this.var(t);
        return;
      case 'ref':
      case 'array':
      case 'set':
        for (const e of t.value) this.term(e);
        return;
      case 'object':
        for (const [k, v] of t.value) {
          this.term(k);
          this.term(v);
        }
        return;
      case 'call':
        this.term(t.operator);
        for (const a of t.args) this.term(a);
        return;
      case 'arraycomprehension':
      case 'setcomprehension':
        this.scoped(declaredNames(t.body), () => {
          this.term(t.term);
          this.body(t.body);
        });
        return;
      case 'objectcomprehension':
        this.scoped(declaredNames(t.body), () => {
          this.term(t.key);
          this.term(t.value);
          this.body(t.body);
        });
        return;
      case 'templatestring':
        for (const p of t.parts) if ('terms' in p) this.expr(p);
        return;
      default:
        return;
    }
  }

  private body(b: Body): void {
    for (const e of b) this.expr(e);
  }

  private expr(e: Expr): void {
    const x = e.terms;
    switch (x.type) {
      case 'term':
        this.term(x.term);
        break;
      case 'call':
        this.term(x.operator);
        for (const a of x.args) this.term(a);
        break;
      case 'somedecl':
        break;
      case 'somein':
        if (x.key) this.term(x.key);
        this.term(x.value);
        this.term(x.domain);
        break;
      case 'every': {
        // The key and value are locals of the every, its domain included (as resolveRefsInExpr pushes them first).
        const locals = new Set<string>();
        if (x.key) varsOf(x.key, locals);
        varsOf(x.value, locals);
        this.scoped(locals, () => {
          this.term(x.domain);
          this.body(x.body);
        });
        break;
      }
    }
    for (const w of e.with) {
      this.term(w.target);
      this.term(w.value);
    }
  }
}

function packageKey(m: Module): string {
  return JSON.stringify(m.package.path.slice(1).map((t) => (t.type === 'string' || t.type === 'var' ? t.value : '')));
}

/** Replays ResolveRefs over modules. */
export function resolveGlobals(modules: readonly Module[]): GlobalResolution {
  const rulesByPackage = new Map<string, Set<string>>();
  for (const m of modules) {
    const k = packageKey(m);
    let s = rulesByPackage.get(k);
    if (!s) rulesByPackage.set(k, (s = new Set()));
    for (const r of m.rules) {
      const first = r.head.reference[0];
      if (first?.type === 'var') s.add(first.value);
    }
  }
  const globals = new Map<VarTerm, ResolvedGlobal>();
  const unusedImports = new Map<Module, Import[]>();
  const errors = new Map<Module, RegoError[]>();
  for (const m of modules) {
    const moduleErrors: RegoError[] = [];
    errors.set(m, moduleErrors);
    // Rule names first, imports after: an import of the same name wins (OPA's getGlobals).
    const names = new Map<string, ResolvedGlobal>();
    for (const n of rulesByPackage.get(packageKey(m)) ?? []) names.set(n, { head: 'data', bare: false });
    for (const imp of m.imports) {
      if (isKeywordImport(imp)) continue;
      const head = imp.path.value[0];
      if (head?.type !== 'var' || (head.value !== 'data' && head.value !== 'input')) continue;
      names.set(importName(imp), { head: head.value, bare: imp.path.value.length === 1 });
    }
    const resolver = new Resolver(names, globals);
    for (const rule of m.rules) {
      for (let r: Rule | undefined = rule; r; r = r.else) {
        const shadowed = resolver.rule(r);
        if (shadowed) {
          // Reported once: the else branches repeat the arguments, and OPA's walk stops at the error.
          moduleErrors.push(shadowError(shadowed, r.location ?? r.head.location));
          break;
        }
      }
    }
    unusedImports.set(
      m,
      m.imports.filter((imp) => !isKeywordImport(imp) && !resolver.used.has(importName(imp))),
    );
  }
  return { globals, unusedImports, errors };
}

function shadowError(root: string, location: Location | undefined): RegoError {
  return new RegoError('rego_compile_error', `args must not shadow ${root} (use a different variable name)`, location);
}
