// Lowers compiled Rego to OPA IR following OPA's planner (opa-ir.md §4). Planning is in
// continuation-passing style, as OPA's: every construct that can yield several bindings (scans over
// refs, data-trie branches, `some … in`) plans "the rest of the body" inside its own block.
import type { Body, Expr, Location, RefTerm, Term, VarTerm, With } from '../ast/types.ts';
import { builtinDecls, plannerBuiltinDecls } from '../builtins/declarations.ts';
import { CIDR_CONTAINS_MATCHES_HOST } from '../builtins/host/names.ts';
import type { CompiledProgram, CompiledRule, RuleSet } from '../semantic/types.ts';
import { dataNameKey, isDataName, isConstantTerm, operatorName } from '../semantic/terms.ts';
import { RegoError, RegoErrors } from '../errors.ts';
import type { Block, BuiltinDecl, Func, Local, Operand, Policy, Stmt } from '../ir/types.ts';
import { buildTrie, type TrieNode } from '../semantic/rule-trie.ts';
import { overlapsVirtual, withoutPath } from './trie.ts';

/** An already-planned value standing in for a term (scan keys/values, call results, parameters). */
interface LocalTerm {
  type: '$local';
  local: Local;
  location?: Location;
}
type PTerm = Term | LocalTerm;

type Cont = () => void;

export interface PlanOptions {
  /** Leave a ground-valued definition's loops at its first solution (default true). */
  earlyExit?: boolean;
}

interface PlanState {
  cur: Stmt[];
  vars: Map<string, Local>;
  where: Location | undefined;
  gen: Generation;
  /** FuncPlanner.blockDepth where `cur` is being filled. */
  blockDepth: number;
}

/** A mock installed by `with f as g` (function or builtin replaced by a function name or a value). */
interface FunctionMock {
  /** Replacement function: a builtin name or `data.pkg.f`. */
  fn?: string;
  /** Ground replacement value, planned inline at each call. */
  value?: Term;
  /** Non-ground replacement value: stored by a WithStmt under `data[MOCK_ROOT][dataKey]` so re-planned funcs can read it. */
  dataKey?: string;
}

interface Generation {
  id: number;
  trie: TrieNode;
  mocks: ReadonlyMap<string, FunctionMock>;
  /** Same trie without function mocks: replacement functions run unmocked (OPA: a mock never calls another mock). */
  unmocked?: Generation;
}

/** Reserved data key for non-ground `with f as <value>` mocks (cannot come from JSON-ish Rego paths in practice). */
const MOCK_ROOT = '\u0000mock';

const INPUT: Local = 0;
const DATA: Local = 1;
const MAX_PLAN_DEPTH = 2000;
/** Bound on plan size: CPS planning duplicates continuations per data-trie branch; hostile policies stop here. */
const MAX_STATEMENTS = 300_000;

/** A term's value as text, without its locations (constant mock values that are the same give the same text). */
function termSignature(t: Term): string {
  return JSON.stringify(t, (k, v: unknown) => (k === 'location' ? undefined : v));
}

function isIntLiteral(s: string): boolean {
  if (!/^-?\d+$/.test(s)) return false;
  const n = Number(s);
  return Number.isSafeInteger(n) && n >= -(2 ** 31) && n < 2 ** 31;
}

/** Shared state of one policy being planned: static tables and the function list. */
export class PolicyBuilder {
  private readonly strings: string[] = [];
  private readonly stringIndex = new Map<string, number>();
  private readonly files: string[] = [];
  private readonly fileIndex = new Map<string, number>();
  private readonly builtins = new Set<string>();
  readonly funcs: Func[] = [];
  private readonly funcNames = new Map<string, string>();
  private nextGen = 1;
  readonly base: Generation;
  stmtCount = 0;

  /** `earlyExit: false` plans every solution of a ground-valued body (the differential tests' reference). */
  constructor(
    readonly program: CompiledProgram,
    readonly options: PlanOptions = {},
  ) {
    this.base = { id: 0, trie: buildTrie(program.ruleSets, program.packages), mocks: new Map() };
  }

  str(s: string): number {
    let i = this.stringIndex.get(s);
    if (i === undefined) {
      i = this.strings.length;
      this.strings.push(s);
      this.stringIndex.set(s, i);
    }
    return i;
  }

  file(f: string): number {
    let i = this.fileIndex.get(f);
    if (i === undefined) {
      i = this.files.length;
      this.files.push(f);
      this.fileIndex.set(f, i);
    }
    return i;
  }

  useBuiltin(name: string): void {
    this.builtins.add(name);
  }

  newGeneration(trie: TrieNode, mocks: ReadonlyMap<string, FunctionMock>): Generation {
    return { id: this.nextGen++, trie, mocks };
  }

  withoutMocks(gen: Generation): Generation {
    if (gen.mocks.size === 0) return gen;
    if (!gen.unmocked) gen.unmocked = this.newGeneration(gen.trie, new Map());
    return gen.unmocked;
  }

  private readonly derived = new Map<string, Generation>();

  /** The generation `changes` (a signature of what a `with` replaces) derive from `parent`, made on first use. */
  derivedGeneration(
    parent: Generation,
    changes: string,
    trie: TrieNode,
    mocks: ReadonlyMap<string, FunctionMock>,
  ): Generation {
    const key = `${parent.id}\u0000${changes}`;
    let gen = this.derived.get(key);
    if (!gen) {
      gen = this.newGeneration(trie, mocks);
      this.derived.set(key, gen);
    }
    return gen;
  }

  /** IR function name for a rule set in a generation, planning it on first use. */
  ruleSetFunc(gen: Generation, rs: RuleSet): string {
    const key = `${gen.id}:${rs.path.join('\u0000')}`;
    const known = this.funcNames.get(key);
    if (known) return known;
    const name = `g${gen.id}.data.${rs.path.join('.')}`;
    this.funcNames.set(key, name);
    // Planned later from a worklist, so long chains of rules do not nest planner calls on the JS stack.
    this.pending.push({ gen, rs, name });
    return name;
  }

  private readonly pending: { gen: Generation; rs: RuleSet; name: string }[] = [];

  private drain(): void {
    for (let job = this.pending.shift(); job; job = this.pending.shift()) {
      const fp = new FuncPlanner(this, job.gen, job.rs.location);
      this.funcs.push(fp.planRuleSet(job.rs, job.name));
    }
  }

  build(plans: { name: string; blocks: Block[] }[]): Policy {
    this.drain();
    const names = [...this.builtins].sort();
    const builtin_funcs = names.map((name) => {
      // The planner's own calls (internal.print for print, plannerBuiltinDecls) may be absent from a capabilities table.
      const d = this.program.builtins.get(name) ?? builtinDecls.get(name) ?? plannerBuiltinDecls.get(name);
      const decl: BuiltinDecl = d ? (d.decl as BuiltinDecl) : { type: 'function' };
      return { name, decl };
    });
    return {
      static: {
        strings: this.strings.map((value) => ({ value })),
        builtin_funcs,
        files: this.files.map((value) => ({ value })),
      },
      plans: { plans },
      funcs: { funcs: this.funcs },
    };
  }
}

function planError(
  msg: string,
  l: Location | undefined,
  code: 'rego_compile_error' | 'rego_unsafe_var_error' = 'rego_compile_error',
): RegoErrors {
  return new RegoErrors([new RegoError(code, msg, l)]);
}

/** Plans one IR function (rule set) or one plan (query): locals, scopes and the current block. */
export class FuncPlanner {
  private nextLocal = 2;
  private vars = new Map<string, Local>();
  private cur: Stmt[] = [];
  private where: Location | undefined;
  private depth = 0;

  constructor(
    private readonly pb: PolicyBuilder,
    private gen: Generation,
    where?: Location,
  ) {
    this.where = where;
  }

  // ---- emission helpers -------------------------------------------------------------------------

  newLocal(): Local {
    return this.nextLocal++;
  }

  private emit(s: Stmt): void {
    if (++this.pb.stmtCount > MAX_STATEMENTS)
      throw planError('policy too large to plan (statement limit exceeded)', this.where);
    const l = this.where;
    if (l) {
      s.stmt.file = this.pb.file(l.file);
      s.stmt.row = l.row;
      s.stmt.col = l.col;
    }
    this.cur.push(s);
  }

  /** IR blocks open around the statement being emitted (a BreakStmt's index counts them). */
  private blockDepth = 0;

  /** Run `fn` collecting its statements into a fresh block, with its own var scope. */
  private block(fn: () => void): Block {
    const saved = this.cur;
    const savedVars = this.vars;
    this.vars = new Map(savedVars);
    const savedDepth = this.blockDepth;
    this.cur = [];
    this.blockDepth++;
    try {
      fn();
      return { stmts: this.cur };
    } finally {
      this.cur = saved;
      this.vars = savedVars;
      this.blockDepth = savedDepth;
    }
  }

  private at<T>(l: Location | undefined, fn: () => T): T {
    const saved = this.where;
    if (l) this.where = l;
    try {
      return fn();
    } finally {
      this.where = saved;
    }
  }

  private deeper(fn: () => void): void {
    if (++this.depth > MAX_PLAN_DEPTH) throw planError('policy nesting too deep to plan', this.where);
    try {
      fn();
    } finally {
      this.depth--;
    }
  }

  private fail(): void {
    this.emit({ type: 'EqualStmt', stmt: { a: { type: 'bool', value: true }, b: { type: 'bool', value: false } } });
  }

  private toLocal(op: Operand): Local {
    if (op.type === 'local') return op.value;
    const l = this.newLocal();
    this.emit({ type: 'AssignVarStmt', stmt: { source: op, target: l } });
    return l;
  }

  private strOp(s: string): Operand {
    return { type: 'string_index', value: this.pb.str(s) };
  }

  private intLocal(n: number): Local {
    const l = this.newLocal();
    this.emit({ type: 'MakeNumberIntStmt', stmt: { value: n, target: l } });
    return l;
  }

  // ---- rule sets ---------------------------------------------------------------------------------

  planRuleSet(rs: RuleSet, name: string): Func {
    const params: Local[] = [INPUT, DATA];
    for (let i = 0; i < rs.arity; i++) params.push(this.newLocal());
    const ret = this.newLocal();
    const lresult = this.newLocal();
    const blocks: Block[] = [];
    const argTerms: LocalTerm[] = params.slice(2).map((l) => ({ type: '$local', local: l }));
    const valueOf = (r: CompiledRule): Term => r.value ?? { type: 'boolean', value: true, location: r.location };

    if (rs.kind === 'partial_set' || rs.kind === 'partial_object') {
      blocks.push(
        this.block(() =>
          this.emit(
            rs.kind === 'partial_set'
              ? { type: 'MakeSetStmt', stmt: { target: ret } }
              : { type: 'MakeObjectStmt', stmt: { target: ret } },
          ),
        ),
      );
      for (const r of rs.rules) {
        if (r.default) continue;
        blocks.push(
          this.block(() =>
            this.at(r.location, () =>
              this.planBody(r.body, 0, () => {
                if (rs.kind === 'partial_set') {
                  this.planValue(r.key!, (k) => this.emit({ type: 'SetAddStmt', stmt: { set: ret, value: k } }));
                } else if (r.element) {
                  const el = r.element;
                  this.planValues(r.keyPath!, 0, [], (ks) =>
                    this.planValue(el, (v) => this.insertNested(ret, ks, v, true)),
                  );
                } else if (r.keyPath && r.keyPath.length > 1) {
                  this.planValues(r.keyPath, 0, [], (ks) =>
                    this.planValue(valueOf(r), (v) => this.insertNested(ret, ks, v)),
                  );
                } else {
                  this.planValue(r.key!, (k) =>
                    this.planValue(valueOf(r), (v) =>
                      this.emit({ type: 'ObjectInsertOnceStmt', stmt: { object: ret, key: k, value: v } }),
                    ),
                  );
                }
              }),
            ),
          ),
        );
      }
      // Defaults merged into a general-ref object: fill their path only if no rule defined it.
      for (const d of rs.rules) {
        if (!d.default || !d.keyPath) continue;
        blocks.push(
          this.block(() =>
            this.at(d.location, () =>
              this.planValues(d.keyPath!, 0, [], (ks) => {
                const probe = this.block(() => {
                  let cur = ret;
                  for (const k of ks) {
                    const t = this.newLocal();
                    this.emit({ type: 'DotStmt', stmt: { source: { type: 'local', value: cur }, key: k, target: t } });
                    cur = t;
                  }
                });
                this.emit({ type: 'NotStmt', stmt: { block: probe } });
                this.planValue(valueOf(d), (v) => this.insertNested(ret, ks, v));
              }),
            ),
          ),
        );
      }
    } else {
      for (const r of rs.rules) {
        const chain: CompiledRule[] = [];
        for (let x: CompiledRule | undefined = r; x; x = x.else) chain.push(x);
        // `first`: a lone definition resets lresult itself; in an else chain the reset precedes the
        // chain and every branch runs only while lresult is still undefined.
        // Early exit (as OPA's evaluator does): a definition whose value is ground has its value once its body
        // succeeds, and every further solution would assign the same value, so the body's loops stop there.
        const bodyBlock = (x: CompiledRule, first: boolean): Block =>
          this.block(() =>
            this.at(x.location, () => {
              const bodyDepth = this.blockDepth;
              const ground = this.pb.options.earlyExit !== false && isConstantTerm(valueOf(x));
              if (first) this.emit({ type: 'ResetLocalStmt', stmt: { target: lresult } });
              else this.emit({ type: 'IsUndefinedStmt', stmt: { source: lresult } });
              this.unifyAll(x.args, argTerms, 0, () =>
                this.planBody(x.body, 0, () =>
                  this.planValue(valueOf(x), (v) => {
                    this.emit({ type: 'AssignVarOnceStmt', stmt: { source: v, target: lresult } });
                    if (ground && this.blockDepth > bodyDepth)
                      this.emit({ type: 'BreakStmt', stmt: { index: this.blockDepth - bodyDepth } });
                  }),
                ),
              );
            }),
          );
        if (chain.length === 1) blocks.push(bodyBlock(r, true));
        else {
          blocks.push(
            this.block(() =>
              this.at(r.location, () => {
                // Reset outside the chain so a failing first branch still leaves lresult undefined.
                this.emit({ type: 'ResetLocalStmt', stmt: { target: lresult } });
                this.emit({ type: 'BlockStmt', stmt: { blocks: chain.map((x) => bodyBlock(x, false)) } });
              }),
            ),
          );
        }
        // Located at the chain's last definition, as OPA's planner (its location when the chain is done).
        blocks.push(
          this.block(() =>
            this.at(chain[chain.length - 1].location, () => {
              this.emit({ type: 'IsDefinedStmt', stmt: { source: lresult } });
              this.emit({
                type: 'AssignVarOnceStmt',
                stmt: { source: { type: 'local', value: lresult }, target: ret },
              });
            }),
          ),
        );
      }
      const d = rs.defaultRule;
      if (d) {
        blocks.push(
          this.block(() =>
            this.at(d.location, () => {
              this.emit({ type: 'IsUndefinedStmt', stmt: { source: ret } });
              this.planValue(valueOf(d), (v) =>
                this.emit({ type: 'AssignVarOnceStmt', stmt: { source: v, target: ret } }),
              );
            }),
          ),
        );
      }
    }
    blocks.push(this.block(() => this.emit({ type: 'ReturnLocalStmt', stmt: { source: ret } })));
    return { name, params, return: ret, blocks, path: [`g${this.gen.id}`, ...rs.path] };
  }

  /**
   * `obj[k1][k2]…[kn] = v`, creating intermediate objects (general ref heads `a.b[x].c := v`);
   * with `setLeaf`, `obj[k1]…[kn]` is a set and `v` is added to it (`p[q] contains r`).
   */
  private insertNested(obj: Local, keys: Operand[], value: Operand, setLeaf = false): void {
    let cur = obj;
    const steps = setLeaf ? keys.length : keys.length - 1;
    for (let i = 0; i < steps; i++) {
      const leaf = setLeaf && i === keys.length - 1;
      const t = this.newLocal();
      this.emit({ type: 'ResetLocalStmt', stmt: { target: t } });
      const get = this.block(() =>
        this.emit({ type: 'DotStmt', stmt: { source: { type: 'local', value: cur }, key: keys[i], target: t } }),
      );
      const create = this.block(() => {
        this.emit({ type: 'IsUndefinedStmt', stmt: { source: t } });
        this.emit(
          leaf ? { type: 'MakeSetStmt', stmt: { target: t } } : { type: 'MakeObjectStmt', stmt: { target: t } },
        );
        this.emit({
          type: 'ObjectInsertStmt',
          stmt: { object: cur, key: keys[i], value: { type: 'local', value: t } },
        });
      });
      this.emit({ type: 'BlockStmt', stmt: { blocks: [get, create] } });
      this.emit(
        leaf
          ? { type: 'IsSetStmt', stmt: { source: { type: 'local', value: t } } }
          : { type: 'IsObjectStmt', stmt: { source: { type: 'local', value: t } } },
      );
      cur = t;
    }
    if (setLeaf) this.emit({ type: 'SetAddStmt', stmt: { set: cur, value } });
    else this.emit({ type: 'ObjectInsertOnceStmt', stmt: { object: cur, key: keys[keys.length - 1], value } });
  }

  // ---- queries -----------------------------------------------------------------------------------

  /** Plan a query body and add a binding object with `bindings` (name → var) to the result set. */
  planQuery(body: Body, bindings: { name: string; var: string }[]): Block {
    return this.block(() =>
      this.planBody(body, 0, () => {
        const o = this.newLocal();
        this.emit({ type: 'MakeObjectStmt', stmt: { target: o } });
        for (const b of bindings) {
          const l = this.vars.get(b.var);
          if (l === undefined) continue;
          this.emit({
            type: 'ObjectInsertStmt',
            stmt: { object: o, key: this.strOp(b.name), value: { type: 'local', value: l } },
          });
        }
        this.emit({ type: 'ResultSetAddStmt', stmt: { value: o } });
      }),
    );
  }

  /** Plan an entrypoint: evaluate `ref` and bind it as `result`. */
  planEntrypoint(ref: RefTerm): Block {
    return this.block(() =>
      this.planValue(ref, (v) => {
        const o = this.newLocal();
        this.emit({ type: 'MakeObjectStmt', stmt: { target: o } });
        this.emit({ type: 'ObjectInsertStmt', stmt: { object: o, key: this.strOp('result'), value: v } });
        this.emit({ type: 'ResultSetAddStmt', stmt: { value: o } });
      }),
    );
  }

  // ---- bodies and expressions ------------------------------------------------------------------------

  /** Where planning stands: the block being filled, the var scope and the generation. */
  private capture(): PlanState {
    // No copy: every construct that resumes a continuation more than once does so from separate
    // blocks, and `block()` gives each block its own scope map, so a captured map is never shared.
    return { cur: this.cur, vars: this.vars, where: this.where, gen: this.gen, blockDepth: this.blockDepth };
  }

  private restore(st: PlanState): void {
    this.cur = st.cur;
    this.vars = st.vars;
    this.where = st.where;
    this.gen = st.gen;
    this.blockDepth = st.blockDepth;
  }

  /**
   * Plan expressions one after another. Each expression's continuation only records where planning
   * stands (one state per branch it opened); the next expression is then planned in every recorded
   * state. Same output as nesting the continuations, but the JS stack stays flat for long bodies.
   */
  private planBody(body: Body, i: number, cont: Cont): void {
    const outer = this.capture();
    let states: PlanState[] = [this.capture()];
    try {
      for (let j = i; j < body.length; j++) {
        const next: PlanState[] = [];
        for (const st of states) {
          this.restore(st);
          this.planExpr(body[j], () => next.push(this.capture()));
        }
        states = next;
      }
      for (const st of states) {
        this.restore(st);
        // As OPA's planQuery: what follows the body (a rule's head, a comprehension's element) is located
        // where the body began (the rule head), not at the body's last expression.
        this.where = outer.where;
        cont();
      }
    } finally {
      this.restore(outer);
    }
  }

  private planExpr(e: Expr, cont: Cont): void {
    this.at(e.location, () => {
      if (e.with.length) this.planWith(e, cont);
      else this.planExprNoWith(e, cont);
    });
  }

  private planExprNoWith(e: Expr, cont: Cont): void {
    if (e.negated) {
      const blk = this.block(() => this.planExprTerms(e, () => {}));
      this.emit({ type: 'NotStmt', stmt: { block: blk } });
      cont();
      return;
    }
    this.planExprTerms(e, cont);
  }

  private planExprTerms(e: Expr, cont: Cont): void {
    const x = e.terms;
    switch (x.type) {
      case 'term':
        this.planValue(x.term, (op) => {
          this.emit({ type: 'NotEqualStmt', stmt: { a: op, b: { type: 'bool', value: false } } });
          cont();
        });
        return;
      case 'call':
        this.planCallExpr(x.operator, x.args, cont);
        return;
      case 'somedecl':
        cont();
        return;
      case 'somein':
        this.planValue(x.domain, (d) => {
          const src = this.toLocal(d);
          const k = this.newLocal();
          const v = this.newLocal();
          const blk = this.block(() => {
            const afterKey = (): void => this.unify(x.value, { type: '$local', local: v }, cont);
            if (x.key) this.unify(x.key, { type: '$local', local: k }, afterKey);
            else afterKey();
          });
          this.emit({ type: 'ScanStmt', stmt: { source: src, key: k, value: v, block: blk } });
        });
        return;
      case 'every':
        this.planEvery(x.key, x.value, x.domain, x.body, cont);
        return;
    }
  }

  private planEvery(key: Term | undefined, value: Term, domain: Term, body: Body, cont: Cont): void {
    this.planValue(domain, (d) => {
      const src = this.toLocal(d);
      // `every` over a non-collection is undefined (OPA's topdown), not vacuously true.
      const isColl = this.newLocal();
      this.emit({ type: 'ResetLocalStmt', stmt: { target: isColl } });
      const mark = (stmt: Stmt): Block => ({
        stmts: [
          stmt,
          this.stmtNoLoc({ type: 'AssignVarStmt', stmt: { source: { type: 'bool', value: true }, target: isColl } }),
        ],
      });
      this.emit({
        type: 'BlockStmt',
        stmt: {
          blocks: [
            mark(this.stmtNoLoc({ type: 'IsArrayStmt', stmt: { source: { type: 'local', value: src } } })),
            mark(this.stmtNoLoc({ type: 'IsObjectStmt', stmt: { source: { type: 'local', value: src } } })),
            mark(this.stmtNoLoc({ type: 'IsSetStmt', stmt: { source: { type: 'local', value: src } } })),
          ],
        },
      });
      this.emit({ type: 'IsDefinedStmt', stmt: { source: isColl } });
      const c0 = this.newLocal();
      this.emit({ type: 'ResetLocalStmt', stmt: { target: c0 } });
      const k = this.newLocal();
      const v = this.newLocal();
      const scanBlock = this.block(() => {
        const c1 = this.newLocal();
        this.emit({ type: 'ResetLocalStmt', stmt: { target: c1 } });
        const inner = this.block(() => {
          const afterKey = (): void =>
            this.unify(value, { type: '$local', local: v }, () =>
              this.planBody(body, 0, () =>
                this.emit({ type: 'AssignVarStmt', stmt: { source: { type: 'bool', value: true }, target: c1 } }),
              ),
            );
          if (key) this.unify(key, { type: '$local', local: k }, afterKey);
          else afterKey();
        });
        this.emit({ type: 'BlockStmt', stmt: { blocks: [inner] } });
        this.emit({ type: 'IsUndefinedStmt', stmt: { source: c1 } });
        this.emit({ type: 'AssignVarStmt', stmt: { source: { type: 'bool', value: true }, target: c0 } });
      });
      this.emit({ type: 'ScanStmt', stmt: { source: src, key: k, value: v, block: scanBlock } });
      this.emit({ type: 'IsUndefinedStmt', stmt: { source: c0 } });
      cont();
    });
  }

  /** A statement stamped with the current location but not emitted (for hand-built blocks). */
  private stmtNoLoc(s: Stmt): Stmt {
    const l = this.where;
    if (l) {
      s.stmt.file = this.pb.file(l.file);
      s.stmt.row = l.row;
      s.stmt.col = l.col;
    }
    return s;
  }

  // ---- with --------------------------------------------------------------------------------------

  private planWith(e: Expr, cont: Cont): void {
    const dataOrInput: { w: With; local: Local; path: string[] }[] = [];
    const fnMocks: { name: string; w: With }[] = [];
    for (const w of e.with) {
      const head = w.target.value[0];
      const name = operatorName(w.target);
      if (head?.type === 'var' && (head.value === 'input' || head.value === 'data')) {
        const path: string[] = [];
        for (const el of w.target.value.slice(1)) {
          if (el.type !== 'string')
            throw planError('with target path must be a ground reference of strings', w.location ?? e.location);
          path.push(el.value);
        }
        const isFn = head.value === 'data' && this.pb.program.ruleSetsByPath.get(path.join('/'))?.kind === 'function';
        if (isFn) fnMocks.push({ name: name!, w });
        else dataOrInput.push({ w, local: head.value === 'input' ? INPUT : DATA, path });
      } else if (name) fnMocks.push({ name, w });
      else throw planError('invalid with target', w.location ?? e.location);
    }

    // New generation when the expression must see different virtual documents or functions. What sets it
    // apart from the current one (the mocked virtual paths, the function mocks) is its signature: `with`
    // expressions that change the same things share one generation, so the functions they reach are planned once.
    let trie = this.gen.trie;
    const changes: unknown[] = [];
    for (const d of dataOrInput)
      if (d.local === DATA && overlapsVirtual(trie, d.path)) {
        trie = withoutPath(trie, d.path);
        changes.push(d.path);
      }
    let mocks = this.gen.mocks;
    if (fnMocks.length) {
      const m = new Map(mocks);
      for (const f of fnMocks) {
        const mock = this.mockFor(f.name, f.w.value);
        if (mock.dataKey !== undefined) dataOrInput.push({ w: f.w, local: DATA, path: [MOCK_ROOT, mock.dataKey] });
        m.set(f.name, mock);
        changes.push([f.name, mock.fn ?? null, mock.value ? termSignature(mock.value) : null, mock.dataKey ?? null]);
      }
      mocks = m;
    }
    const newGen =
      trie !== this.gen.trie || mocks !== this.gen.mocks
        ? this.pb.derivedGeneration(this.gen, JSON.stringify(changes), trie, mocks)
        : undefined;

    this.planValues(
      dataOrInput.map((d) => d.w.value),
      0,
      [],
      (ops) => {
        const savedIn = dataOrInput.some((d) => d.local === INPUT) ? this.newLocal() : undefined;
        const savedData = dataOrInput.some((d) => d.local === DATA) ? this.newLocal() : undefined;
        if (savedIn !== undefined)
          this.emit({ type: 'AssignVarStmt', stmt: { source: { type: 'local', value: INPUT }, target: savedIn } });
        if (savedData !== undefined)
          this.emit({ type: 'AssignVarStmt', stmt: { source: { type: 'local', value: DATA }, target: savedData } });
        const outerGen = this.gen;
        // The continuation runs inside the WithStmt blocks: restore input/data (and the generation) for it.
        const restoreThenCont = (): void => {
          const innerGen = this.gen;
          this.gen = outerGen;
          try {
            const wrap = (targets: [Local, Local][], i: number): void => {
              if (i >= targets.length) {
                cont();
                return;
              }
              const [local, saved] = targets[i];
              const blk = this.block(() => wrap(targets, i + 1));
              this.emit({
                type: 'WithStmt',
                stmt: { local, path: [], value: { type: 'local', value: saved }, block: blk },
              });
            };
            const targets: [Local, Local][] = [];
            if (savedIn !== undefined) targets.push([INPUT, savedIn]);
            if (savedData !== undefined) targets.push([DATA, savedData]);
            wrap(targets, 0);
          } finally {
            this.gen = innerGen;
          }
        };
        const nest = (i: number): void => {
          if (i >= dataOrInput.length) {
            const saved = this.gen;
            if (newGen) this.gen = newGen;
            try {
              this.planExprNoWith(e, restoreThenCont);
            } finally {
              this.gen = saved;
            }
            return;
          }
          const d = dataOrInput[i];
          const blk = this.block(() => nest(i + 1));
          this.emit({
            type: 'WithStmt',
            stmt: { local: d.local, path: d.path.map((p) => this.pb.str(p)), value: ops[i], block: blk },
          });
        };
        nest(0);
      },
    );
  }

  private mockFor(mocked: string, value: Term): FunctionMock {
    if (value.type === 'ref' || value.type === 'var') {
      const name = value.type === 'var' ? value.value : operatorName(value);
      if (name) {
        if (isDataName(name)) {
          const rs = this.pb.program.ruleSetsByPath.get(dataNameKey(name));
          if (rs?.kind === 'function') return { fn: name };
        } else if (this.pb.program.builtins.has(name)) return { fn: name };
      }
    }
    if (isConstantTerm(value)) return { value };
    // Keyed by the mocked function: a nested `with` of the same function stores its value over the outer one for
    // its block, which is what the functions planned for the inner generation must read.
    return { dataKey: mocked };
  }

  // ---- calls -------------------------------------------------------------------------------------

  private planCallExpr(op: RefTerm, args: Term[], cont: Cont): void {
    const name = operatorName(op);
    if (name === 'eq' || name === 'assign') {
      this.unify(args[0], args[1], cont);
      return;
    }
    if (name === 'print') {
      this.planPrint(args, cont);
      return;
    }
    const arity = this.arityOf(name, op);
    if (arity !== undefined && args.length === arity + 1) {
      const out = args[arity];
      this.planCall(op, args.slice(0, arity), (res) => this.unifyOperand(res, out, cont));
      return;
    }
    this.planCall(op, args, (res) => {
      this.emit({ type: 'NotEqualStmt', stmt: { a: res, b: { type: 'bool', value: false } } });
      cont();
    });
  }

  /**
   * OPA lowers `print(a, b)` to `internal.print([{x | x = a}, {x | x = b}])`: each operand becomes a set
   * so an undefined operand prints as `<undefined>` instead of stopping the rule. Void: never fails.
   */
  private planPrint(args: Term[], cont: Cont): void {
    const sets: Operand[] = args.map((a) => {
      const set = this.newLocal();
      this.emit({ type: 'MakeSetStmt', stmt: { target: set } });
      const blk = this.block(() =>
        this.planValue(a, (v) => this.emit({ type: 'SetAddStmt', stmt: { set, value: v } })),
      );
      this.emit({ type: 'BlockStmt', stmt: { blocks: [blk] } });
      return { type: 'local', value: set };
    });
    const arr = this.newLocal();
    this.emit({ type: 'MakeArrayStmt', stmt: { capacity: sets.length, target: arr } });
    for (const op of sets) this.emit({ type: 'ArrayAppendStmt', stmt: { array: arr, value: op } });
    this.pb.useBuiltin('internal.print');
    this.emit({
      type: 'CallStmt',
      stmt: { func: 'internal.print', args: [{ type: 'local', value: arr }], result: this.newLocal() },
    });
    cont();
  }

  /**
   * `net.cidr_contains_matches(a, b)` becomes `internal.cidr_contains_matches(a, pairs(a), b, pairs(b))`, where
   * pairs(x) is `[[k, v] | some k, v in x]` (empty for a string or scalar): opa-wasm hands host builtins JSON,
   * where a set is an array and an object key a string, but OPA indexes a set operand by its elements and an
   * object operand by its keys, whatever their type. The operands are already defined here.
   */
  private planCidrContainsMatches(ops: Operand[], result: Local): void {
    const args: Operand[] = [];
    for (const op of ops) {
      const pairs = this.newLocal();
      this.emit({ type: 'MakeArrayStmt', stmt: { capacity: 0, target: pairs } });
      if (op.type === 'local') {
        const k = this.newLocal();
        const v = this.newLocal();
        const blk = this.block(() => {
          const pair = this.newLocal();
          this.emit({ type: 'MakeArrayStmt', stmt: { capacity: 2, target: pair } });
          this.emit({ type: 'ArrayAppendStmt', stmt: { array: pair, value: { type: 'local', value: k } } });
          this.emit({ type: 'ArrayAppendStmt', stmt: { array: pair, value: { type: 'local', value: v } } });
          this.emit({ type: 'ArrayAppendStmt', stmt: { array: pairs, value: { type: 'local', value: pair } } });
        });
        this.emit({ type: 'ScanStmt', stmt: { source: op.value, key: k, value: v, block: blk } });
      }
      args.push(op, { type: 'local', value: pairs });
    }
    this.pb.useBuiltin(CIDR_CONTAINS_MATCHES_HOST);
    this.emit({ type: 'CallStmt', stmt: { func: CIDR_CONTAINS_MATCHES_HOST, args, result } });
  }

  private arityOf(name: string | undefined, op: RefTerm): number | undefined {
    if (!name) throw planError('invalid function reference', op.location ?? this.where);
    if (isDataName(name)) {
      const rs = this.pb.program.ruleSetsByPath.get(dataNameKey(name));
      return rs?.kind === 'function' ? rs.arity : undefined;
    }
    const d = this.pb.program.builtins.get(name);
    if (!d || d.decl.variadic) return undefined;
    return d.decl.args?.length ?? 0;
  }

  /** Plan a call (builtin or Rego function) and pass its result operand on. */
  private planCall(op: RefTerm, args: Term[], cont: (res: Operand) => void): void {
    let name = operatorName(op);
    if (!name) throw planError('invalid function reference', op.location ?? this.where);
    if (args.length === 0 && isDataName(name)) {
      // `f()` of a rule that is not a function is the rule's value (semantic/checks.ts).
      const rs = this.pb.program.ruleSetsByPath.get(dataNameKey(name));
      if (rs && rs.kind !== 'function') {
        this.planValue({ type: 'ref', value: op.value, location: op.location }, cont);
        return;
      }
    }
    const mock = this.gen.mocks.get(name);
    if (mock?.value) {
      const value = mock.value;
      // Arguments are still evaluated: an undefined argument makes the call undefined.
      this.planValues(args, 0, [], () => this.planValue(value, cont));
      return;
    }
    if (mock?.dataKey !== undefined) {
      const k = mock.dataKey;
      this.planValues(args, 0, [], () =>
        this.baseDoc([this.strOp(MOCK_ROOT), this.strOp(k)], (l) => cont({ type: 'local', value: l })),
      );
      return;
    }
    const viaMock = mock?.fn !== undefined;
    if (mock?.fn) name = mock.fn;
    this.planValues(args, 0, [], (ops) => {
      const result = this.newLocal();
      if (isDataName(name!)) {
        const rs = this.pb.program.ruleSetsByPath.get(dataNameKey(name!));
        if (rs?.kind !== 'function') throw planError(`undefined function ${name}`, op.location ?? this.where);
        const fname = this.pb.ruleSetFunc(viaMock ? this.pb.withoutMocks(this.gen) : this.gen, rs);
        this.emit({
          type: 'CallStmt',
          stmt: {
            func: fname,
            args: [{ type: 'local', value: INPUT }, { type: 'local', value: DATA }, ...ops],
            result,
          },
        });
      } else if (name === 'net.cidr_contains_matches') {
        this.planCidrContainsMatches(ops, result);
      } else {
        this.pb.useBuiltin(name!);
        this.emit({ type: 'CallStmt', stmt: { func: name!, args: ops, result } });
        if (this.pb.program.builtins.get(name!)?.relation) {
          // A relation (walk) yields a set of outputs wherever its call stands — `walk(x, o)`,
          // `[p, v] := walk(x)`, `f(walk(x))` alike: OPA lifts the call to `walk(x, t)` and iterates t.
          const k = this.newLocal();
          const v = this.newLocal();
          const blk = this.block(() => cont({ type: 'local', value: v }));
          this.emit({ type: 'ScanStmt', stmt: { source: result, key: k, value: v, block: blk } });
          return;
        }
      }
      cont({ type: 'local', value: result });
    });
  }

  // ---- unification -------------------------------------------------------------------------------

  private isBound(v: VarTerm): boolean {
    return v.value === 'input' || v.value === 'data' || this.vars.has(v.value);
  }

  /** True when the term has vars that unification would bind (vars, or inside arrays/object values). */
  private hasUnboundPattern(t: PTerm): boolean {
    switch (t.type) {
      case 'var':
        return !this.isBound(t);
      case 'array':
        return t.value.some((e) => this.hasUnboundPattern(e));
      case 'object':
        return t.value.some(([, v]) => this.hasUnboundPattern(v));
      default:
        return false;
    }
  }

  private unifyAll(as: Term[], bs: PTerm[], i: number, cont: Cont): void {
    if (i >= as.length) {
      cont();
      return;
    }
    this.unify(as[i], bs[i], () => this.unifyAll(as, bs, i + 1, cont));
  }

  private bindVar(v: VarTerm, op: Operand): void {
    // Copy, never alias: a later `with` may swap the aliased local (input/data) in place.
    const l = this.newLocal();
    this.emit({ type: 'AssignVarStmt', stmt: { source: op, target: l } });
    this.vars.set(v.value, l);
  }

  private unify(a: PTerm, b: PTerm, cont: Cont): void {
    this.deeper(() => this.unifyInner(a, b, cont));
  }

  private unifyInner(a: PTerm, b: PTerm, cont: Cont): void {
    if (a.type === 'var' && !this.isBound(a)) {
      if (b.type === 'var' && !this.isBound(b))
        throw planError(`var ${b.original ?? b.value} is unsafe`, b.location ?? this.where, 'rego_unsafe_var_error');
      if (this.hasUnboundPattern(b) && b.type !== '$local') {
        // `x = [y]` with both unbound cannot be planned.
        throw planError(`var ${a.original ?? a.value} is unsafe`, a.location ?? this.where, 'rego_unsafe_var_error');
      }
      this.planValue(b, (op) => {
        if (this.isBound(a)) {
          // Bound meanwhile (e.g. `x = x`-style patterns through refs).
          this.emit({ type: 'EqualStmt', stmt: { a: { type: 'local', value: this.vars.get(a.value)! }, b: op } });
        } else this.bindVar(a, op);
        cont();
      });
      return;
    }
    if (b.type === 'var' && !this.isBound(b)) {
      this.unifyInner(b, a, cont);
      return;
    }
    if (a.type === '$local') {
      this.unifyOperand({ type: 'local', value: a.local }, b, cont);
      return;
    }
    if (b.type === '$local') {
      this.unifyOperand({ type: 'local', value: b.local }, a, cont);
      return;
    }
    const producesValue = (t: Term): boolean =>
      t.type === 'ref' ||
      t.type === 'call' ||
      t.type === 'var' ||
      t.type === 'arraycomprehension' ||
      t.type === 'setcomprehension' ||
      t.type === 'objectcomprehension';
    if (producesValue(a) && this.hasUnboundPattern(b)) {
      this.planValue(a, (op) => this.unifyOperand(op, b, cont));
      return;
    }
    if (producesValue(b) && this.hasUnboundPattern(a)) {
      this.planValue(b, (op) => this.unifyOperand(op, a, cont));
      return;
    }
    if (a.type === 'array' && b.type === 'array') {
      if (a.value.length !== b.value.length) {
        this.fail();
        return;
      }
      this.unifyAll(a.value, b.value, 0, cont);
      return;
    }
    if (a.type === 'object' && b.type === 'object' && (this.hasUnboundPattern(a) || this.hasUnboundPattern(b))) {
      if (a.value.length !== b.value.length) {
        this.fail();
        return;
      }
      const keyText = (k: Term): string | undefined =>
        k.type === 'string' || k.type === 'number' || k.type === 'boolean'
          ? `${k.type}:${String(k.value)}`
          : k.type === 'null'
            ? 'null'
            : undefined;
      const bm = new Map<string, Term>();
      for (const [k, v] of b.value) {
        const kt = keyText(k);
        if (kt === undefined) {
          this.planValue(b, (op) => this.unifyOperand(op, a, cont));
          return;
        }
        bm.set(kt, v);
      }
      const as: Term[] = [];
      const bs: Term[] = [];
      for (const [k, v] of a.value) {
        const kt = keyText(k);
        if (kt === undefined) {
          this.planValue(a, (op) => this.unifyOperand(op, b, cont));
          return;
        }
        const other = bm.get(kt);
        if (!other) {
          this.fail();
          return;
        }
        as.push(v);
        bs.push(other);
      }
      this.unifyAll(as, bs, 0, cont);
      return;
    }
    if (this.hasUnboundPattern(a)) {
      this.planValue(b, (op) => this.unifyOperand(op, a, cont));
      return;
    }
    if (this.hasUnboundPattern(b)) {
      this.planValue(a, (op) => this.unifyOperand(op, b, cont));
      return;
    }
    this.planValue(a, (x) =>
      this.planValue(b, (y) => {
        this.emit({ type: 'EqualStmt', stmt: { a: x, b: y } });
        cont();
      }),
    );
  }

  /** Unify an already-planned value with a term (pattern destructuring). */
  private unifyOperand(op: Operand, t: PTerm, cont: Cont): void {
    if (t.type === '$local') {
      this.emit({ type: 'EqualStmt', stmt: { a: op, b: { type: 'local', value: t.local } } });
      cont();
      return;
    }
    if (t.type === 'var' && !this.isBound(t)) {
      this.bindVar(t, op);
      cont();
      return;
    }
    if (t.type === 'array' && this.hasUnboundPattern(t)) {
      if (op.type !== 'local') {
        this.fail();
        return;
      }
      const src = op.value;
      this.emit({ type: 'IsArrayStmt', stmt: { source: op } });
      const n = this.newLocal();
      this.emit({ type: 'LenStmt', stmt: { source: op, target: n } });
      const want = this.intLocal(t.value.length);
      this.emit({ type: 'EqualStmt', stmt: { a: { type: 'local', value: n }, b: { type: 'local', value: want } } });
      const step = (i: number): void => {
        if (i >= t.value.length) {
          cont();
          return;
        }
        const idx = this.intLocal(i);
        const el = this.newLocal();
        this.emit({
          type: 'DotStmt',
          stmt: { source: { type: 'local', value: src }, key: { type: 'local', value: idx }, target: el },
        });
        this.unify(t.value[i], { type: '$local', local: el }, () => step(i + 1));
      };
      step(0);
      return;
    }
    if (t.type === 'object' && this.hasUnboundPattern(t)) {
      if (op.type !== 'local') {
        this.fail();
        return;
      }
      const src = op.value;
      this.emit({ type: 'IsObjectStmt', stmt: { source: op } });
      const n = this.newLocal();
      this.emit({ type: 'LenStmt', stmt: { source: op, target: n } });
      const want = this.intLocal(t.value.length);
      this.emit({ type: 'EqualStmt', stmt: { a: { type: 'local', value: n }, b: { type: 'local', value: want } } });
      const step = (i: number): void => {
        if (i >= t.value.length) {
          cont();
          return;
        }
        const [k, v] = t.value[i];
        this.planValue(k, (kop) => {
          const el = this.newLocal();
          this.emit({ type: 'DotStmt', stmt: { source: { type: 'local', value: src }, key: kop, target: el } });
          this.unify(v, { type: '$local', local: el }, () => step(i + 1));
        });
      };
      step(0);
      return;
    }
    this.planValue(t, (x) => {
      this.emit({ type: 'EqualStmt', stmt: { a: op, b: x } });
      cont();
    });
  }

  // ---- values ------------------------------------------------------------------------------------

  /** Plan several values in order (breadth-first over branches, like planBody, to keep the stack flat). */
  private planValues(ts: PTerm[], i: number, acc: Operand[], cont: (ops: Operand[]) => void): void {
    const outer = this.capture();
    let states: { st: PlanState; ops: Operand[] }[] = [{ st: this.capture(), ops: [...acc] }];
    try {
      for (let j = i; j < ts.length; j++) {
        const next: { st: PlanState; ops: Operand[] }[] = [];
        for (const s of states) {
          this.restore(s.st);
          const results: { st: PlanState; op: Operand }[] = [];
          this.planValue(ts[j], (op) => results.push({ st: this.capture(), op }));
          // One outcome (the usual case): extend this state's list in place. Copying it per element made
          // a literal of n elements cost O(n²) (a 200 000-element array literal planned for minutes).
          if (results.length === 1) {
            s.ops.push(results[0].op);
            next.push({ st: results[0].st, ops: s.ops });
          } else {
            for (const r of results) next.push({ st: r.st, ops: [...s.ops, r.op] });
          }
        }
        states = next;
      }
      for (const s of states) {
        this.restore(s.st);
        cont(s.ops);
      }
    } finally {
      this.restore(outer);
    }
  }

  private planValue(t: PTerm, cont: (op: Operand) => void): void {
    this.deeper(() => this.planValueInner(t, cont));
  }

  private planValueInner(t: PTerm, cont: (op: Operand) => void): void {
    switch (t.type) {
      case '$local':
        cont({ type: 'local', value: t.local });
        return;
      case 'null': {
        const l = this.newLocal();
        this.emit({ type: 'MakeNullStmt', stmt: { target: l } });
        cont({ type: 'local', value: l });
        return;
      }
      case 'boolean':
        cont({ type: 'bool', value: t.value });
        return;
      case 'number': {
        const l = this.newLocal();
        if (isIntLiteral(t.value))
          this.emit({ type: 'MakeNumberIntStmt', stmt: { value: Number(t.value), target: l } });
        else this.emit({ type: 'MakeNumberRefStmt', stmt: { index: this.pb.str(t.value), target: l } });
        cont({ type: 'local', value: l });
        return;
      }
      case 'string':
        cont(this.strOp(t.value));
        return;
      case 'var': {
        if (t.value === 'input') {
          this.emit({ type: 'IsDefinedStmt', stmt: { source: INPUT } });
          cont({ type: 'local', value: INPUT });
          return;
        }
        if (t.value === 'data') {
          this.planDataRef([], 0, this.gen.trie, [], cont);
          return;
        }
        const l = this.vars.get(t.value);
        if (l === undefined)
          throw planError(`var ${t.original ?? t.value} is unsafe`, t.location ?? this.where, 'rego_unsafe_var_error');
        cont({ type: 'local', value: l });
        return;
      }
      case 'ref':
        this.planRef(t, cont);
        return;
      case 'call':
        this.planCall(t.operator, t.args, cont);
        return;
      case 'array':
        this.planValues(t.value, 0, [], (ops) => {
          const l = this.newLocal();
          this.emit({ type: 'MakeArrayStmt', stmt: { capacity: ops.length, target: l } });
          for (const op of ops) this.emit({ type: 'ArrayAppendStmt', stmt: { array: l, value: op } });
          cont({ type: 'local', value: l });
        });
        return;
      case 'set':
        this.planValues(t.value, 0, [], (ops) => {
          const l = this.newLocal();
          this.emit({ type: 'MakeSetStmt', stmt: { target: l } });
          for (const op of ops) this.emit({ type: 'SetAddStmt', stmt: { set: l, value: op } });
          cont({ type: 'local', value: l });
        });
        return;
      case 'object': {
        const flat: Term[] = [];
        for (const [k, v] of t.value) flat.push(k, v);
        this.planValues(flat, 0, [], (ops) => {
          const l = this.newLocal();
          this.emit({ type: 'MakeObjectStmt', stmt: { target: l } });
          for (let i = 0; i < ops.length; i += 2)
            this.emit({ type: 'ObjectInsertStmt', stmt: { object: l, key: ops[i], value: ops[i + 1] } });
          cont({ type: 'local', value: l });
        });
        return;
      }
      case 'arraycomprehension':
      case 'setcomprehension':
      case 'objectcomprehension': {
        const l = this.newLocal();
        if (t.type === 'arraycomprehension') this.emit({ type: 'MakeArrayStmt', stmt: { capacity: 0, target: l } });
        else if (t.type === 'setcomprehension') this.emit({ type: 'MakeSetStmt', stmt: { target: l } });
        else this.emit({ type: 'MakeObjectStmt', stmt: { target: l } });
        const inner = this.block(() =>
          this.planBody(t.body, 0, () => {
            if (t.type === 'arraycomprehension')
              this.planValue(t.term, (v) => this.emit({ type: 'ArrayAppendStmt', stmt: { array: l, value: v } }));
            else if (t.type === 'setcomprehension')
              this.planValue(t.term, (v) => this.emit({ type: 'SetAddStmt', stmt: { set: l, value: v } }));
            else
              this.planValue(t.key, (k) =>
                this.planValue(t.value, (v) =>
                  this.emit({ type: 'ObjectInsertOnceStmt', stmt: { object: l, key: k, value: v } }),
                ),
              );
          }),
        );
        this.emit({ type: 'BlockStmt', stmt: { blocks: [inner] } });
        cont({ type: 'local', value: l });
        return;
      }
    }
  }

  // ---- refs --------------------------------------------------------------------------------------

  private planRef(ref: RefTerm, cont: (op: Operand) => void): void {
    const [head, ...rest] = ref.value;
    if (head.type === 'var') {
      if (head.value === 'data') {
        this.planDataRef(rest, 0, this.gen.trie, [], cont);
        return;
      }
      if (head.value === 'input') {
        this.emit({ type: 'IsDefinedStmt', stmt: { source: INPUT } });
        this.planRefRest(INPUT, rest, 0, cont);
        return;
      }
    }
    this.planValue(head, (h) => this.planRefRest(this.toLocal(h), rest, 0, cont));
  }

  /** Walk the remaining ref elements over a value: DotStmt for bound keys, ScanStmt for unbound ones. */
  private planRefRest(src: Local, elems: Term[], i: number, cont: (op: Operand) => void): void {
    if (i >= elems.length) {
      cont({ type: 'local', value: src });
      return;
    }
    const e = elems[i];
    if (this.hasUnboundPattern(e)) {
      const k = this.newLocal();
      const v = this.newLocal();
      const blk = this.block(() =>
        this.unify(e, { type: '$local', local: k }, () => this.planRefRest(v, elems, i + 1, cont)),
      );
      this.emit({ type: 'ScanStmt', stmt: { source: src, key: k, value: v, block: blk } });
      return;
    }
    this.planValue(e, (key) => {
      const t = this.newLocal();
      this.emit({ type: 'DotStmt', stmt: { source: { type: 'local', value: src }, key, target: t } });
      this.planRefRest(t, elems, i + 1, cont);
    });
  }

  /** The base document at a data path (DotStmt chain from `data`). */
  private baseDoc(path: Operand[], cont: (l: Local) => void): void {
    let src = DATA;
    for (const key of path) {
      const t = this.newLocal();
      this.emit({ type: 'DotStmt', stmt: { source: { type: 'local', value: src }, key, target: t } });
      src = t;
    }
    cont(src);
  }

  /** Walk a `data` ref over the rule trie (virtual documents) and base data. */
  private planDataRef(elems: Term[], i: number, node: TrieNode, path: Operand[], cont: (op: Operand) => void): void {
    if (node.ruleSet) {
      const rs = node.ruleSet;
      if (rs.kind === 'function') {
        // A function is not a document: refs to it without a call are undefined.
        this.fail();
        return;
      }
      const fname = this.pb.ruleSetFunc(this.gen, rs);
      const r = this.newLocal();
      this.emit({
        type: 'CallStmt',
        stmt: {
          func: fname,
          args: [
            { type: 'local', value: INPUT },
            { type: 'local', value: DATA },
          ],
          result: r,
        },
      });
      this.planRefRest(r, elems, i, cont);
      return;
    }
    if (i >= elems.length) {
      cont({ type: 'local', value: this.extent(node, path) });
      return;
    }
    const e = elems[i];
    if (node.children.size === 0) {
      this.baseDoc(path, (b) => this.planRefRest(b, elems, i, cont));
      return;
    }
    if (e.type === 'string') {
      const child = node.children.get(e.value);
      if (child) this.planDataRef(elems, i + 1, child, [...path, this.strOp(e.value)], cont);
      else this.baseDoc(path, (b) => this.planRefRest(b, elems, i, cont));
      return;
    }
    if (e.type === 'number' || e.type === 'boolean' || e.type === 'null') {
      this.baseDoc(path, (b) => this.planRefRest(b, elems, i, cont));
      return;
    }
    const keys = [...node.children.keys()];
    const excludeSet = (): Local => {
      const s = this.newLocal();
      this.emit({ type: 'MakeSetStmt', stmt: { target: s } });
      for (const k of keys) this.emit({ type: 'SetAddStmt', stmt: { set: s, value: this.strOp(k) } });
      return s;
    };
    if (!this.hasUnboundPattern(e)) {
      // Bound key: branch on which virtual child it names, else look it up in base data.
      this.planValue(e, (kop) => {
        const blocks: Block[] = keys.map((k) =>
          this.block(() => {
            this.emit({ type: 'EqualStmt', stmt: { a: kop, b: this.strOp(k) } });
            this.planDataRef(elems, i + 1, node.children.get(k)!, [...path, this.strOp(k)], cont);
          }),
        );
        blocks.push(
          this.block(() => {
            const s = excludeSet();
            const probe = this.newLocal();
            this.emit({
              type: 'NotStmt',
              stmt: {
                block: {
                  stmts: [
                    this.stmtNoLoc({
                      type: 'DotStmt',
                      stmt: { source: { type: 'local', value: s }, key: kop, target: probe },
                    }),
                  ],
                },
              },
            });
            this.baseDoc(path, (b) => {
              const t = this.newLocal();
              this.emit({ type: 'DotStmt', stmt: { source: { type: 'local', value: b }, key: kop, target: t } });
              this.planRefRest(t, elems, i + 1, cont);
            });
          }),
        );
        this.emit({ type: 'BlockStmt', stmt: { blocks } });
      });
      return;
    }
    // Unbound key: one block per virtual child, plus a scan of base data skipping virtual keys.
    const blocks: Block[] = keys.map((k) =>
      this.block(() =>
        this.unify(e, { type: 'string', value: k }, () =>
          this.planDataRef(elems, i + 1, node.children.get(k)!, [...path, this.strOp(k)], cont),
        ),
      ),
    );
    blocks.push(
      this.block(() => {
        const s = excludeSet();
        this.baseDoc(path, (b) => {
          const k = this.newLocal();
          const v = this.newLocal();
          const blk = this.block(() => {
            const probe = this.newLocal();
            this.emit({
              type: 'NotStmt',
              stmt: {
                block: {
                  stmts: [
                    this.stmtNoLoc({
                      type: 'DotStmt',
                      stmt: { source: { type: 'local', value: s }, key: { type: 'local', value: k }, target: probe },
                    }),
                  ],
                },
              },
            });
            this.unify(e, { type: '$local', local: k }, () => this.planRefRest(v, elems, i + 1, cont));
          });
          this.emit({ type: 'ScanStmt', stmt: { source: b, key: k, value: v, block: blk } });
        });
      }),
    );
    this.emit({ type: 'BlockStmt', stmt: { blocks } });
  }

  /** Whole document at a trie node: virtual children (rule values) merged over base data. */
  private extent(node: TrieNode, path: Operand[]): Local {
    const virtual = this.virtualObject(node);
    const res = this.newLocal();
    this.emit({ type: 'AssignVarStmt', stmt: { source: { type: 'local', value: virtual }, target: res } });
    const blk = this.block(() =>
      this.baseDoc(path, (b) => {
        const merged = this.newLocal();
        this.emit({ type: 'ObjectMergeStmt', stmt: { a: b, b: virtual, target: merged } });
        this.emit({ type: 'AssignVarStmt', stmt: { source: { type: 'local', value: merged }, target: res } });
      }),
    );
    this.emit({ type: 'BlockStmt', stmt: { blocks: [blk] } });
    return res;
  }

  private virtualObject(node: TrieNode): Local {
    const o = this.newLocal();
    this.emit({ type: 'MakeObjectStmt', stmt: { target: o } });
    for (const [key, child] of node.children) {
      if (child.ruleSet) {
        if (child.ruleSet.kind === 'function') continue;
        const fname = this.pb.ruleSetFunc(this.gen, child.ruleSet);
        const blk = this.block(() => {
          const r = this.newLocal();
          this.emit({
            type: 'CallStmt',
            stmt: {
              func: fname,
              args: [
                { type: 'local', value: INPUT },
                { type: 'local', value: DATA },
              ],
              result: r,
            },
          });
          this.emit({
            type: 'ObjectInsertStmt',
            stmt: { object: o, key: this.strOp(key), value: { type: 'local', value: r } },
          });
        });
        this.emit({ type: 'BlockStmt', stmt: { blocks: [blk] } });
      } else {
        const sub = this.virtualObject(child);
        this.emit({
          type: 'ObjectInsertStmt',
          stmt: { object: o, key: this.strOp(key), value: { type: 'local', value: sub } },
        });
      }
    }
    return o;
  }
}
