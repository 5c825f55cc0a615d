// Post-rewrite checks (OPA's checkRecursion, checkWithModifiers, checkTypes for calls): builtin
// existence/arity, refused (non-replayable) builtins, `with` targets and recursion between rules.
import type { Body, Expr, RefTerm, Term } from '../ast/types.ts';
import type { BuiltinTable } from '../builtins/capabilities.ts';
import { refusedBuiltins } from '../builtins/declarations.ts';
import type { OpaType } from '../builtins/types.ts';
import { RegoError } from '../errors.ts';
import { MAX_DEPTH } from './rewrite.ts';
import { buildTrie, type TrieNode } from './rule-trie.ts';
import { dataNameKey, isDataName, isConstantTerm, operatorName, refNameParts } from './terms.ts';
import type { CompiledRule, RuleSet } from './types.ts';

/** Why the Guardian refuses a builtin (declarations.ts refusedBuiltins); undefined for the others. */
export function refusalReason(name: string): string | undefined {
  return refusedBuiltins.get(name);
}

/** OPA's type notation for error messages: `any<number, string>`, `array[any]`, `set[string]`. */
export function formatType(t: OpaType | undefined): string {
  if (!t) return 'any';
  switch (t.type) {
    case 'any':
      return t.of?.length ? `any<${t.of.map(formatType).join(', ')}>` : 'any';
    case 'array':
      if (t.static?.length) return `array<${t.static.map(formatType).join(', ')}>`;
      return `array[${formatType(t.dynamic)}]`;
    case 'set':
      return `set[${formatType(t.of)}]`;
    case 'object':
      if (t.static?.length) return `object<${t.static.map((s) => `${s.key}: ${formatType(s.value)}`).join(', ')}>`;
      return t.dynamic ? `object[${formatType(t.dynamic.key)}: ${formatType(t.dynamic.value)}]` : 'object';
    default:
      return t.type;
  }
}

/** Static type of a term where it is obvious from the syntax. */
function literalType(t: Term): string {
  switch (t.type) {
    case 'null':
    case 'boolean':
    case 'number':
    case 'string':
      return t.type;
    case 'array':
    case 'arraycomprehension':
      return 'array[any]';
    case 'set':
    case 'setcomprehension':
      return 'set[any]';
    case 'object':
    case 'objectcomprehension':
      return 'object[any: any]';
    default:
      return 'any';
  }
}

function typeAccepts(want: OpaType | undefined, t: Term): boolean {
  if (!want || (want.type === 'any' && !want.of)) return true;
  const lit =
    t.type === 'null' || t.type === 'boolean' || t.type === 'number' || t.type === 'string'
      ? t.type
      : t.type === 'array' || t.type === 'arraycomprehension'
        ? 'array'
        : t.type === 'set' || t.type === 'setcomprehension'
          ? 'set'
          : t.type === 'object' || t.type === 'objectcomprehension'
            ? 'object'
            : undefined;
  if (!lit) return true;
  const accepts = (w: OpaType): boolean => (w.type === 'any' ? (w.of ? w.of.some(accepts) : true) : w.type === lit);
  return accepts(want);
}

export interface CheckContext {
  ruleSetsByPath: ReadonlyMap<string, RuleSet>;
  errors: RegoError[];
  builtinsUsed: Set<string>;
  /** Files of the modules read as Rego v0: only they may call deprecated builtins. */
  v0Files?: ReadonlySet<string>;
  /** The builtins calls may name (the toolchain's, or a capabilities document's). */
  builtins: BuiltinTable;
  /**
   * Under a capabilities document, the refused builtins it lists: only these are refused by name; another is
   * undefined, as OPA checks calls against the document first (CompileOptions.deferredRefused).
   */
  listedRefused?: ReadonlySet<string>;
}

/** Walks rule bodies checking calls and `with` targets. */
export class CallChecker {
  /** File of the rule being checked. */
  private file = '';

  constructor(private readonly ctx: CheckContext) {}

  checkRule(r: CompiledRule): void {
    this.file = r.file;
    for (let x: CompiledRule | undefined = r; x; x = x.else) {
      this.body(x.body, 0);
      for (const t of [x.key, x.value, ...x.args]) if (t) this.term(t, 0);
    }
  }

  /** Checks a query's body; `file` is the query's (CheckContext.v0Files may name it). */
  checkQuery(b: Body, file: string): void {
    this.file = file;
    this.body(b, 0);
  }

  body(b: Body, depth: number): void {
    for (const e of b) this.expr(e, depth + 1);
  }

  private err(
    code: 'rego_compile_error' | 'rego_type_error',
    msg: string,
    t: { location?: Term['location'] } | undefined,
    details?: string[],
  ): void {
    this.ctx.errors.push(new RegoError(code, msg, t?.location, details));
  }

  private expr(e: Expr, depth: number): void {
    if (depth > MAX_DEPTH) return;
    for (const w of e.with) {
      this.withTarget(w.target, w);
      this.term(w.value, depth + 1);
    }
    const x = e.terms;
    switch (x.type) {
      case 'term':
        this.term(x.term, depth + 1);
        break;
      case 'call':
        this.call(x.operator, x.args, e, depth);
        break;
      case 'somein':
        this.term(x.domain, depth + 1);
        if (x.key) this.term(x.key, depth + 1);
        this.term(x.value, depth + 1);
        break;
      case 'every':
        this.term(x.domain, depth + 1);
        this.body(x.body, depth + 1);
        break;
      default:
        break;
    }
  }

  private withTarget(target: RefTerm, w: { location?: Term['location'] }): void {
    const head = target.value[0];
    if (head?.type !== 'var') {
      this.err('rego_compile_error', 'with keyword target must reference existing input, data, or a function', w);
      return;
    }
    if (head.value === 'input' || head.value === 'data') {
      const name = operatorName(target);
      if (head.value === 'data' && name !== undefined) {
        const path = refNameParts(name).slice(1);
        // OPA: a with target may replace a whole rule (or a subtree of rules), never part of one.
        for (let k = 1; k < path.length; k++) {
          if (this.ctx.ruleSetsByPath.has(path.slice(0, k).join('/'))) {
            this.err(
              'rego_compile_error',
              'with keyword cannot partially replace virtual document(s)',
              target.location ? target : w,
            );
            return;
          }
        }
      }
      return;
    }
    const name = operatorName(target);
    if (name && (this.ctx.builtins.has(name) || refusalReason(name))) return;
    this.err('rego_compile_error', `with keyword target must reference existing input, data, or a function`, w);
  }

  private call(op: RefTerm, args: Term[], at: { location?: Term['location'] }, depth: number): void {
    for (const a of args) this.term(a, depth + 1);
    const name = operatorName(op);
    if (name === undefined) {
      this.err('rego_compile_error', 'invalid function name', op.location ? op : at);
      return;
    }
    if (name === 'eq' || name === 'assign') {
      if (args.length !== 2) this.err('rego_type_error', `${name === 'eq' ? '=' : ':='}: arity mismatch`, at);
      return;
    }
    if (isDataName(name)) {
      const rs = this.ctx.ruleSetsByPath.get(dataNameKey(name));
      // `f()` of a rule that is not a function (OPA reads a head `f() := x` as the rule `f := x`) is the
      // rule's value, as OPA evaluates it.
      if (rs && rs.kind !== 'function' && args.length === 0) return;
      if (rs?.kind !== 'function') {
        // OPA's checkUndefinedFuncs reports these as type errors.
        this.err('rego_type_error', `undefined function ${name}`, op.location ? op : at);
        return;
      }
      if (args.length !== rs.arity && args.length !== rs.arity + 1) {
        this.err('rego_type_error', `${name}: arity mismatch`, op.location ? op : at, [
          `have: (${args.map(literalType).join(', ')})`,
          `want: (${Array(rs.arity).fill('any').join(', ')})`,
        ]);
      }
      return;
    }
    // A refused builtin compiles only where the table declares it: the authoring tools' table
    // (CompileOptions.refusedBuiltins); `policy build` and the Guardian's tables never do.
    const listed = this.ctx.listedRefused?.has(name) ?? true;
    const refused = this.ctx.builtins.has(name) || !listed ? undefined : refusalReason(name);
    if (refused) {
      this.err('rego_compile_error', `${name} is not allowed in Guardian policies: ${refused}`, op.location ? op : at);
      return;
    }
    const decl = this.ctx.builtins.get(name);
    if (!decl) {
      this.err('rego_type_error', `undefined function ${name}`, op.location ? op : at);
      return;
    }
    if (decl.deprecated && !this.ctx.v0Files?.has(this.file)) {
      this.err('rego_type_error', `deprecated built-in function calls in expression: ${name}`, op.location ? op : at);
      return;
    }
    this.ctx.builtinsUsed.add(name);
    const want = decl.decl.args ?? [];
    if (decl.decl.variadic) return;
    const voidFn = decl.decl.result === undefined;
    const ok = args.length === want.length || (!voidFn && args.length === want.length + 1);
    if (!ok) {
      this.err('rego_type_error', `${name}: arity mismatch`, op.location ? op : at, [
        `have: (${args.map(literalType).join(', ')})`,
        `want: (${want.map(formatType).join(', ')})`,
      ]);
      return;
    }
    want.forEach((w, i) => {
      if (!typeAccepts(w, args[i])) {
        this.err('rego_type_error', `${name}: invalid argument(s)`, args[i].location ? args[i] : at, [
          `have: (${args.slice(0, want.length).map(literalType).join(', ')})`,
          `want: (${want.map(formatType).join(', ')})`,
        ]);
      }
    });
  }

  private term(t: Term, depth: number): void {
    if (depth > MAX_DEPTH) return;
    switch (t.type) {
      case 'ref':
      case 'array':
      case 'set':
        for (const e of t.value) this.term(e, depth + 1);
        return;
      case 'object':
        for (const [k, v] of t.value) {
          this.term(k, depth + 1);
          this.term(v, depth + 1);
        }
        return;
      case 'call':
        this.call(t.operator, t.args, t, depth + 1);
        return;
      case 'arraycomprehension':
      case 'setcomprehension':
        this.term(t.term, depth + 1);
        this.body(t.body, depth + 1);
        return;
      case 'objectcomprehension':
        this.term(t.key, depth + 1);
        this.term(t.value, depth + 1);
        this.body(t.body, depth + 1);
        return;
      default:
        return;
    }
  }
}

/**
 * Rule sets a data ref may read, matched as OPA's `GetRulesDynamicWithOpts` does for its dependency graph: a
 * constant element selects its child (rules there end the match), a dynamic one tries every child (taking
 * the rules it meets and matching the rest of the ref below it), and the end of the ref takes everything
 * beneath. So `data.lib[x].deny` reaches only the `deny` rule sets one level below `lib`, not its siblings.
 */
function ruleSetsReadBy(t: RefTerm, root: TrieNode, out: Set<RuleSet>): void {
  const head = t.value[0];
  if (head?.type !== 'var' || head.value !== 'data') return;
  const everythingBelow = (n: TrieNode): void => {
    const stack = [n];
    while (stack.length) {
      const x = stack.pop()!;
      if (x.ruleSet) out.add(x.ruleSet);
      for (const c of x.children.values()) stack.push(c);
    }
  };
  const match = (n: TrieNode, i: number): void => {
    if (i >= t.value.length) {
      everythingBelow(n);
      return;
    }
    const e = t.value[i];
    if (isConstantTerm(e)) {
      // Rule paths are strings: any other constant names no rule.
      const c = e.type === 'string' ? n.children.get(e.value) : undefined;
      if (!c) return;
      if (c.ruleSet) out.add(c.ruleSet);
      else match(c, i + 1);
      return;
    }
    for (const c of n.children.values()) {
      if (c.ruleSet) out.add(c.ruleSet);
      match(c, i + 1);
    }
  };
  match(root, 1);
}

/** Rule sets a rule set depends on (refs to data paths that hit or contain rules, and calls). */
function dependencies(rs: RuleSet, root: TrieNode): RuleSet[] {
  const out = new Set<RuleSet>();
  const visitTerm = (t: Term, depth: number): void => {
    if (depth > MAX_DEPTH) return;
    switch (t.type) {
      case 'ref': {
        ruleSetsReadBy(t, root, out);
        for (const e of t.value) visitTerm(e, depth + 1);
        return;
      }
      case 'array':
      case 'set':
        for (const e of t.value) visitTerm(e, depth + 1);
        return;
      case 'object':
        for (const [k, v] of t.value) {
          visitTerm(k, depth + 1);
          visitTerm(v, depth + 1);
        }
        return;
      case 'call':
        visitTerm(t.operator, depth + 1);
        for (const a of t.args) visitTerm(a, depth + 1);
        return;
      case 'arraycomprehension':
      case 'setcomprehension':
        visitTerm(t.term, depth + 1);
        visitBody(t.body, depth + 1);
        return;
      case 'objectcomprehension':
        visitTerm(t.key, depth + 1);
        visitTerm(t.value, depth + 1);
        visitBody(t.body, depth + 1);
        return;
      default:
        return;
    }
  };
  const visitBody = (b: Body, depth: number): void => {
    for (const e of b) {
      const x = e.terms;
      if (x.type === 'term') visitTerm(x.term, depth + 1);
      else if (x.type === 'call') {
        visitTerm(x.operator, depth + 1);
        for (const a of x.args) visitTerm(a, depth + 1);
      } else if (x.type === 'somein') {
        visitTerm(x.domain, depth + 1);
      } else if (x.type === 'every') {
        visitTerm(x.domain, depth + 1);
        visitBody(x.body, depth + 1);
      }
      for (const w of e.with) visitTerm(w.value, depth + 1);
    }
  };
  const rules = [...rs.rules, ...(rs.defaultRule ? [rs.defaultRule] : [])];
  for (const r of rules) {
    for (let x: CompiledRule | undefined = r; x; x = x.else) {
      visitBody(x.body, 0);
      for (const t of [x.key, x.value, x.element, ...(x.keyPath ?? []), ...x.args]) if (t) visitTerm(t, 0);
    }
  }
  return [...out];
}

/** Each rule set's dependencies (the rule sets its refs and calls reach), as OPA's dependency graph has them. */
export function ruleDependencies(all: readonly RuleSet[]): Map<RuleSet, RuleSet[]> {
  const root = buildTrie(all);
  const deps = new Map<RuleSet, RuleSet[]>();
  for (const rs of all) deps.set(rs, dependencies(rs, root));
  return deps;
}

/**
 * The rule sets that read any of `targets`, directly or through other rules, as OPA's
 * transitiveDocumentDependents walks its dependency graph.
 */
export function transitiveDependents(
  deps: ReadonlyMap<RuleSet, readonly RuleSet[]>,
  targets: readonly RuleSet[],
): RuleSet[] {
  const readers = new Map<RuleSet, RuleSet[]>();
  for (const [rs, ds] of deps)
    for (const d of ds) {
      const list = readers.get(d);
      if (list) list.push(rs);
      else readers.set(d, [rs]);
    }
  const found = new Set<RuleSet>();
  const queue = [...targets];
  while (queue.length) {
    for (const r of readers.get(queue.pop()!) ?? []) {
      if (found.has(r)) continue;
      found.add(r);
      queue.push(r);
    }
  }
  return [...found];
}

/** `rego_recursion_error: rule data.p.q is recursive: data.p.q -> data.p.r -> data.p.q` */
export function checkRecursion(
  all: readonly RuleSet[],
  deps: ReadonlyMap<RuleSet, readonly RuleSet[]>,
  errors: RegoError[],
): void {
  const state = new Map<RuleSet, 'visiting' | 'done'>();
  const name = (rs: RuleSet): string => ['data', ...rs.path].join('.');
  const reported = new Set<RuleSet>();
  // Iterative DFS: long rule chains must not exhaust the JS stack.
  for (const start of all) {
    if (state.has(start)) continue;
    const stack: { rs: RuleSet; next: number }[] = [{ rs: start, next: 0 }];
    state.set(start, 'visiting');
    while (stack.length) {
      const top = stack[stack.length - 1];
      const ds = deps.get(top.rs) ?? [];
      if (top.next >= ds.length) {
        state.set(top.rs, 'done');
        stack.pop();
        continue;
      }
      const d = ds[top.next++];
      const s = state.get(d);
      if (s === 'visiting') {
        if (!reported.has(d)) {
          reported.add(d);
          const from = stack.findIndex((f) => f.rs === d);
          const chain = [...stack.slice(from).map((f) => f.rs), d].map(name).join(' -> ');
          errors.push(new RegoError('rego_recursion_error', `rule ${name(d)} is recursive: ${chain}`, d.location));
        }
      } else if (s === undefined) {
        state.set(d, 'visiting');
        stack.push({ rs: d, next: 0 });
      }
    }
  }
}
