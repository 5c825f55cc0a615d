// Canonical Rego formatting (`guardian policy fmt`), laid out as `opa fmt` lays it out (OPA's format
// package, Rego v1): tab indentation; one blank line between rules, none between adjacent one-line rules;
// a one-expression body written on the head's line stays there (`p if x`); `:=` in every head; imports
// grouped as written and sorted within a group; collections, call arguments and comprehension bodies
// kept on one line or broken where the source broke them (elements that shared a source line share an
// output line); nested infix calls parenthesised; string literals as written; comments kept in place (on
// their own lines before the code that followed them, blank lines between them kept, or at the end of the
// line they trailed); a chained body (`p { a } { b }`) is written as a rule of its own, with the copied head
// (opa fmt unchains them). The result parses to the same rules and formatting it again changes nothing
// (test/rego/tester/format.test.ts checks both on every shipped policy). With `regoV1` a module read as
// Rego v0 is rewritten to v1 (`if`, `contains`, `import rego.v1` sorted into the first import group,
// `future.keywords` imports dropped), as `opa fmt --rego-v1`.
import { parseModule } from '../ast/index.ts';
import { REGO_KEYWORDS } from '../ast/parser.ts';
import {
  isExprPart,
  type Body,
  type CallTerm,
  type Comment,
  type Expr,
  type Import,
  type Location,
  type Module,
  type RefTerm,
  type Rule,
  type TemplateStringTerm,
  type Term,
} from '../ast/types.ts';
import { goQuote } from '../builtins/host/format.ts';

export interface FormatOptions {
  /** Read the text as Rego v0 and write v1 (OPA's `opa fmt --rego-v1`). */
  regoV1?: boolean;
}

/** Parses and formats one module; parse errors throw RegoErrors. */
export function formatSource(file: string, text: string, options: FormatOptions = {}): string {
  const module = parseModule(file, text, { regoVersion: options.regoV1 ? 0 : 1 });
  return formatModule(module, text, options);
}

/** The infix form of a builtin and its binding strength (higher binds tighter), as the parser reads them. */
const INFIX: Record<string, { op: string; level: number }> = {
  assign: { op: ':=', level: -1 },
  eq: { op: '=', level: -1 },
  'internal.member_2': { op: 'in', level: 0 },
  equal: { op: '==', level: 1 },
  neq: { op: '!=', level: 1 },
  lt: { op: '<', level: 1 },
  lte: { op: '<=', level: 1 },
  gt: { op: '>', level: 1 },
  gte: { op: '>=', level: 1 },
  or: { op: '|', level: 2 },
  and: { op: '&', level: 3 },
  plus: { op: '+', level: 4 },
  minus: { op: '-', level: 4 },
  mul: { op: '*', level: 5 },
  div: { op: '/', level: 5 },
  rem: { op: '%', level: 5 },
};

const IDENT = /^[A-Za-z_][A-Za-z0-9_]*$/;

function operatorName(op: RefTerm): string {
  return op.value.map((t) => (t.type === 'var' || t.type === 'string' ? t.value : '?')).join('.');
}

function isCall(t: Term, name?: string): boolean {
  return t.type === 'call' && (name === undefined || operatorName(t.operator) === name);
}

function infixOf(t: Term): { op: string; level: number } | undefined {
  if (t.type !== 'call') return undefined;
  const infix = INFIX[operatorName(t.operator)];
  return infix && t.args.length === 2 ? infix : undefined;
}

const rowOf = (n: { location?: Location } | undefined): number => n?.location?.row ?? 0;

function lastRow(n: { location?: Location }): number {
  const l = n.location;
  return l ? l.row + (l.text?.match(/\n/g)?.length ?? 0) : 0;
}

function isTrue(t: Term | undefined): boolean {
  return t?.type === 'boolean' && t.value === true;
}

/** The body of `p := 1` or `p if true`: one plain `true` (OPA writes such rules without a body). */
function isConstBody(body: Body): boolean {
  if (body.length !== 1) return false;
  const e = body[0];
  return !e.negated && e.with.length === 0 && e.terms.type === 'term' && isTrue(e.terms.term);
}

function importKey(i: Import): string[] {
  return i.path.value.map((t) => (t.type === 'var' || t.type === 'string' ? t.value : JSON.stringify(t)));
}

function compareImports(a: Import, b: Import): number {
  const x = importKey(a);
  const y = importKey(b);
  for (let k = 0; k < Math.min(x.length, y.length); k++) if (x[k] !== y[k]) return x[k] < y[k] ? -1 : 1;
  if (x.length !== y.length) return x.length - y.length;
  return (a.alias ?? '') < (b.alias ?? '') ? -1 : (a.alias ?? '') > (b.alias ?? '') ? 1 : 0;
}

class Printer {
  private out = '';
  private level = 0;
  private inline = false;
  /** A comment to write at the end of the current line. */
  private pending: Comment | null = null;
  /** Skip the pending comment at the next line end once (a collection broke the line it trailed). */
  private delay = false;
  /** How deep `term` calls nest; the outermost one may fall back to the source text. */
  private termDepth = 0;
  /** A second comment met a line whose end already had one, inside the term being written. */
  private collided = false;
  /** The last `term` call wrote its source text (see `unformatted`). */
  private wroteSource = false;
  /** Writing a rule head's reference: its keys break the line after a comment as opa fmt's head does. */
  private inHeadRef = false;
  private readonly comments: Comment[];
  private readonly lines: string[];
  private readonly lineStarts: number[] = [0];
  /** Some rule head needs a ref head (`a.b.c`, `a.b contains x`): every head is written as a ref. */
  private readonly refHeads: boolean;

  constructor(
    private readonly module: Module,
    private readonly text: string,
    private readonly regoV1: boolean,
  ) {
    this.comments = [...module.comments]
      .sort((a, b) => a.location.row - b.location.row || a.location.col - b.location.col)
      .map((c) => ({ ...c, text: c.text.trimEnd() }));
    this.lines = text.split('\n');
    for (let i = 0; i < text.length; i++) if (text[i] === '\n') this.lineStarts.push(i + 1);
    this.refHeads = module.rules.some(
      (r) => r.head.reference.length > 2 || (r.head.reference.length === 2 && r.head.kind === 'multi'),
    );
  }

  // ---- the writer: lines, indentation, comments ----

  private write(s: string): void {
    this.out += s;
  }

  private startLine(): void {
    this.inline = true;
    this.out += '\t'.repeat(this.level);
  }

  private endLine(): void {
    this.inline = false;
    if (this.pending && !this.delay) {
      this.out += ` #${this.pending.text}`;
      this.pending = null;
    }
    this.delay = false;
    this.out += '\n';
  }

  private blankLine(): void {
    if (this.inline) this.endLine();
    if (!this.out.endsWith('\n\n')) this.out += '\n';
  }

  /**
   * Writes the comments above `row` on lines of their own (a blank line where the source had one between
   * them, and after the last when it stood apart from `row`), and keeps the one on `row` for the line end.
   */
  private commentsBefore(row: number): void {
    if (row <= 0) return;
    let prev: number | undefined;
    if (!this.inline) {
      while (this.comments.length && this.comments[0].location.row < row) {
        const c = this.comments.shift()!;
        if (prev !== undefined && c.location.row - prev > 1) this.blankLine();
        this.startLine();
        this.write(`#${c.text}`);
        this.endLine();
        prev = c.location.row;
      }
      if (prev !== undefined && row - prev > 1) this.blankLine();
    }
    this.trailingAt(row);
  }

  /**
   * The row of the bracket closing what `node` ends inside: the first character after it that is not blank,
   * a comma or a comment. -1 when unknown.
   */
  private closeAfter(node: { location?: Location } | undefined): number {
    const l = node?.location;
    if (!l || l.offset === undefined || l.text === undefined) return -1;
    let i = l.offset + l.text.length;
    const t = this.text;
    while (i < t.length) {
      const c = t[i];
      if (c === '#') {
        const nl = t.indexOf('\n', i);
        if (nl < 0) return -1;
        i = nl;
      } else if (c === ' ' || c === '\t' || c === '\r' || c === '\n' || c === ',' || c === ';') i++;
      else break;
    }
    if (i >= t.length) return -1;
    return this.rowAt(i);
  }

  /** Before an element that begins an output line: the comments above it, then its indentation again. */
  private commentsAtLineStart(row: number): void {
    if (!(this.comments.length && this.comments[0].location.row < row)) return;
    if (!this.inline || !/(^|\n)\t*$/.test(this.out) || this.out.length === 0) return;
    this.out = this.out.replace(/\t*$/, '');
    this.inline = false;
    this.commentsBefore(row);
    this.startLine();
  }

  /** The comment trailing `row`, kept for the line end (a term inside a line). */
  private trailingAt(row: number): void {
    if (!(this.comments.length && this.comments[0].location.row === row)) return;
    if (this.pending === null) this.pending = this.comments.shift()!;
    else if (this.termDepth > 0) this.collided = true;
  }

  // ---- module ----

  print(): string {
    const m = this.module;
    this.commentsBefore(rowOf(m.package));
    this.startLine();
    this.write(`package ${this.refText(m.package.path.slice(1), true)}`);
    this.endLine();
    this.blankLine();

    let imports = m.imports;
    const hasRegoV1 = imports.some((i) => this.isRegoV1Import(i));
    if (this.regoV1 || hasRegoV1) imports = imports.filter((i) => !this.isFutureImport(i));
    if (this.regoV1 && !hasRegoV1) {
      const first = imports[0];
      const path: RefTerm = {
        type: 'ref',
        value: [
          { type: 'var', value: 'rego' },
          { type: 'string', value: 'v1' },
        ],
      };
      // Placed in the first group of imports (before the rules), sorted there like any other.
      const row = first ? rowOf(first) : rowOf(m.package) + 1;
      imports = [{ path, location: { file: m.file, row, col: 0 } }, ...imports];
    }
    type Item = { kind: 'import'; node: Import } | { kind: 'rule'; node: Rule };
    const items: Item[] = [
      ...imports.map((node) => ({ kind: 'import' as const, node })),
      ...m.rules.map((node) => ({ kind: 'rule' as const, node })),
    ].sort((a, b) => rowOf(a.node) - rowOf(b.node) || (a.node.location?.col ?? 0) - (b.node.location?.col ?? 0));
    let k = 0;
    while (k < items.length) {
      const start = k;
      while (k < items.length && items[k].kind === items[start].kind) k++;
      const run = items.slice(start, k).map((i) => i.node);
      if (items[start].kind === 'import') this.imports(run as Import[]);
      else this.rules(run as Rule[]);
    }
    for (const c of this.comments.splice(0)) {
      this.startLine();
      this.write(`#${c.text}`);
      this.endLine();
    }
    return `${this.out.replace(/\n+$/, '')}\n`;
  }

  private isRegoV1Import(i: Import): boolean {
    const v = importKey(i);
    return v.length === 2 && v[0] === 'rego' && v[1] === 'v1';
  }

  private isFutureImport(i: Import): boolean {
    return importKey(i)[0] === 'future';
  }

  private imports(imports: Import[]): void {
    const trailing = new Map<Import, Comment>();
    for (const i of imports) {
      if (i.location?.col === 0) continue; // the added `import rego.v1`
      const at = this.comments.findIndex((c) => c.location.row === rowOf(i) && rowOf(i) > 0);
      if (at >= 0) trailing.set(i, this.comments.splice(at, 1)[0]);
    }
    const groups: Import[][] = [];
    for (const i of imports) {
      const group = groups.at(-1);
      const last = group?.at(-1);
      if (!group || !last || rowOf(i) - rowOf(last) > 1) groups.push([i]);
      else group.push(i);
    }
    for (const group of groups) {
      this.commentsBefore(rowOf(group[0]));
      for (const i of [...group].sort(compareImports)) {
        this.startLine();
        this.write(`import ${this.refText(i.path.value, false, true)}${i.alias ? ` as ${i.alias}` : ''}`);
        const c = trailing.get(i);
        if (c) this.write(` #${c.text}`);
        this.endLine();
      }
      this.blankLine();
    }
  }

  private rules(rules: Rule[]): void {
    rules.forEach((rule, i) => {
      this.commentsBefore(rowOf(rule));
      const startOut = this.out.length;
      this.rule(rule, false);
      if (this.inline) this.endLine();
      const oneLine = !this.out.slice(startOut).trimEnd().includes('\n');
      const next = rules[i + 1];
      if (next && oneLine && this.groupable(rule) && this.groupable(next) && rowOf(next) === rowOf(rule) + 1) return;
      this.blankLine();
    });
  }

  /** Adjacent one-line rules stay together (OPA's rule grouping). */
  private groupable(rule: Rule): boolean {
    if (rule.default || rule.body.length > 1 || rule.else) return false;
    if (rule.body.length === 1 && !isConstBody(rule.body) && rowOf(rule.body[0]) !== this.headEndRow(rule.head))
      return false;
    return !(rule.body.length === 1 && !isConstBody(rule.body) && this.isSetTerm(rule.body[0]));
  }

  private headEndRow(h: Rule['head']): number {
    return lastRow(h);
  }

  private isSetTerm(e: Expr): boolean {
    return !e.negated && e.terms.type === 'term' && e.terms.term.type === 'set';
  }

  // ---- rules ----

  private rule(rule: Rule, isElse: boolean): void {
    if (!isElse) this.startLine();
    if (rule.default) this.write('default ');
    const constant = isConstBody(rule.body) && !rule.else;
    this.head(rule, isElse, constant);
    if (constant) {
      this.endLine();
      return;
    }
    this.write(' if');
    const body = rule.body;
    if (body.length === 1 && rowOf(body[0]) === this.headEndRow(rule.head) && !this.isSetTerm(body[0])) {
      this.write(' ');
      this.expr(body[0], false);
      this.endLine();
      if (rule.else) this.elseRule(rule);
      return;
    }
    this.write(' {');
    this.endLine();
    this.level++;
    this.body(body, !isElse);
    this.commentsBefore(this.closeAfter(body.at(-1)));
    this.level--;
    this.startLine();
    this.write('}');
    if (rule.else) this.elseRule(rule);
  }

  private elseRule(rule: Rule): void {
    const e = rule.else!;
    const elseRow = rowOf(e.head);
    // `} else` continues the line it closes; an `else` that began its own line is set apart by a blank line.
    const inline = elseRow > rowOf(rule) && !(this.lines[elseRow - 1] ?? '').trim().startsWith('else');
    const commentAbove = this.comments.length > 0 && this.comments[0].location.row < elseRow;
    if (inline && !commentAbove) this.write(' ');
    else {
      this.blankLine();
      this.commentsBefore(elseRow);
      this.startLine();
    }
    this.rule(e, true);
  }

  private head(rule: Rule, isElse: boolean, constant: boolean): void {
    const h = rule.head;
    if (isElse) this.write('else');
    else if (this.refHeads || h.reference.length === 1) {
      this.inHeadRef = true;
      try {
        this.write(this.refText(h.reference, false));
      } finally {
        this.inHeadRef = false;
      }
    } else this.write(this.headRefTerm(h.reference));
    if (!isElse && h.args) {
      this.write('(');
      this.iterable(h.args, h.location, -1, (a) => this.write(this.term(a, false)));
      this.write(')');
    }
    if (h.kind === 'multi' && h.key) {
      this.write(` contains ${this.term(h.key, false)}`);
      return;
    }
    const v = h.value;
    if (!v) return;
    if (!isTrue(v) || constant || rule.default) {
      const generated = isElse ? false : v.location === h.location;
      // `p if true` is `p := true`; a generated `true` of a function or an else is implied.
      const refConst = this.regoV1Output && constant && !h.args && !isElse;
      if (generated && isTrue(v) && !refConst) return;
      if (isElse && !constant && isTrue(v)) return;
      this.write(' := ');
      this.write(this.headTerm(v));
    }
  }

  private readonly regoV1Output = true;

  private body(body: Body, ruleBody: boolean): void {
    body.forEach((e, i) => {
      if (i > 0 && rowOf(e) > lastRow(body[i - 1]) + 1) this.blankLine();
      this.commentsBefore(rowOf(e));
      this.startLine();
      this.expr(e, ruleBody && i === 0);
      this.endLine();
    });
  }

  // ---- expressions ----

  /** `leading`: the first expression of a rule body, where a bare `x | y` would read as a comprehension. */
  private expr(e: Expr, leading: boolean): void {
    this.commentsBefore(rowOf(e));
    if (e.negated) this.write('not ');
    const t = e.terms;
    if (t.type === 'somedecl') this.write(`some ${t.vars.map((v) => this.term(v, false)).join(', ')}`);
    else if (t.type === 'somein')
      this.write(
        `some ${t.key ? `${this.term(t.key, true)}, ` : ''}${this.term(t.value, true)} in ${this.term(t.domain, true)}`,
      );
    else if (t.type === 'every') {
      this.write(
        `every ${t.key ? `${this.term(t.key, false)}, ` : ''}${this.term(t.value, false)} in ${this.term(t.domain, false)} {`,
      );
      this.comprehensionBody(t.body, rowOf(e), e.location, false);
      if (t.body.length === 1 && rowOf(t.body[0]) === rowOf(e)) this.write(' ');
      this.write('}');
    } else if (t.type === 'call') {
      const call: CallTerm = { type: 'call', operator: t.operator, args: t.args };
      const s = this.topCall(call, leading && !e.negated);
      this.write(leading && !e.negated && isCall(call, 'or') ? `(${s})` : s);
    } else
      this.write(
        leading && !e.negated && isCall(t.term, 'or') ? `(${this.term(t.term, false)})` : this.term(t.term, false),
      );
    this.withs(e);
  }

  /** An expression-level call: infix operands unparenthesised (their own operands are). */
  private topCall(c: CallTerm, leading: boolean): string {
    const name = operatorName(c.operator);
    const infix = INFIX[name];
    if (infix && c.args.length === 2) {
      const [a, b] = c.args;
      if (name === 'internal.member_2') return `${this.term(a, true)} in ${this.term(b, true)}`;
      // Parentheses the source needed stay (OPA drops them here; its output would mean something else).
      const need = (x: Term, right: boolean): boolean => {
        const inner = infixOf(x);
        return (
          inner !== undefined &&
          infix.level >= 0 &&
          (inner.level < infix.level || (right && inner.level === infix.level))
        );
      };
      let left = this.term(a, false);
      if (need(a, false) || (leading && isCall(a, 'or'))) left = `(${left})`;
      const right = need(b, true) ? `(${this.term(b, false)})` : this.term(b, false);
      return `${left} ${infix.op} ${right}`;
    }
    if (infix && infix.level > 0 && c.args.length === 3) {
      // The v0 form with an output argument: `plus(a, b, c)` is `c = a + b`.
      return `${this.term(c.args[2], false)} = ${this.term(c.args[0], true)} ${infix.op} ${this.term(c.args[1], true)}`;
    }
    if (name === 'internal.member_3' && c.args.length === 3)
      return `${this.term(c.args[0], true)}, ${this.term(c.args[1], true)} in ${this.term(c.args[2], true)}`;
    return this.plainCall(c);
  }

  private withs(e: Expr): void {
    if (e.with.length === 0) return;
    let termsEnd = rowOf(e);
    const text = e.location?.text;
    const first = e.with[0].location?.offset;
    if (text && first !== undefined && e.location?.offset !== undefined) {
      const own = text.slice(0, first - e.location.offset).trimEnd();
      termsEnd = rowOf(e) + (own.match(/\n/g)?.length ?? 0);
    }
    let prevRow = termsEnd;
    let indented = false;
    for (const w of e.with) {
      this.commentsBefore(rowOf(w));
      const own = rowOf(w) > prevRow;
      if (own) {
        if (!indented) {
          this.level++;
          indented = true;
        }
        this.endLine();
        this.startLine();
        prevRow = rowOf(w);
      } else this.write(' ');
      this.write(`with ${this.term(w.target, false)} as ${this.term(w.value, false)}`);
    }
    if (indented) this.level--;
  }

  // ---- terms ----

  /**
   * A term as text. `parens`: the term is an operand of an infix call (or of `in`), where OPA parenthesises
   * an infix call. Multi-line terms write through the writer, so their comments land in place.
   */
  private term(t: Term, parens: boolean): string {
    return this.asOneTerm(t.location, () => this.writeTerm(t, parens));
  }

  /** Writes through `write` as one term, falling back to the text of `loc` as `term` does. */
  private asOneTerm(loc: Location | undefined, write: () => void): string {
    const save = this.out;
    this.wroteSource = false;
    const outermost = this.termDepth === 0;
    const state = { comments: [...this.comments], pending: this.pending, delay: this.delay, level: this.level };
    if (outermost) this.collided = false;
    this.out = '';
    this.termDepth++;
    try {
      write();
    } finally {
      this.termDepth--;
    }
    const s = this.out;
    this.out = save;
    const text = loc?.text;
    if (outermost && this.collided && loc && text) return this.unformatted({ ...loc, text }, state);
    return s;
  }

  /**
   * The term's source text, as opa fmt writes a term whose comments would put two on one output line
   * (OPA's format writeTerm/writeUnformatted): comments inside it go with the text, one on its last line
   * stays to trail it.
   */
  private unformatted(
    loc: Location & { text: string },
    state: { comments: Comment[]; pending: Comment | null; delay: boolean; level: number },
  ): string {
    this.collided = false;
    this.wroteSource = true;
    const last = lastRow({ location: loc });
    const inside = (c: Comment): boolean => c.location.row >= loc.row && c.location.row < last;
    this.comments.splice(0, this.comments.length, ...state.comments.filter((c) => !inside(c)));
    this.pending = state.pending && inside(state.pending) ? null : state.pending;
    if (this.pending === null && this.comments[0]?.location.row === last) this.pending = this.comments.shift()!;
    this.delay = state.delay;
    this.level = state.level;
    return loc.text;
  }

  /**
   * A rule head's value or reference key. When it was written as in the source, the comment on its last
   * line follows it at once and the head goes on after a line break, as opa fmt writes a head there.
   */
  private headTerm(t: Term): string {
    const s = this.term(t, false);
    if (!this.wroteSource || !this.pending || this.pending.location.row !== lastRow(t)) return s;
    const c = this.pending;
    this.pending = null;
    return `${s} #${c.text}\n`;
  }

  private writeTerm(t: Term, parens: boolean): void {
    this.trailingAt(rowOf(t));
    switch (t.type) {
      case 'null':
        return this.write('null');
      case 'boolean':
        return this.write(String(t.value));
      case 'number':
        return this.write(t.value);
      case 'string':
        return this.write(this.stringText(t));
      case 'var':
        return this.write(t.wildcard ? '_' : t.value);
      case 'ref':
        return this.write(this.refText(t.value, false));
      case 'array':
        this.write('[');
        this.iterable(t.value, t.location, this.closeAfter(t.value.at(-1)), (v) => this.write(this.listItem(v, true)));
        return this.write(']');
      case 'set':
        if (t.value.length === 0) return this.write('set()');
        this.write('{');
        this.iterable(t.value, t.location, this.closeAfter(t.value.at(-1)), (v) => this.write(this.listItem(v, true)));
        return this.write('}');
      case 'object':
        this.write('{');
        this.iterable(
          t.value,
          t.location,
          this.closeAfter(t.value.at(-1)?.[1]),
          ([k, v]) => this.write(`${this.listItem(k, true)}: ${this.listItem(v, true)}`),
          ([k]) => k,
        );
        return this.write('}');
      case 'arraycomprehension':
        this.write('[');
        this.comprehension(t.term, t.body, t.location);
        return this.write(']');
      case 'setcomprehension':
        this.write('{');
        this.comprehension(t.term, t.body, t.location);
        return this.write('}');
      case 'objectcomprehension': {
        this.write('{');
        const key = isCall(t.key, 'or') ? `(${this.term(t.key, false)})` : this.term(t.key, false);
        const value = this.compTerm(t.value);
        this.write(`${key}: ${value} |`);
        this.comprehensionBody(t.body, rowOf(t.key), t.location, rowOf(t.key) > rowOf(t));
        return this.write('}');
      }
      case 'templatestring':
        return this.templateString(t);
      case 'call': {
        const name = operatorName(t.operator);
        const infix = INFIX[name];
        if (infix && infix.level >= 0 && t.args.length === 2) {
          if (name === 'internal.member_2')
            return this.write(`${this.term(t.args[0], true)} in ${this.term(t.args[1], true)}`);
          const s = `${this.term(t.args[0], true)} ${infix.op} ${this.term(t.args[1], true)}`;
          return this.write(parens ? `(${s})` : s);
        }
        // `k, v in xs` as a term is always parenthesised: unbracketed, its comma would split the enclosing list.
        if (name === 'internal.member_3' && t.args.length === 3)
          return this.write(
            `(${this.term(t.args[0], true)}, ${this.term(t.args[1], true)} in ${this.term(t.args[2], true)})`,
          );
        return this.write(this.plainCall(t));
      }
    }
  }

  /** A collection element: a union call is parenthesised (`|` would read as a comprehension). */
  private listItem(t: Term, unionParens: boolean): string {
    const s = this.term(t, false);
    return isCall(t, 'or') && (unionParens || this.parenthesized(t)) ? `(${s})` : s;
  }

  /** A comprehension's head: a call keeps the parentheses it was written in (a union always has them). */
  private compTerm(t: Term): string {
    const s = this.term(t, false);
    if (isCall(t, 'internal.member_3')) return s; // parenthesised already
    return t.type === 'call' && (isCall(t, 'or') || this.parenthesized(t)) ? `(${s})` : s;
  }

  /** Whether the source wrote `t` in parentheses of its own (not a call's argument list). */
  private parenthesized(t: Term): boolean {
    return this.openParen(t) !== undefined;
  }

  /** The offset of the `(` the source wrapped `t` in, if it did. */
  private openParen(t: Term): number | undefined {
    const l = t.location;
    if (!l || l.offset === undefined) return undefined;
    if (l.text?.startsWith('(') && this.closingParen(l.text) === l.text.length - 1) return l.offset;
    let i = l.offset - 1;
    while (i >= 0 && /\s/.test(this.text[i])) i--;
    if (this.text[i] !== '(') return undefined;
    const open = i;
    i--;
    while (i >= 0 && (this.text[i] === ' ' || this.text[i] === '\t')) i--;
    return i < 0 || !/[A-Za-z0-9_\])]/.test(this.text[i]) ? open : undefined;
  }

  /** The index of the `)` matching the `(` that opens `text` (strings skipped). */
  private closingParen(text: string, open = '(', close = ')'): number {
    let depth = 0;
    let quote: string | null = null;
    for (let i = 0; i < text.length; i++) {
      const c = text[i];
      if (quote) {
        if (c === '\\' && quote === '"') i++;
        else if (c === quote) quote = null;
      } else if (c === '"' || c === '`') quote = c;
      else if (c === '#' && open === '[') i = text.indexOf('\n', i) < 0 ? text.length : text.indexOf('\n', i);
      else if (c === open) depth++;
      else if (c === close && --depth === 0) return i;
    }
    return -1;
  }

  /**
   * `p[k]` as one term: opa fmt writes a two-part head reference (no other ref heads in the module) as a
   * ref, so when it falls back to the source text, the text runs from the name to the closing bracket.
   */
  private headRefTerm(ref: Term[]): string {
    const loc = ref[0].location;
    const start = loc?.offset;
    const end = start === undefined ? -1 : this.closingParen(this.text.slice(start), '[', ']');
    if (!loc || start === undefined || end < 0) return `${this.term(ref[0], false)}[${this.headTerm(ref[1])}]`;
    const text = this.text.slice(start, start + end + 1);
    return this.asOneTerm({ ...loc, text }, () =>
      this.write(`${this.term(ref[0], false)}[${this.term(ref[1], false)}]`),
    );
  }

  /** Where an element starts in the source: at the parenthesis it was wrapped in, if any. */
  private startOf(t: Term): { row: number; offset: number | undefined } {
    const open = this.openParen(t);
    if (open === undefined || open === t.location?.offset) return { row: rowOf(t), offset: t.location?.offset };
    return { row: this.rowAt(open), offset: open };
  }

  private rowAt(offset: number): number {
    let lo = 0;
    let hi = this.lineStarts.length - 1;
    while (lo < hi) {
      const mid = (lo + hi + 1) >> 1;
      if (this.lineStarts[mid] <= offset) lo = mid;
      else hi = mid - 1;
    }
    return lo + 1;
  }

  private comprehension(head: Term, body: Body, loc: Location | undefined): void {
    this.write(`${this.compTerm(head)} |`);
    this.comprehensionBody(body, rowOf(head), loc, false);
  }

  /** A comprehension's (or an `every`'s) body: on the line, or one expression per line when it was broken. */
  private comprehensionBody(body: Body, headRow: number, loc: Location | undefined, forceBlock: boolean): void {
    void loc;
    const rows = new Set(body.map(rowOf));
    const closeRow = this.closeAfter(body.at(-1));
    if (forceBlock || rowOf(body[0]) > headRow || rows.size > 1) {
      this.endLine();
      this.level++;
      this.body(body, false);
      this.commentsBefore(closeRow);
      this.level--;
      this.startLine();
      return;
    }
    this.write(' ');
    body.forEach((e, i) => {
      if (i > 0) this.write('; ');
      const save = this.out;
      this.out = '';
      this.expr(e, false);
      const s = this.out;
      this.out = save;
      this.write(s);
    });
    this.commentsBefore(closeRow);
  }

  private plainCall(c: CallTerm): string {
    const save = this.out;
    this.out = '';
    this.write(`${this.refText(c.operator.value, false)}(`);
    this.iterable(c.args, c.operator.location, this.closeAfter(c.args.at(-1)), (a) =>
      this.write(this.listItem(a, false)),
    );
    this.write(')');
    const s = this.out;
    this.out = save;
    return s;
  }

  /**
   * Elements on one line, or on several (each source line's elements together, a trailing comma on each)
   * when they spanned several source lines or the first began a line of its own.
   */
  private iterable<T>(
    items: T[],
    loc: Location | undefined,
    closeRow: number,
    write: (item: T) => void,
    locOf: (item: T) => Term = (i) => i as unknown as Term,
  ): void {
    if (items.length === 0) return;
    const lines: T[][] = [];
    let prev = -1;
    for (const item of items) {
      const row = this.startOf(locOf(item)).row;
      if (lines.length && row > prev) lines.push([item]);
      else if (lines.length) lines[lines.length - 1].push(item);
      else lines.push([item]);
      prev = row;
    }
    let brokenBefore = false;
    if (lines.length === 1 && loc?.text && loc.offset !== undefined) {
      // Call arguments are measured from the operator, whose text never holds them (OPA's rule too).
      const first = this.startOf(locOf(items[0])).offset;
      const cut =
        first !== undefined && first >= loc.offset && first <= loc.offset + loc.text.length ? first - loc.offset : -1;
      brokenBefore = cut > 0 && loc.text.slice(0, cut).indexOf('\n') > 0;
    }
    const multiline = lines.length > 1 || brokenBefore;
    if (multiline) {
      if (this.pending) this.delay = true;
      this.endLine();
      this.level++;
      this.startLine();
    }
    lines.forEach((line, i) => {
      line.forEach((item, j) => {
        if (j > 0) this.write(', ');
        else this.commentsAtLineStart(rowOf(locOf(item)));
        write(item);
      });
      if (i < lines.length - 1) {
        this.write(',');
        this.endLine();
        this.startLine();
      }
    });
    if (multiline) {
      this.write(',');
      this.endLine();
      this.commentsBefore(closeRow);
      this.level--;
      this.startLine();
    }
  }

  // ---- refs and strings ----

  /** A ref's text; `pkg`: a package path (no head term). `future`: a future.keywords import (keywords as dots). */
  private refText(parts: Term[], pkg: boolean, future = false): string {
    let s = '';
    parts.forEach((p, i) => {
      if (i === 0 && !pkg) {
        if (p.type === 'call') {
          const c = this.term(p, false);
          // `(a | b)[_]`: an infix call indexed needs its parentheses whatever the source had.
          s += infixOf(p) || this.parenthesized(p) ? `(${c})` : c;
        } else s += this.term(p, false);
        return;
      }
      if (i === 0 && pkg && p.type === 'string' && IDENT.test(p.value)) {
        s += p.value;
        return;
      }
      if (p.type === 'string') {
        const quoted = (p.location?.text ?? '').startsWith('"');
        const keyword = REGO_KEYWORDS.has(p.value);
        if (IDENT.test(p.value) && (!keyword || future || !quoted)) s += `.${p.value}`;
        else s += `[${this.stringText(p)}]`;
      } else if (p.type === 'var') s += `[${p.wildcard ? '_' : p.value}]`;
      else s += `[${this.inHeadRef ? this.headTerm(p) : this.term(p, false)}]`;
    });
    return s;
  }

  /**
   * As opa fmt's writeTemplateString: text parts re-escaped (`{` as `\{`; in `$"..."` also as Go's
   * strconv.Quote escapes, which is how OPA writes a string), expressions in braces one indentation level
   * in, and a scalar literal the parser kept as a term written inline without braces (`$"{1}"` becomes
   * `$"1"`, as with opa fmt). Comments inside a hole stay there: those before its expression follow the
   * `{` (the first on its line), one on the expression's line goes to the end of the output line it lands
   * on, and those between the expression and the next part go on lines of their own before the `}`.
   */
  private templateString(t: TemplateStringTerm): void {
    const quote = t.multiLine ? '`' : '"';
    this.write(`$${quote}`);
    t.parts.forEach((p, i) => {
      if (isExprPart(p)) {
        this.write('{');
        this.level++;
        if (this.pending) {
          // A comment on the line of the `{` ends that line; any others above the expression follow on
          // lines of their own, and the expression starts the next.
          this.endLine();
          this.commentsBefore(rowOf(p));
          this.startLine();
        } else {
          const before = this.commentsAbove(rowOf(p));
          if (before.length) {
            this.write(' ');
            this.ownLineComments(before);
          }
        }
        if (!this.inline) this.startLine();
        this.expr(p, false);
        const next = t.parts[i + 1];
        if (next) {
          const between = this.commentsAbove(rowOf(next));
          if (between.length) {
            this.endLine();
            this.ownLineComments(between);
            this.startLine();
          }
        }
        this.write('}');
        this.level--;
      } else if (p.type === 'string') {
        const text = t.multiLine ? p.value : goQuote(p.value).slice(1, -1);
        this.write(text.replaceAll('{', '\\{'));
      } else this.write(this.term(p, false));
    });
    this.write(quote);
  }

  /** Takes the comments above `row` (those still to be written, in order). */
  private commentsAbove(row: number): Comment[] {
    let k = 0;
    while (k < this.comments.length && this.comments[k].location.row < row) k++;
    return this.comments.splice(0, k);
  }

  /**
   * Each comment ended by a line break, a blank line between two the source set apart (OPA's writeComments):
   * the first goes on the current line when one is open, the others start lines of their own.
   */
  private ownLineComments(comments: Comment[]): void {
    comments.forEach((c, k) => {
      if (k > 0 && c.location.row - comments[k - 1].location.row > 1) this.blankLine();
      if (!this.inline) this.startLine();
      this.write(`#${c.text}`);
      this.endLine();
    });
  }

  private stringText(t: Extract<Term, { type: 'string' }>): string {
    const text = t.location?.text;
    if (text && (text.startsWith('`') || (text.startsWith('"') && text.endsWith('"') && text.length >= 2))) return text;
    if (t.raw && !t.value.includes('`')) return `\`${t.value}\``;
    return JSON.stringify(t.value);
  }
}

/** Formats a parsed module; `text` is its source (blank lines and line breaks are read from it). */
export function formatModule(module: Module, text: string, options: FormatOptions = {}): string {
  return new Printer(module, text, options.regoV1 === true).print();
}
