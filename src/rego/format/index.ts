// Canonical Rego formatting (`guardian policy fmt`, like `opa fmt`): prints a parsed module in Rego v1 syntax
// with tab indentation, one blank line between rules, infix operators with the parentheses precedence needs,
// refs as `a.b` where the key is an identifier, and every comment kept (on its own line before the code that
// followed it, or at the end of the line it trailed). The result parses to the same AST (locations aside) and
// formatting it again changes nothing (test/rego/tester/format.test.ts checks both on every shipped policy).
// With `regoV1` a module read as Rego v0 is rewritten to v1 (`if`, `contains`, `import rego.v1` as OPA's
// `opa fmt --rego-v1` writes it, `future.keywords` imports dropped).
import { parseModule } from '../ast/index.ts';
import { REGO_KEYWORDS } from '../ast/parser.ts';
import type { Body, Comment, Expr, Module, RefTerm, Rule, Term } from '../ast/types.ts';

export interface FormatOptions {
  /** Read the text as Rego v0 and write v1 (OPA's `opa fmt --rego-v1`). */
  regoV1?: boolean;
}

/** Parses and formats one module; parse errors throw RegoErrors. */
export function formatSource(file: string, text: string, options: FormatOptions = {}): string {
  const module = parseModule(file, text, { regoVersion: options.regoV1 ? 0 : 1 });
  return formatModule(module, text, options);
}

// Operator precedence, lowest first, as src/rego/ast/parser.ts parses them.
const INFIX: Record<string, { op: string; level: number }> = {
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
const TOP = 6;

const IDENT = /^[A-Za-z_][A-Za-z0-9_]*$/;

function operatorName(op: RefTerm): string {
  return op.value.map((t) => (t.type === 'var' || t.type === 'string' ? t.value : '?')).join('.');
}

function spansLines(t: Term): boolean {
  return (t.location?.text ?? '').includes('\n');
}

class Printer {
  private readonly out: string[] = [];
  private readonly comments: Comment[];
  private readonly lines: string[];

  constructor(
    private readonly module: Module,
    text: string,
  ) {
    this.comments = [...module.comments].sort((a, b) => a.location.row - b.location.row);
    this.lines = text.split('\n');
  }

  /** Emits the comments before `row`, then `line` (with the comment trailing on `row`, when it fits). */
  private emit(indent: number, line: string, row?: number, commentIndent = indent): void {
    const pad = '\t'.repeat(indent);
    if (row !== undefined) {
      while (this.comments.length && this.comments[0].location.row < row)
        this.out.push(`${'\t'.repeat(commentIndent)}#${this.comments.shift()!.text}`);
      if (this.comments.length && this.comments[0].location.row === row && !line.includes('\n')) {
        this.out.push(`${pad}${line} #${this.comments.shift()!.text}`);
        return;
      }
    }
    this.out.push(
      line
        .split('\n')
        .map((l, i) => (i === 0 ? pad + l : l))
        .join('\n'),
    );
  }

  private blankBetween(fromRow: number, toRow: number): boolean {
    for (let r = fromRow + 1; r < toRow; r++) if (this.lines[r - 1]?.trim() === '') return true;
    return false;
  }

  print(regoV1: boolean): string {
    const m = this.module;
    const pkg = m.package.path.slice(1).map((t) => this.refKey(t, true));
    this.emit(0, `package ${pkg.join('').replace(/^\./, '')}`, m.package.location?.row);
    const imports = m.imports.filter(
      (i) => !(regoV1 && i.path.value[0].type === 'var' && ['future', 'rego'].includes(i.path.value[0].value)),
    );
    if (regoV1 || imports.length) this.out.push('');
    if (regoV1) this.out.push('import rego.v1');
    for (const i of imports)
      this.emit(0, `import ${this.term(i.path, TOP, 0)}${i.alias ? ` as ${i.alias}` : ''}`, i.location?.row);
    for (const r of m.rules) {
      this.out.push('');
      this.rule(r);
    }
    for (const c of this.comments.splice(0)) this.out.push(`#${c.text}`);
    return `${this.out.join('\n')}\n`;
  }

  private endRow(node: { location?: { row: number; text?: string } }): number | undefined {
    const l = node.location;
    return l ? l.row + (l.text?.split('\n').length ?? 1) - 1 : undefined;
  }

  private head(r: Rule, isElse: boolean): string {
    const h = r.head;
    let s = isElse ? 'else' : this.headRef(h.reference);
    if (!isElse && h.args) s += `(${h.args.map((a) => this.term(a, 0, 0)).join(', ')})`;
    if (h.kind === 'multi' && h.key) s += ` contains ${this.term(h.key, 0, 0)}`;
    else if (h.value && (h.assign || !(h.value.type === 'boolean' && h.value.value === true)))
      s += ` ${h.assign ? ':=' : '='} ${this.term(h.value, 0, 0)}`;
    return r.default ? `default ${s}` : s;
  }

  private headRef(ref: Term[]): string {
    const [first, ...rest] = ref;
    return this.term(first, TOP, 0) + rest.map((t) => this.refKey(t, false)).join('');
  }

  private rule(r: Rule): void {
    const bodiless = r.body.length === 1 && r.body[0].generated === true;
    const head = this.head(r, false);
    if (r.default || (bodiless && !r.else)) {
      this.emit(0, head, r.location?.row);
      return;
    }
    let current: Rule | undefined = r;
    let prefix = '';
    let isElse = false;
    while (current) {
      const h = isElse ? this.head(current, true) : head;
      const noBody = current.body.length === 1 && current.body[0].generated === true;
      const row = isElse ? current.head.location?.row : current.location?.row;
      if (noBody) {
        if (isElse) this.out[this.out.length - 1] += ` ${h}`;
        else this.emit(0, h, row);
      } else if (!isElse && this.fitsOneLine(current.body, current)) {
        this.emit(0, `${h} if ${this.expr(current.body[0], 1)}`, row);
      } else {
        const open = `${prefix}${h} if {`;
        if (isElse) this.out[this.out.length - 1] += ` ${open}`;
        else this.emit(0, open, row);
        this.body(current.body, 1);
        this.emit(0, '}', this.endRow(current), 1);
      }
      prefix = '';
      current = current.else;
      isElse = true;
    }
  }

  /** A one-expression body written on the head's line stays there (`allow if input.admin`). */
  private fitsOneLine(body: Body, rule: Rule): boolean {
    if (body.length !== 1 || rule.else) return false;
    const e = body[0];
    if (e.terms.type === 'every') return false;
    const start = rule.location?.row;
    return start !== undefined && e.location?.row === start && this.endRow(rule) === start;
  }

  private body(body: Body, indent: number): void {
    let prevEnd: number | undefined;
    for (const e of body) {
      const row = e.location?.row;
      if (prevEnd !== undefined && row !== undefined && this.blankBetween(prevEnd, row)) this.out.push('');
      if (e.terms.type === 'every') {
        const t = e.terms;
        const vars = t.key
          ? `${this.term(t.key, 0, indent)}, ${this.term(t.value, 0, indent)}`
          : this.term(t.value, 0, indent);
        this.emit(indent, `every ${vars} in ${this.term(t.domain, 1, indent)} {`, row);
        this.body(t.body, indent + 1);
        this.emit(indent, '}', this.endRow(e), indent + 1);
      } else this.emit(indent, this.expr(e, indent), row);
      prevEnd = this.endRow(e) ?? row;
    }
  }

  private expr(e: Expr, indent: number): string {
    const t = e.terms;
    let s: string;
    if (t.type === 'somedecl') s = `some ${t.vars.map((v) => this.term(v, 0, indent)).join(', ')}`;
    else if (t.type === 'somein')
      s = `some ${t.key ? `${this.term(t.key, 1, indent)}, ` : ''}${this.term(t.value, 1, indent)} in ${this.term(t.domain, 1, indent)}`;
    else if (t.type === 'every') {
      // Inside a comprehension body an `every` is written on one line.
      const vars = t.key
        ? `${this.term(t.key, 0, indent)}, ${this.term(t.value, 0, indent)}`
        : this.term(t.value, 0, indent);
      s = `every ${vars} in ${this.term(t.domain, 1, indent)} { ${t.body.map((b) => this.expr(b, indent)).join('; ')} }`;
    } else if (t.type === 'call') {
      const name = operatorName(t.operator);
      if ((name === 'assign' || name === 'eq') && t.args.length === 2)
        s = `${this.term(t.args[0], 0, indent)} ${name === 'assign' ? ':=' : '='} ${this.term(t.args[1], 0, indent)}`;
      else s = this.term({ type: 'call', operator: t.operator, args: t.args }, 0, indent, true);
    } else s = this.term(t.term, 0, indent, true);
    if (e.negated) s = `not ${s}`;
    for (const w of e.with) s += ` with ${this.term(w.target, TOP, indent)} as ${this.term(w.value, 0, indent)}`;
    return s;
  }

  private refKey(t: Term, dotFirst: boolean): string {
    if (t.type === 'string' && IDENT.test(t.value) && !REGO_KEYWORDS.has(t.value)) return `.${t.value}`;
    void dotFirst;
    return `[${this.term(t, 0, 0)}]`;
  }

  /** A term needing at least precedence `min` to stand unparenthesised; `top` for a whole expression. */
  private term(t: Term, min: number, indent: number, top = false): string {
    switch (t.type) {
      case 'null':
        return 'null';
      case 'boolean':
        return String(t.value);
      case 'number':
        return t.value;
      case 'string':
        return t.raw && !t.value.includes('`') ? `\`${t.value}\`` : JSON.stringify(t.value);
      case 'var':
        return t.wildcard ? '_' : t.value;
      case 'ref': {
        const [head, ...rest] = t.value;
        return this.term(head, TOP, indent) + rest.map((k) => this.refKey(k, false)).join('');
      }
      case 'array':
        return this.collection(
          '[',
          ']',
          t.value.map((v) => this.term(v, 0, indent + 1)),
          spansLines(t),
          indent,
        );
      case 'set':
        return t.value.length === 0
          ? 'set()'
          : this.collection(
              '{',
              '}',
              t.value.map((v) => this.term(v, 0, indent + 1)),
              spansLines(t),
              indent,
            );
      case 'object':
        return this.collection(
          '{',
          '}',
          t.value.map(([k, v]) => `${this.term(k, 0, indent + 1)}: ${this.term(v, 0, indent + 1)}`),
          spansLines(t),
          indent,
        );
      case 'arraycomprehension':
        return `[${this.term(t.term, TOP, indent)} | ${this.compBody(t.body, indent)}]`;
      case 'setcomprehension':
        return `{${this.term(t.term, TOP, indent)} | ${this.compBody(t.body, indent)}}`;
      case 'objectcomprehension':
        return `{${this.term(t.key, TOP, indent)}: ${this.term(t.value, TOP, indent)} | ${this.compBody(t.body, indent)}}`;
      case 'call': {
        const name = operatorName(t.operator);
        const infix = INFIX[name];
        if (infix && t.args.length === 2) {
          const s = `${this.term(t.args[0], infix.level, indent)} ${infix.op} ${this.term(t.args[1], infix.level + 1, indent)}`;
          return infix.level < min ? `(${s})` : s;
        }
        if (name === 'internal.member_3' && t.args.length === 3) {
          const s = `${this.term(t.args[0], 1, indent)}, ${this.term(t.args[1], 1, indent)} in ${this.term(t.args[2], 1, indent)}`;
          return top ? s : `(${s})`;
        }
        return `${this.term(t.operator, TOP, indent)}(${t.args.map((a) => this.term(a, 0, indent)).join(', ')})`;
      }
    }
  }

  private compBody(body: Body, indent: number): string {
    return body.map((e) => this.expr(e, indent)).join('; ');
  }

  /** One line, or one item per line when the literal spanned lines in the source. */
  private collection(open: string, close: string, items: string[], multiline: boolean, indent: number): string {
    if (!multiline || items.length === 0) return `${open}${items.join(', ')}${close}`;
    const pad = '\t'.repeat(indent + 1);
    return `${open}\n${items.map((i) => `${pad}${i},`).join('\n')}\n${'\t'.repeat(indent)}${close}`;
  }
}

/** Formats a parsed module; `text` is its source (blank lines between expressions are kept). */
export function formatModule(module: Module, text: string, options: FormatOptions = {}): string {
  return new Printer(module, text).print(options.regoV1 === true);
}
