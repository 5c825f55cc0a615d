// Recursive-descent parser for Rego v1 (OPA 1.x default syntax). The grammar, operator precedence and
// error wording follow OPA's ast/parser.go so OPA's documentation and error messages carry over.
import { RegoError, RegoErrors } from '../errors.ts';
import { isGround } from './ground.ts';
import { parseErrorDetails } from './error-details.ts';
import { lex, type Token, type TokenKind } from './lexer.ts';
import type {
  Body,
  CallTerm,
  Expr,
  ExprTerms,
  Head,
  Import,
  Location,
  Package,
  RefTerm,
  Rule,
  StringTerm,
  TemplatePart,
  TemplateStringTerm,
  Term,
  VarTerm,
  With,
  Comment,
} from './types.ts';

/** Words reserved in Rego v1: never variables or rule names. */
export const REGO_KEYWORDS: ReadonlySet<string> = new Set([
  'as',
  'default',
  'else',
  'every',
  'false',
  'if',
  'import',
  'in',
  'not',
  'null',
  'package',
  'some',
  'true',
  'with',
  'contains',
]);

/** The future keywords `import future.keywords` brings into a Rego v0 module. */
export const FUTURE_KEYWORDS: readonly string[] = ['in', 'every', 'if', 'contains'];

/**
 * Words reserved in Rego v0: the v1 keywords `in`, `every`, `if` and `contains` are "future keywords" there,
 * reserved only in a module that imports them (`import future.keywords[.x]`) or `rego.v1`.
 */
export const REGO_V0_KEYWORDS: ReadonlySet<string> = new Set(
  [...REGO_KEYWORDS].filter((k) => !FUTURE_KEYWORDS.includes(k)),
);

/** Terms a ref may start from after parentheses (OPA's parseRef head check). */
const PARENTHESISED_REF_HEADS: ReadonlySet<string> = new Set([
  'var',
  'array',
  'object',
  'set',
  'arraycomprehension',
  'setcomprehension',
  'objectcomprehension',
  'call',
]);

/** Root documents: a bare `input`/`data` var is a reference (OPA's RootDocumentNames). */
const ROOT_DOCUMENTS = new Set(['input', 'data']);

/**
 * Limit on nested parser calls, counted where OPA's parser counts them (enter() in parseBody, the infix levels,
 * parseTerm, arrays, sets/objects and refs/calls), refused with OPA's error text (ErrMaxParsingRecursionDepthExceeded).
 * OPA allows 100000 (DefaultMaxParsingRecursionDepth) on Go's growable stacks; this recursive descent would
 * overflow the fixed JavaScript stack long before, so the limit is one every nesting form stays well within.
 */
export const MAX_NESTING_DEPTH = 1000;

/** OPA's parse error when its recursion limit is exceeded (v1/ast/parser.go). */
export const MAX_DEPTH_MESSAGE = 'max parsing recursion depth exceeded';

const RELATION_OPS: Partial<Record<TokenKind, string>> = {
  '==': 'equal',
  '!=': 'neq',
  '<': 'lt',
  '<=': 'lte',
  '>': 'gt',
  '>=': 'gte',
};
const ARITH_OPS: Partial<Record<TokenKind, string>> = { '+': 'plus', '-': 'minus' };
const FACTOR_OPS: Partial<Record<TokenKind, string>> = { '*': 'mul', '/': 'div', '%': 'rem' };

/** OPA's token names, used in `unexpected X token` messages. */
const TOKEN_NAMES: Partial<Record<TokenKind, string>> = {
  ident: 'identifier',
  number: 'number',
  string: 'string',
  rawstring: 'string',
  templatepart: 'template-string-part',
  templateend: 'template-string-end',
  eof: 'eof',
  ':=': 'assign',
  '=': 'eq',
  '==': 'equal',
  '!=': 'neq',
  '<': 'lt',
  '<=': 'lte',
  '>': 'gt',
  '>=': 'gte',
  '+': 'plus',
  '-': 'minus',
  '*': 'mul',
  '/': 'div',
  '%': 'rem',
  '|': 'or',
  '&': 'and',
};

interface CachedTerm {
  term?: Term;
  error?: ParseFailure;
  end: number;
  /** The wildcard count after the term: a reuse continues from it, as OPA's cache restores its post-term state. */
  wildcards?: number;
}

/**
 * The errors of a failed parse, with the token where the parser stopped: OPA's callers that see a nil result
 * add their own error about the token they are left at (`unexpected eof token: expected rule value term …`).
 */
export class ParseFailure extends RegoErrors {
  constructor(
    errors: RegoError[],
    /** Index of the current token when the parse failed. */
    readonly at: number,
    /**
     * OPA's callers see a result here, so they add no error of their own: a binary operator whose right operand
     * failed (OPA keeps the left one), or one of our own refusals (the nesting limit, operator comprehension heads).
     */
    readonly settled = false,
  ) {
    super(errors);
  }
}

/**
 * How a rule was written, for the checks OPA's parseModule makes once the whole file has parsed (CheckRegoV1):
 * which keywords its declaration used and which parts the parser filled in.
 */
export interface RuleSyntax {
  if: boolean;
  contains: boolean;
  /** No body was written (OPA's generatedBody). */
  generatedBody: boolean;
  /** No value was written and none is implied (OPA's generatedValue on a body-less `a.b.c`). */
  generatedValue: boolean;
}

/** A top-level statement as OPA's Parse loop reads it; `body` is a query that parseModule reads as a rule. */
export type Statement =
  | { kind: 'package'; pkg: Package }
  | { kind: 'import'; imp: Import }
  | { kind: 'rules'; rules: Rule[] }
  | { kind: 'body'; body: Body };

/** Literal terms a template-string expression may be folded into (OPA: String, Number, Boolean, Null). */
const SCALAR_TYPES: ReadonlySet<Term['type']> = new Set(['string', 'number', 'boolean', 'null']);

export class Parser {
  private pos = 0;
  private depth = 0;
  private wildcards = 0;
  private readonly tokens: Token[];
  readonly comments: Comment[];
  /** parseTerm results by start position: keeps backtracking over nested `{`/`[` linear (OPA does the same). */
  private readonly termCache = new Map<number, CachedTerm>();
  /** The reserved words in force; a v0 module gains the future keywords it imports. */
  private keywords: Set<string>;
  /** The version the module is read as (OPA's parser option, which imports do not change). */
  private readonly readAs: 0 | 1;
  /**
   * Errors OPA's parser records without giving up on the statement (an import it refuses, `contains` on a
   * function head, a `with` target that is no ref): once the statement ends, parsing stops (OPA's Parse loop
   * breaks at the next statement that is not a package).
   */
  private soft: RegoError[] = [];
  /** How each rule was written (see RuleSyntax). */
  readonly syntax = new WeakMap<Rule, RuleSyntax>();

  constructor(
    readonly file: string,
    readonly text: string,
    /** The module's Rego version; `import rego.v1` switches a v0 module to v1 (OPA's RegoV0CompatV1). */
    public regoVersion: 0 | 1 = 1,
    /** OPA's `template_strings` capabilities feature: without it `$"..."` is a parse error. */
    private readonly templateStrings = true,
  ) {
    this.keywords = new Set(regoVersion === 0 ? REGO_V0_KEYWORDS : REGO_KEYWORDS);
    this.readAs = regoVersion;
    const lexed = lex(file, text);
    this.tokens = lexed.tokens;
    this.comments = lexed.comments;
  }

  // ---------------------------------------------------------------- token helpers

  private get tok(): Token {
    return this.tokens[this.pos];
  }

  /** Current token kind (a method so TypeScript does not narrow it across advance()). */
  private kind(): TokenKind {
    return this.tokens[this.pos].kind;
  }

  private advance(): Token {
    const t = this.tokens[this.pos];
    // The parser never steps past the end, nor past an illegal token (where the tokens end too).
    if (t.kind !== 'eof' && t.kind !== 'illegal') this.pos++;
    return t;
  }

  private isKeyword(t: Token, word: string): boolean {
    return t.kind === 'ident' && t.text === word && this.keywords.has(word);
  }

  /** Reserve more words (future keyword imports; `rego.v1`). Cached terms may have read them as vars. */
  private reserve(words: readonly string[]): void {
    for (const w of words) this.keywords.add(w);
    // OPA's scanner: importing `every` also imports `in`, which every's `x in xs` needs (Scanner.AddKeyword).
    if (words.includes('every')) this.keywords.add('in');
    this.termCache.clear();
  }

  private loc(t: Token): Location {
    return { file: this.file, row: t.row, col: t.col, offset: t.offset, text: t.text };
  }

  /** Location from `start` to the end of the last consumed token. */
  private span(start: Token): Location {
    const last = this.tokens[Math.max(0, this.pos - 1)];
    const end = Math.max(last.end, start.end);
    return {
      file: this.file,
      row: start.row,
      col: start.col,
      offset: start.offset,
      text: this.text.slice(start.offset, end),
    };
  }

  /** A parse error at `t`, with OPA's detail lines (the source line and a caret). */
  errorAt(t: Token | Location, message: string): RegoError {
    const loc: Location = 'kind' in t ? this.loc(t) : t;
    return new RegoError(
      'rego_parse_error',
      message,
      { file: loc.file, row: loc.row, col: loc.col, offset: loc.offset },
      parseErrorDetails(this.text, loc.offset ?? 0),
    );
  }

  /**
   * The failure for `errors`, after the errors recorded so far in the statement and, when the parser stands on
   * an illegal token, OPA's scanner errors for it (recorded when the scanner reached it, before the parser's).
   */
  private failure(errors: RegoError[]): ParseFailure {
    const scanned = this.tok.kind === 'illegal' ? (this.tok.scanErrors ?? []) : [];
    return new ParseFailure([...this.soft, ...scanned, ...errors], this.pos);
  }

  error(t: Token | Location, message: string): never {
    throw this.failure([this.errorAt(t, message)]);
  }

  /** An error of our own making that OPA's callers would not add to (see ParseFailure.settled). */
  private refuse(t: Token | Location, message: string): never {
    throw new ParseFailure(this.failure([this.errorAt(t, message)]).errors, this.pos, true);
  }

  /** Record an error and go on with the statement (OPA's p.error where the caller does not return nil). */
  private softError(t: Token | Location, message: string): void {
    this.soft.push(this.errorAt(t, message));
  }

  private describe(t: Token): string {
    if (t.kind === 'ident' && this.keywords.has(t.text)) return `${t.text} keyword`;
    return `${TOKEN_NAMES[t.kind] ?? t.kind} token`;
  }

  /** OPA's p.illegal: "unexpected X token[: note]", or just "illegal token" on a token the scanner refused. */
  private unexpectedText(t: Token, note?: string): string {
    if (t.kind === 'illegal') return 'illegal token';
    return `unexpected ${this.describe(t)}${note ? `: ${note}` : ''}`;
  }

  private unexpected(t: Token, note?: string): never {
    this.error(t, this.unexpectedText(t, note));
  }

  /**
   * Run `fn`; when it fails, add the error OPA's caller adds on a nil result, `message(token)` at the token
   * where the parse stopped (parseHead's "expected rule value term", parseTemplateString's "invalid …").
   */
  private orElse<T>(fn: () => T, message: (t: Token) => string): T {
    try {
      return fn();
    } catch (e) {
      if (!(e instanceof ParseFailure) || e.settled) throw e;
      const t = this.tokens[e.at];
      throw new ParseFailure([...e.errors, this.errorAt(t, message(t))], e.at);
    }
  }

  private expect(kind: TokenKind, note?: string): Token {
    if (this.kind() !== kind) this.unexpected(this.tok, note ?? `expected ${kind}`);
    return this.advance();
  }

  private enter(): void {
    if (++this.depth > MAX_NESTING_DEPTH) {
      this.refuse(this.tok, MAX_DEPTH_MESSAGE);
    }
  }

  private leave(): void {
    this.depth--;
  }

  /** The right operand of a binary operator: when it fails, OPA's parseTerm* functions return the left one. */
  private rightOperand(fn: () => Term): Term {
    try {
      return fn();
    } catch (e) {
      if (e instanceof ParseFailure && !e.settled) throw new ParseFailure(e.errors, e.at, true);
      throw e;
    }
  }

  /** Run `fn`; on a parse error restore the position (and the errors recorded meanwhile) and return undefined. */
  private attempt<T>(fn: () => T): T | undefined {
    const saved = this.pos;
    const depth = this.depth;
    const soft = this.soft.length;
    try {
      return fn();
    } catch (e) {
      if (!(e instanceof RegoErrors)) throw e;
      this.pos = saved;
      this.depth = depth;
      this.soft.length = soft;
      return undefined;
    }
  }

  // ---------------------------------------------------------------- term construction

  private varTerm(name: string, t: Token): VarTerm {
    return { type: 'var', value: name, location: this.loc(t) };
  }

  private opRef(names: string[], t: Token): RefTerm {
    const loc = this.loc(t);
    const value: Term[] = [{ type: 'var', value: names[0], location: loc }];
    for (const n of names.slice(1)) value.push({ type: 'string', value: n, location: loc });
    return { type: 'ref', value, location: loc };
  }

  private binary(op: string[], opTok: Token, lhs: Term, rhs: Term, start: Token): CallTerm {
    return { type: 'call', operator: this.opRef(op, opTok), args: [lhs, rhs], location: this.span(start) };
  }

  // ---------------------------------------------------------------- terms with infix operators

  /** Full term with infix operators; `keyVal` allows the `k, v in xs` form (not inside lists). */
  parseTermInfix(keyVal = true): Term {
    this.enter();
    try {
      const start = this.tok;
      let lhs = this.parseRelation();
      if (keyVal && this.kind() === ',') {
        const three = this.attempt(() => {
          this.advance();
          const mhs = this.parseRelation();
          if (!this.isKeyword(this.tok, 'in')) this.unexpected(this.tok, 'expected in');
          const opTok = this.advance();
          const rhs = this.parseRelation();
          const call: CallTerm = {
            type: 'call',
            operator: this.opRef(['internal', 'member_3'], opTok),
            args: [lhs, mhs, rhs],
            location: this.span(start),
          };
          return call;
        });
        if (three) lhs = three;
      }
      while (this.isKeyword(this.tok, 'in')) {
        const opTok = this.advance();
        const rhs = this.rightOperand(() => this.parseRelation());
        lhs = this.binary(['internal', 'member_2'], opTok, lhs, rhs, start);
      }
      return lhs;
    } finally {
      this.leave();
    }
  }

  /** `withOr` false stops operands at `|` (a comprehension head written with operators). */
  private parseRelation(withOr = true): Term {
    this.enter();
    try {
      const start = this.tok;
      const operand = (): Term => (withOr ? this.parseOr() : this.parseAnd());
      let lhs = operand();
      for (let op = RELATION_OPS[this.kind()]; op; op = RELATION_OPS[this.kind()]) {
        const opTok = this.advance();
        lhs = this.binary([op], opTok, lhs, this.rightOperand(operand), start);
      }
      return lhs;
    } finally {
      this.leave();
    }
  }

  private parseOr(): Term {
    this.enter();
    try {
      const start = this.tok;
      let lhs = this.parseAnd();
      while (this.kind() === '|') {
        const opTok = this.advance();
        lhs = this.binary(
          ['or'],
          opTok,
          lhs,
          this.rightOperand(() => this.parseAnd()),
          start,
        );
      }
      return lhs;
    } finally {
      this.leave();
    }
  }

  private parseAnd(): Term {
    this.enter();
    try {
      const start = this.tok;
      let lhs = this.parseArith();
      while (this.kind() === '&') {
        const opTok = this.advance();
        lhs = this.binary(
          ['and'],
          opTok,
          lhs,
          this.rightOperand(() => this.parseArith()),
          start,
        );
      }
      return lhs;
    } finally {
      this.leave();
    }
  }

  private parseArith(): Term {
    this.enter();
    try {
      const start = this.tok;
      let lhs = this.parseFactor();
      for (let op = ARITH_OPS[this.kind()]; op; op = ARITH_OPS[this.kind()]) {
        const opTok = this.advance();
        lhs = this.binary(
          [op],
          opTok,
          lhs,
          this.rightOperand(() => this.parseFactor()),
          start,
        );
      }
      return lhs;
    } finally {
      this.leave();
    }
  }

  private parseFactor(): Term {
    this.enter();
    try {
      const start = this.tok;
      let lhs = this.parseTerm();
      for (let op = FACTOR_OPS[this.kind()]; op; op = FACTOR_OPS[this.kind()]) {
        const opTok = this.advance();
        lhs = this.binary(
          [op],
          opTok,
          lhs,
          this.rightOperand(() => this.parseTerm()),
          start,
        );
      }
      return lhs;
    } finally {
      this.leave();
    }
  }

  // ---------------------------------------------------------------- single terms

  parseTerm(): Term {
    const startPos = this.pos;
    const cached = this.termCache.get(startPos);
    if (cached) {
      if (cached.error) throw cached.error;
      this.pos = cached.end;
      if (cached.wildcards !== undefined) this.wildcards = cached.wildcards;
      return cached.term as Term;
    }
    this.enter();
    const soft = this.soft.length;
    try {
      const term = this.parseTermUncached();
      // A term whose parse recorded an error is not reused: the error belongs to this reading.
      if (this.soft.length === soft) this.termCache.set(startPos, { term, end: this.pos, wildcards: this.wildcards });
      return term;
    } catch (e) {
      if (e instanceof ParseFailure && this.soft.length === 0)
        this.termCache.set(startPos, { error: e, end: startPos });
      throw e;
    } finally {
      this.leave();
    }
  }

  /**
   * OPA's parseNumber: a `-` and then a `.` may come before the number token, with whitespace between them
   * (`- . 5` is `-.5`); the literal keeps the text as written, so `.5` stays `.5`. Leading zeros are only
   * refused without a `.` before them, and a second fraction (`.5.3`) is not a number.
   */
  private parseNumber(start: Token, sign: '' | '-'): Term {
    let prefix: string = sign;
    if (this.kind() === '.') {
      prefix += '.';
      this.advance();
      if (this.kind() !== 'number') this.unexpected(this.tok, 'expected number');
    }
    const n = this.tok;
    if (n.invalid && !prefix.endsWith('.')) throw this.failure([n.invalid]);
    if (prefix.endsWith('.') && n.text.includes('.')) this.unexpected(n, 'invalid float');
    this.advance();
    return { type: 'number', value: prefix + n.text, location: prefix ? this.span(start) : this.loc(n) };
  }

  private parseTermUncached(): Term {
    const t = this.tok;
    switch (t.kind) {
      case 'ident': {
        if (t.text === 'null') {
          this.advance();
          return { type: 'null', location: this.loc(t) };
        }
        if (t.text === 'true' || t.text === 'false') {
          this.advance();
          return { type: 'boolean', value: t.text === 'true', location: this.loc(t) };
        }
        // `contains` is only special in rule heads; elsewhere it names a var/function (OPA does the same).
        if (this.keywords.has(t.text) && t.text !== 'contains') this.unexpected(t);
        this.advance();
        return this.finishTerm(this.parseVarToken(t), t);
      }
      case 'number':
      case '.':
        return this.parseNumber(t, '');
      case '-': {
        this.advance();
        const n = this.tok;
        if (n.kind === 'number' || n.kind === '.') return this.parseNumber(t, '-');
        return this.unexpected(n, 'expected number');
      }
      case 'string':
        if (t.invalid) throw this.failure([t.invalid]);
        this.advance();
        return { type: 'string', value: t.value, location: this.loc(t) };
      case 'rawstring':
        this.advance();
        return { type: 'string', value: t.value, raw: true, location: this.loc(t) };
      case 'templatepart':
      case 'templateend':
        return this.parseTemplateString();
      case '[':
        return this.finishTerm(this.parseArray(), t);
      case '{':
        return this.finishTerm(this.parseSetOrObject(), t);
      case '(': {
        this.advance();
        const inner = this.parseTermInfix(true);
        if (this.kind() !== ')') this.error(this.tok, 'non-terminated expression');
        this.advance();
        // A ref may continue a parenthesised term, `(a | b)[_]`, when its value can be indexed; OPA's
        // parseTermFinish/parseRef refuse scalars and refs as the head (`(input.x)[0]`).
        const next = this.tok;
        if (!next.ws && (next.kind === '.' || next.kind === '[' || next.kind === '(')) {
          if (!PARENTHESISED_REF_HEADS.has(inner.type)) this.error(t, `illegal ref (head cannot be ${inner.type})`);
          return this.parseRef(inner, t);
        }
        return inner;
      }
      default:
        this.unexpected(t);
    }
  }

  /**
   * `$"text {expr} text"` or the raw `` $`...` ``, as OPA's parseTemplateString reads it: text pieces become
   * string parts (empty ones dropped), each `{expr}` an expression part, except that a lone scalar literal
   * with no comment before it is kept as that term (opa fmt then writes it inline).
   */
  private parseTemplateString(): TemplateStringTerm {
    const first = this.tok;
    if (!this.templateStrings) this.error(first, 'template strings are not supported by current capabilities');
    const parts: TemplatePart[] = [];
    for (;;) {
      // OPA's parser reads the scanner's next piece after each expression (templateStringPartToStringLiteral).
      if (this.kind() !== 'templatepart' && this.kind() !== 'templateend')
        this.error(this.tok, 'expected template-string part');
      if (this.tok.invalid) throw this.failure([this.tok.invalid]);
      const piece = this.advance();
      if (piece.value !== '') parts.push({ type: 'string', value: piece.value, location: this.loc(piece) });
      if (piece.kind === 'templateend') break;
      // OPA counts the comments its scanner steps over between `{` and the expression's first token: with
      // one there, a lone scalar stays an expression (a comment after the scalar does not count).
      const open = piece.end;
      const first = this.tok.offset;
      const expr = this.orElse(
        () => this.parseLiteral(),
        () => 'invalid template-string expression',
      );
      const x = expr.terms;
      const where = expr.location ?? this.loc(piece);
      if (expr.negated) this.error(where, "unexpected negation ('not') in template-string expression");
      if (x.type === 'call' && x.operator.value.length === 1 && x.operator.value[0].type === 'var') {
        const op = x.operator.value[0].value;
        if (op === 'eq') this.error(where, "unexpected unification ('=') in template-string expression");
        if (op === 'assign') this.error(where, "unexpected assignment (':=') in template-string expression");
      }
      if (x.type === 'every') this.error(where, "unexpected 'every' in template-string expression");
      if (x.type === 'somedecl' || x.type === 'somein')
        this.error(where, "unexpected 'some' in template-string expression");
      if (this.kind() !== '}') this.error(this.tok, 'expected } to end template string expression');
      const commented = this.comments.some((c) => (c.location.offset ?? 0) >= open && (c.location.offset ?? 0) < first);
      const scalar = x.type === 'term' && !commented && SCALAR_TYPES.has(x.term.type) ? x.term : undefined;
      parts.push(scalar ?? expr);
      this.advance(); // `}`; the template string goes on with the next piece
    }
    return { type: 'templatestring', multiLine: first.multiLine === true, parts, location: this.span(first) };
  }

  private parseVarToken(t: Token): VarTerm {
    // Each `_` is a distinct variable: give it a unique name OPA-style ($0, $1, …).
    if (t.text === '_') return this.wildcard({ location: this.loc(t) });
    return this.varTerm(t.text, t);
  }

  private wildcard(at: { location?: Location }): VarTerm {
    return {
      type: 'var',
      value: `$${this.wildcards++}`,
      wildcard: true,
      ...(at.location ? { location: at.location } : {}),
    };
  }

  /** Ref/call continuation: `.x`, `[t]`, `(args)` directly adjacent to the head (no whitespace). */
  private finishTerm(head: Term, start: Token): Term {
    const next = this.tok;
    if (!next.ws && (next.kind === '.' || next.kind === '[' || next.kind === '(')) {
      return this.parseRef(head, start);
    }
    if (head.type === 'var' && ROOT_DOCUMENTS.has(head.value)) {
      return { type: 'ref', value: [head], location: head.location };
    }
    return head;
  }

  private parseRef(head: Term, start: Token): Term {
    this.enter();
    try {
      let parts: Term[] = [head];
      for (;;) {
        const t = this.tok;
        if (t.ws) break;
        if (t.kind === '.') {
          this.advance();
          const name = this.tok;
          if (name.kind !== 'ident' || name.ws) this.unexpected(name, 'expected identifier');
          this.advance();
          parts.push({ type: 'string', value: name.text, location: this.loc(name) });
        } else if (t.kind === '[') {
          this.advance();
          const key = this.parseTermInfix(true);
          if (this.kind() !== ']') this.unexpected(this.tok, 'expected ]');
          this.advance();
          parts.push(key);
        } else if (t.kind === '(') {
          if (parts.length === 1 && parts[0].type !== 'var')
            this.error(t, `illegal call (operator cannot be ${parts[0].type})`);
          const operator: RefTerm = { type: 'ref', value: parts, location: this.span(start) };
          this.advance();
          const args = this.parseTermList(')');
          this.advance();
          if (args.length === 0 && parts.length === 1 && parts[0].type === 'var' && parts[0].value === 'set') {
            return { type: 'set', value: [], location: this.span(start) };
          }
          const call: CallTerm = { type: 'call', operator, args, location: this.span(start) };
          const after = this.tok;
          if (!after.ws && (after.kind === '.' || after.kind === '[')) {
            parts = [call];
            continue;
          }
          return call;
        } else {
          break;
        }
      }
      if (parts.length === 1) return parts[0];
      return { type: 'ref', value: parts, location: this.span(start) };
    } finally {
      this.leave();
    }
  }

  /** Comma-separated terms up to (not consuming) `end`; a trailing comma is allowed. */
  private parseTermList(end: TokenKind): Term[] {
    const out: Term[] = [];
    if (this.kind() === end) return out;
    for (;;) {
      out.push(this.parseTermInfix(false));
      if (this.kind() === end) return out;
      if (this.kind() !== ',') this.unexpected(this.tok, `expected "," or "${end}"`);
      this.advance();
      if (this.kind() === end) return out;
    }
  }

  private parseArray(): Term {
    this.enter();
    try {
      const open = this.advance(); // [
      if (this.kind() === ']') {
        this.advance();
        return { type: 'array', value: [], location: this.span(open) };
      }
      let potentialComprehension = true;
      if (this.kind() === ',') {
        potentialComprehension = false;
        this.advance();
      }
      const s = this.pos;
      // A single term first: `[x | body]` is a comprehension, not `or(x, body…)` (OPA resolves it the same way).
      const head = this.parseTerm();
      if (this.kind() === '|' && potentialComprehension) {
        this.advance();
        const body = this.attempt(() => this.parseBody(']'));
        if (body) {
          this.advance();
          return { type: 'arraycomprehension', term: head, body, location: this.span(open) };
        }
      }
      this.pos = s;
      try {
        const items = this.parseTermList(']');
        this.advance();
        return { type: 'array', value: items, location: this.span(open) };
      } catch (e) {
        if (!potentialComprehension) throw e;
        this.refuseOperatorComprehension(s, ']', e);
      }
    } finally {
      this.leave();
    }
  }

  /**
   * A comprehension whose head is written with operators, `[x * 2 | some x in xs]`. OPA tries a
   * comprehension only when the head is a single term (to settle `[a | b]`), so there `x * 2 | …` becomes
   * the set union `or(x * 2, …)` and the literal fails to parse (OPA issue #4215). We refuse it too — a policy
   * that builds here must build with `opa build` — but with an error that says how to write it: parenthesise
   * the head, which makes it one term. Called only after the literal reading failed, so every program OPA
   * accepts keeps OPA's meaning (`[s1 - s2 | s3]` stays a one-element array). When no head followed by `|`
   * parses, the literal's error stands; when the body fails, its error is the one to report.
   */
  private refuseOperatorComprehension(start: number, end: ']' | '}', literalError: unknown): never {
    if (!(literalError instanceof RegoErrors)) throw literalError;
    this.pos = start;
    const headStart = this.tok;
    const head = this.attempt(() => {
      const h = this.parseRelation(false);
      if (this.kind() !== '|') this.unexpected(this.tok);
      return h;
    });
    if (!head) throw literalError;
    this.advance(); // |
    this.parseBody(end);
    this.refuse(
      headStart,
      'comprehension head written with operators: OPA reads `|` here as set union (OPA issue #4215); wrap the head in parentheses, e.g. `[(x * 2) | some x in xs]`',
    );
  }

  private parseSetOrObject(): Term {
    this.enter();
    try {
      const open = this.advance(); // {
      if (this.kind() === '}') {
        this.advance();
        return { type: 'object', value: [], location: this.span(open) };
      }
      let potentialComprehension = true;
      if (this.kind() === ',') {
        potentialComprehension = false;
        this.advance();
      }
      const s = this.pos;
      try {
        return this.parseSetOrObjectItems(open, s, potentialComprehension);
      } catch (e) {
        if (!potentialComprehension) throw e;
        this.refuseOperatorComprehension(s, '}', e);
      }
    } finally {
      this.leave();
    }
  }

  private parseSetOrObjectItems(open: Token, s: number, potentialComprehension: boolean): Term {
    let head = this.parseTerm();
    switch (this.kind()) {
      case '|':
        if (potentialComprehension) {
          this.advance();
          const body = this.attempt(() => this.parseBody('}'));
          if (body) {
            this.advance();
            return { type: 'setcomprehension', term: head, body, location: this.span(open) };
          }
          this.pos = s;
          return this.finishSet(open);
        }
        break;
      case '}':
      case ',':
        this.pos = s;
        return this.finishSet(open);
      case ':':
        return this.parseObject(open, head, potentialComprehension);
    }
    this.pos = s;
    head = this.parseTermInfix(false);
    if (this.kind() === '}' || this.kind() === ',') {
      this.pos = s;
      return this.finishSet(open);
    }
    if (this.kind() === ':') return this.parseObject(open, head, potentialComprehension);
    this.unexpected(this.tok, 'non-terminated set');
  }

  private finishSet(open: Token): Term {
    const items = this.parseTermList('}');
    this.advance();
    return { type: 'set', value: items, location: this.span(open) };
  }

  private parseObject(open: Token, key: Term, potentialComprehension: boolean): Term {
    this.advance(); // :
    const s = this.pos;
    const v = this.parseTerm();
    if (potentialComprehension && this.kind() === '|') {
      this.advance();
      const body = this.attempt(() => this.parseBody('}'));
      if (body) {
        this.advance();
        return { type: 'objectcomprehension', key, value: v, body, location: this.span(open) };
      }
    }
    this.pos = s;
    try {
      const value = this.parseTermInfix(false);
      const pairs: [Term, Term][] = [[key, value]];
      for (;;) {
        if (this.kind() === '}') break;
        if (this.kind() !== ',') this.unexpected(this.tok, 'non-terminated object');
        this.advance();
        if (this.kind() === '}') break;
        const k = this.parseTermInfix(false);
        if (this.kind() !== ':') this.unexpected(this.tok, 'expected ":"');
        this.advance();
        pairs.push([k, this.parseTermInfix(false)]);
      }
      this.advance();
      return { type: 'object', value: pairs, location: this.span(open) };
    } catch (e) {
      if (!potentialComprehension) throw e;
      this.refuseOperatorComprehension(s, '}', e);
    }
  }

  // ---------------------------------------------------------------- bodies and expressions

  /** Expressions separated by `;` or newlines, up to (not consuming) `end`. */
  parseBody(end: TokenKind): Body {
    this.enter();
    try {
      if (this.kind() === end) this.error(this.tok, 'found empty body');
      const body: Body = [];
      for (;;) {
        const expr = this.parseLiteral();
        expr.index = body.length;
        body.push(expr);
        if (this.kind() === ';') {
          this.advance();
          continue;
        }
        if (this.kind() === end) return body;
        if (!this.tok.nl) {
          // OPA does not pile this error on one already recorded in the statement.
          if (this.soft.length) throw this.failure([]);
          this.unexpected(this.tok, `expected \\n or ; or ${end === 'eof' ? 'eof' : end}`);
        }
      }
    } finally {
      this.leave();
    }
  }

  private parseLiteral(): Expr {
    const start = this.tok;
    if (this.isKeyword(start, 'some')) {
      // OPA takes `with` on `some x in xs`, not on a bare `some x` declaration.
      const some = this.parseSome();
      return some.terms.type === 'somein' ? this.withClauses(some) : some;
    }
    if (this.isKeyword(start, 'every')) return this.withClauses(this.parseEvery());
    let negated = false;
    if (this.isKeyword(start, 'not')) {
      this.advance();
      negated = true;
    }
    const terms = this.parseExprTerms();
    const expr: Expr = { index: 0, negated, terms, with: [], location: this.span(start) };
    return this.withClauses(expr);
  }

  private withClauses(expr: Expr): Expr {
    while (this.isKeyword(this.tok, 'with')) {
      // OPA's parseWith: the target is one term starting with a name; one that is no ref is refused, but the
      // clause is still read.
      const w = this.advance();
      const targetTok = this.tok;
      if (targetTok.kind !== 'ident' || this.keywords.has(targetTok.text)) this.unexpected(targetTok, 'expected ident');
      const term = this.parseTerm();
      const target: RefTerm =
        term.type === 'ref'
          ? term
          : { type: 'ref', value: [term], ...(term.location ? { location: term.location } : {}) };
      if (term.type !== 'ref' && term.type !== 'var')
        this.softError(this.tok, this.unexpectedText(this.tok, 'expected with target path'));
      if (!this.isKeyword(this.tok, 'as')) this.unexpected(this.tok, 'expected as keyword');
      this.advance();
      const value = this.parseTermInfix(true);
      const clause: With = { target, value, location: this.span(w) };
      expr.with.push(clause);
      if (expr.location)
        expr.location = {
          ...expr.location,
          text: this.text.slice(expr.location.offset ?? 0, this.tokens[this.pos - 1].end),
        };
    }
    return expr;
  }

  private parseExprTerms(): ExprTerms {
    const lhs = this.parseTermInfix(true);
    const t = this.tok;
    if (t.kind === ':=' || t.kind === '=') {
      this.advance();
      const rhs = this.parseTermInfix(true);
      return { type: 'call', operator: this.opRef([t.kind === ':=' ? 'assign' : 'eq'], t), args: [lhs, rhs] };
    }
    if (lhs.type === 'call') return { type: 'call', operator: lhs.operator, args: lhs.args };
    return { type: 'term', term: lhs };
  }

  private isMember(t: Term | undefined, name: 'member_2' | 'member_3'): boolean {
    if (!t) return false;
    if (t.type !== 'call') return false;
    const op = t.operator.value;
    return (
      op.length === 2 &&
      op[0].type === 'var' &&
      op[0].value === 'internal' &&
      op[1].type === 'string' &&
      op[1].value === name
    );
  }

  private parseSome(): Expr {
    const start = this.advance(); // some
    const s = this.pos;
    const term = this.attempt(() => this.parseTermInfix(true));
    if (term?.type === 'call' && this.isMember(term, 'member_2')) {
      return {
        index: 0,
        negated: false,
        terms: { type: 'somein', value: term.args[0], domain: term.args[1] },
        with: [],
        location: this.span(start),
      };
    }
    if (term?.type === 'call' && this.isMember(term, 'member_3')) {
      return {
        index: 0,
        negated: false,
        terms: { type: 'somein', key: term.args[0], value: term.args[1], domain: term.args[2] },
        with: [],
        location: this.span(start),
      };
    }
    this.pos = s;
    const vars: VarTerm[] = [];
    for (;;) {
      const t = this.tok;
      if (t.kind !== 'ident' || this.keywords.has(t.text)) this.unexpected(t, 'expected var');
      this.advance();
      vars.push(this.parseVarToken(t));
      if (this.kind() !== ',') break;
      this.advance();
    }
    return { index: 0, negated: false, terms: { type: 'somedecl', vars }, with: [], location: this.span(start) };
  }

  private parseEvery(): Expr {
    const start = this.advance(); // every
    const term = this.parseTermInfix(true);
    let key: Term | undefined;
    let value: Term;
    let domain: Term;
    if (term.type === 'call' && this.isMember(term, 'member_2')) {
      [value, domain] = term.args;
    } else if (term.type === 'call' && this.isMember(term, 'member_3')) {
      [key, value, domain] = term.args as [Term, Term, Term];
      if (key.type !== 'var') this.error(key.location ?? start, 'unexpected term: expected key to be a variable');
    } else {
      this.unexpected(this.tok, 'expected `x[, y] in xs { ... }` expression');
    }
    if (value.type !== 'var') this.error(value.location ?? start, 'unexpected term: expected value to be a variable');
    if (this.kind() !== '{') this.unexpected(this.tok, 'missing body');
    const body = this.parseBracedBody();
    return {
      index: 0,
      negated: false,
      terms: { type: 'every', ...(key ? { key } : {}), value, domain, body },
      with: [],
      location: this.span(start),
    };
  }

  private parseBracedBody(): Body {
    this.expect('{');
    const body = this.parseBody('}');
    this.advance();
    return body;
  }

  // ---------------------------------------------------------------- module level

  /**
   * The module's statements, read as OPA's Parse loop reads them: one after another (a line break between them
   * is not needed), stopping at the first that fails, or after a statement that recorded an error at the next
   * one that is not a package. Returns what parsed, the errors of the statement that stopped the loop (none
   * when the whole text parsed) and the index of the token the parser stopped at.
   */
  parseStatements(): { statements: Statement[]; errors: RegoError[]; stoppedAt: number } {
    const statements: Statement[] = [];
    while (!this.atEnd()) {
      const pending = this.soft.length > 0 && !this.isKeywordHere('package');
      // A token the scanner refused ends the parse once the scanner has reached it.
      if (pending || (this.tok.kind === 'illegal' && this.tok.scanErrors)) {
        return { statements, errors: this.failure([]).errors, stoppedAt: this.pos };
      }
      try {
        statements.push(this.parseStatement());
      } catch (e) {
        if (!(e instanceof ParseFailure)) throw e;
        return { statements, errors: e.errors, stoppedAt: e.at };
      }
    }
    return { statements, errors: this.soft.slice(), stoppedAt: this.pos };
  }

  private parseStatement(): Statement {
    if (this.isKeywordHere('package')) return { kind: 'package', pkg: this.parsePackage() };
    if (this.isKeywordHere('import')) return { kind: 'import', imp: this.parseImport() };
    return this.parseRuleStatement();
  }

  /** The path after `package` or `import`: one term (OPA's parseTerm), whose first token may be a keyword. */
  private parseStatementPath(): Term {
    const first = this.tok;
    if (first.kind !== 'ident') this.unexpected(first);
    this.advance();
    return this.finishTerm(this.varTerm(first.text, first), first);
  }

  parsePackage(): Package {
    const kw = this.advance(); // package
    const term = this.parseStatementPath();
    let head: Term;
    let rest: Term[] = [];
    if (term.type === 'var') head = term;
    else if (term.type === 'ref') [head, ...rest] = term.value;
    else this.unexpected(this.tok);
    if (head.type !== 'var') this.error(head.location ?? kw, `unexpected ${head.type} token: expecting var`);
    for (const t of rest)
      if (t.type !== 'string') this.error(t.location ?? kw, `unexpected ${t.type} token: expecting string`);
    const path: Term[] = [
      { type: 'var', value: 'data', ...(head.location ? { location: head.location } : {}) },
      { type: 'string', value: head.value, ...(head.location ? { location: head.location } : {}) },
      ...rest,
    ];
    return { path, location: this.span(kw) };
  }

  /**
   * `import path [as name]`, with OPA's checks (parseImport, then futureImport/regoV1Import): a path that is not
   * one, or starts elsewhere than data/input/future/rego, ends the parse; a refused `future`/`rego` import, or a
   * path ending in a keyword, is recorded and the parse stops after the statement.
   */
  parseImport(): Import {
    const kw = this.advance(); // import
    const term = this.parseStatementPath();
    if (term.type !== 'var' && term.type !== 'ref') this.error(this.tok, 'expected path');
    const path: RefTerm =
      term.type === 'ref'
        ? term
        : { type: 'ref', value: [term], ...(term.location ? { location: term.location } : {}) };
    const at = path.location ?? this.loc(kw);
    for (const t of path.value.slice(1)) {
      if (t.type !== 'string') this.error(t.location ?? at, `unexpected ${t.type} token: expecting string`);
    }
    const root = path.value[0];
    const rootName = root.type === 'var' ? root.value : '';
    if (!IMPORT_ROOTS.includes(rootName)) {
      this.error(
        at,
        `unexpected import path, must begin with one of: {${IMPORT_ROOTS.join(', ')}}, got: ${root.type === 'var' ? root.value : (root.location?.text ?? root.type)} (hint: if this is unexpected, try updating OPA)`,
      );
    }
    const names = path.value.slice(1).map((t) => (t as StringTerm).value);
    let alias: string | undefined;
    if (this.isKeyword(this.tok, 'as')) {
      this.advance();
      const a = this.tok;
      if (a.kind !== 'ident' || this.keywords.has(a.text) || a.text === '_') this.unexpected(a, 'expected var');
      if (this.parseTerm().type !== 'var') this.unexpected(this.tok, 'expected var');
      alias = a.text;
    } else if (names.length > 0 && rootName !== 'future') {
      const last = names[names.length - 1];
      if ((this.readAs === 0 ? REGO_V0_KEYWORDS : REGO_KEYWORDS).has(last)) {
        const t = path.value[path.value.length - 1];
        this.softError(t.location ?? at, `unexpected import path, must not end with a keyword, got: ${last}`);
      }
    }
    if (rootName === 'rego') {
      if (names.length !== 1 || names[0] !== 'v1') {
        this.softError(at, `invalid import \`${refString(path.value)}\`, must be \`rego.v1\``);
      } else if (this.readAs === 0) {
        // Read as v0, `import rego.v1` asks for v1 syntax (OPA's RegoV0CompatV1); read as v1 it changes nothing.
        if (alias !== undefined) this.softError(at, '`rego` imports cannot be aliased');
        else {
          this.regoVersion = 1;
          this.reserve([...REGO_KEYWORDS]);
        }
      }
    } else if (rootName === 'future') {
      if (names[0] !== 'keywords') this.softError(at, 'invalid import, must be `future.keywords`');
      else if (alias !== undefined) this.softError(at, '`future` imports cannot be aliased');
      else if (names.length === 2 && !FUTURE_KEYWORDS.includes(names[1])) {
        this.softError(at, `unexpected keyword, must be one of [${[...FUTURE_KEYWORDS].sort().join(' ')}]`);
      } else this.reserve(names.length === 2 ? [names[1]] : FUTURE_KEYWORDS);
    }
    return { path, ...(alias !== undefined ? { alias } : {}), location: this.span(kw) };
  }

  /**
   * A statement that is not a package or import, as OPA's parseRules reads it: rules when its head is followed by
   * `if`, `{` or `contains`; otherwise (a head with just a value, a bare ref or call, a statement that starts with
   * no name) a query, whose expression parseModule reads as a rule once the whole module has parsed.
   */
  private parseRuleStatement(): Statement {
    const start = this.tok;
    if (this.isKeyword(start, 'default')) {
      const name = this.tokens[this.pos + 1];
      if (name.kind === 'ident' && !this.keywords.has(name.text))
        return { kind: 'rules', rules: [this.parseDefault()] };
      return this.parseBodyStatement();
    }
    if (start.kind !== 'ident' || this.keywords.has(start.text)) return this.parseBodyStatement();
    const s = this.pos;
    const wildcards = this.wildcards;
    const head = this.parseHead(false);
    const hasIf = this.isKeyword(this.tok, 'if');
    if (!hasIf && head.kind !== 'multi' && this.kind() !== '{') {
      this.pos = s;
      this.wildcards = wildcards;
      return this.parseBodyStatement();
    }
    return { kind: 'rules', rules: this.parseRules(start, head, hasIf) };
  }

  /** A query statement: expressions joined by `;` (OPA's parseQuery with requireSemi). */
  private parseBodyStatement(): Statement {
    const body: Body = [];
    for (;;) {
      const expr = this.parseLiteral();
      expr.index = body.length;
      body.push(expr);
      if (this.kind() !== ';') return { kind: 'body', body };
      this.advance();
    }
  }

  /**
   * `default name[(args)] [:= value]`: OPA's parseRules returns it before any body, so what follows is a statement
   * of its own (`default allow if …` leaves `if …`, "unexpected if keyword"). A value that is not a constant, or
   * arguments that are not distinct vars, are refused with one error each (validateDefaultRuleValue/Args).
   */
  private parseDefault(): Rule {
    const start = this.advance(); // default
    const head = this.parseHead(true);
    const errors: RegoError[] = [];
    if (head.value === undefined) errors.push(this.errorAt(start, 'illegal default rule (must have a value)'));
    else {
      for (const kind of nonConstants(head.value)) {
        errors.push(this.errorAt(start, `illegal default rule (value cannot contain ${kind})`));
      }
    }
    if (errors.length === 0 && head.args?.length) {
      const seen = new Set<string>();
      for (const a of head.args) {
        if (a.type !== 'var') {
          errors.push(this.errorAt(start, `illegal default rule (arguments cannot contain ${a.type})`));
          continue;
        }
        if (seen.has(a.value))
          errors.push(this.errorAt(start, `illegal default rule (arguments cannot be repeated ${a.value})`));
        seen.add(a.value);
      }
    }
    if (errors.length) throw this.failure(errors);
    const loc = this.span(start);
    const rule: Rule = { default: true, head, body: [generatedTrue(loc)], location: loc };
    this.syntax.set(rule, { if: false, contains: false, generatedBody: false, generatedValue: false });
    return rule;
  }

  /** The rest of a rule statement after its head: the body (`if …`, `{ … }`, none after `contains`), else, chains. */
  private parseRules(start: Token, head: Head, hasIf: boolean): Rule[] {
    const usesContains = head.kind === 'multi';
    // A two-element head with no `if`, `contains` or value, `p[x] { … }`, `p.q { … }`, is a partial set (OPA's
    // parseRules, in v1 too: parseModule then asks for `contains` and `if`); `p[k] = v { … }` stays an object.
    if (!hasIf && !usesContains && !head.args && head.reference.length === 2 && !head.value) {
      head.key = head.reference[1];
      head.reference = [head.reference[0]];
      head.kind = 'multi';
    }
    const syntax: RuleSyntax = { if: hasIf, contains: usesContains, generatedBody: false, generatedValue: false };

    let body: Body;
    if (hasIf) {
      this.advance();
      if (this.kind() === '{') {
        // OPA's parseRules reads what follows `if` as one literal first, so `p if {x | xs[x]}` is a
        // comprehension and `p if {a} == b` a comparison; only a set literal (never false, so no body)
        // falls back to `{ body }`. `p if {}` is thus a body of one empty object, true, as in OPA.
        const s = this.pos;
        const wildcards = this.wildcards;
        const literal = this.attempt(() => this.parseLiteral());
        const lone = literal?.terms.type === 'term' ? literal.terms.term : undefined;
        if (literal && lone?.type !== 'set') {
          body = [literal];
        } else {
          this.pos = s;
          this.wildcards = wildcards;
          body = this.parseBracedBody();
        }
      } else {
        if (this.kind() === 'eof') this.unexpected(this.tok, 'rule body expected');
        const expr = this.parseLiteral();
        body = [expr];
      }
    } else if (this.kind() === '{') {
      body = this.parseBracedBody();
    } else {
      // `p contains x` without a body.
      const loc = this.span(start);
      const rule: Rule = { default: false, head, body: [generatedTrue(loc)], location: loc };
      this.syntax.set(rule, { ...syntax, generatedBody: true });
      return [rule];
    }

    if (head.value === undefined && head.kind === 'single')
      head.value = { type: 'boolean', value: true, location: head.location };

    const rule: Rule = { default: false, head, body, location: this.span(start) };
    this.syntax.set(rule, syntax);
    if (this.isKeyword(this.tok, 'else')) {
      if (head.reference.length > 1 && !head.reference.every(isGround)) {
        this.error(this.tok, 'else keyword cannot be used on rules with variables in head');
      }
      if (head.kind === 'multi') this.error(this.tok, 'else keyword cannot be used on multi-value rules');
      rule.else = this.parseElse(head);
      rule.location = this.span(start);
    }
    const rules = [rule];
    // A chained body, `p { a } { b }` or `p if a { b }`, defines the rule again with the same head (OPA's
    // parseRules: any `{` after the rule, on its line or the next, starts one; refused after `else`). The
    // copy's nodes all take the body's location, and `_` arguments get fresh wildcards.
    while (this.kind() === '{') {
      if (rule.else) this.error(this.tok, 'expected else keyword');
      const open = this.tok;
      const extra = this.parseBracedBody();
      const location = this.span(open);
      const copy: Head = structuredClone(head);
      if (copy.args) copy.args = copy.args.map((a) => (a.type === 'var' && a.wildcard ? this.wildcard(a) : a));
      relocate(copy, location);
      const chained: Rule = { default: false, head: copy, body: extra, location };
      this.syntax.set(chained, syntax);
      rules.push(chained);
    }
    return rules;
  }

  private parseHead(isDefault: boolean): Head {
    const start = this.tok;
    // Callers start a head only at a name that is no keyword (OPA's parseRules leaves anything else to parseQuery).
    if (start.kind !== 'ident' || this.keywords.has(start.text)) this.unexpected(start);
    this.advance();
    // OPA's parseHeadFinish refuses an operator written right after the name (`p==1`); with a space between,
    // `p == 1` is a query statement (a call of a builtin, no rule).
    if (!this.tok.ws && HEAD_OPERATORS.has(this.kind())) this.unexpected(this.tok);
    // `_` names a rule as OPA's parser does: a fresh wildcard var (`$0`), so the rule is `data.<pkg>["$0"]`.
    const reference: Term[] = [
      start.text === '_' ? this.wildcard({ location: this.loc(start) }) : this.varTerm(start.text, start),
    ];
    let args: Term[] | undefined;
    for (;;) {
      const t = this.tok;
      if (t.nl) break;
      if (t.kind === '.') {
        this.advance();
        const name = this.tok;
        if (name.kind !== 'ident') this.unexpected(name, 'expected identifier');
        this.advance();
        reference.push({ type: 'string', value: name.text, location: this.loc(name) });
      } else if (t.kind === '[') {
        this.advance();
        reference.push(this.parseTermInfix(true));
        if (this.kind() !== ']') this.unexpected(this.tok, 'expected ]');
        this.advance();
      } else if (t.kind === '(') {
        this.advance();
        args = this.parseTermList(')');
        this.advance();
        break;
      } else {
        break;
      }
    }
    // OPA names the head as its ref prints (Ref.String) in these messages.
    const name = refString(reference);
    const head: Head = { reference, assign: false, kind: 'single', location: this.span(start) };
    if (args) head.args = args;
    const t = this.tok;
    if (this.isKeyword(t, 'contains')) {
      // OPA records this and reads on (parseHead).
      if (args)
        this.softError(
          t,
          this.unexpectedText(
            t,
            `the contains keyword can only be used with multi-value rule definitions (e.g., ${name} contains <VALUE> { ... })`,
          ),
        );
      this.advance();
      head.key = this.orElse(
        () => this.parseTermInfix(true),
        (at) => this.unexpectedText(at, `expected rule key term (e.g., ${name} contains <VALUE> { ... })`),
      );
      head.kind = 'multi';
    } else if (t.kind === ':=' || t.kind === '=') {
      this.advance();
      head.assign = t.kind === ':=';
      // The value may start on the next line (`f(x) :=\n  concat(…)`): OPA's parseHead scans past newlines.
      // OPA's example for `=` prints the head's (never set) key as <nil>.
      const example =
        t.kind === '='
          ? `expected rule value term (e.g., ${name}[<nil>] = <VALUE> { ... })`
          : args
            ? `expected function value term (e.g., ${name}(...) := <VALUE> { ... })`
            : isDefault
              ? `expected default rule value term (e.g., default ${name} := <VALUE>)`
              : `expected rule value term (e.g., ${name} := <VALUE> { ... })`;
      head.value = this.orElse(
        () => this.parseTermInfix(true),
        (at) => this.unexpectedText(at, example),
      );
    }
    // OPA's parseHead gives a head with no value or key the value true, unless it is `p[x]` (a partial set
    // without `contains`, or a default rule missing its value).
    if (isDefault && head.value === undefined && head.kind === 'single' && (reference.length !== 2 || args)) {
      head.value = { type: 'boolean', value: true, location: this.span(start) };
    }
    head.location = this.span(start);
    return head;
  }

  private parseElse(head: Head): Rule {
    const kw = this.advance(); // else
    const elseHead: Head = structuredClone(head);
    elseHead.location = this.loc(kw);
    const t = this.tok;
    if (t.kind === ':=' || t.kind === '=') {
      this.advance();
      elseHead.assign = t.kind === ':=';
      elseHead.value = this.parseTermInfix(true);
    } else if (this.isKeyword(t, 'if') || t.kind === '{') {
      elseHead.value = { type: 'boolean', value: true, location: this.loc(kw) };
    } else {
      this.unexpected(t, 'expected else value term or rule body');
    }
    const hasIf = this.isKeyword(this.tok, 'if');
    let body: Body;
    let generatedBody = false;
    if (hasIf) {
      this.advance();
      if (this.kind() === '{') body = this.parseBracedBody();
      else {
        if (this.kind() === 'eof') this.unexpected(this.tok, 'rule body expected');
        body = [this.parseLiteral()];
      }
    } else if (this.kind() === '{') {
      // Without `if` in v1 too: parseModule refuses it once the module has parsed.
      body = this.parseBracedBody();
    } else {
      body = [generatedTrue(this.span(kw))];
      generatedBody = true;
    }
    const rule: Rule = { default: false, head: elseHead, body, location: this.span(kw) };
    this.syntax.set(rule, { if: hasIf, contains: false, generatedBody, generatedValue: false });
    if (this.isKeyword(this.tok, 'else')) {
      rule.else = this.parseElse(head);
      rule.location = this.span(kw);
    }
    return rule;
  }

  // ---------------------------------------------------------------- entry points

  atEnd(): boolean {
    return this.kind() === 'eof';
  }

  currentToken(): Token {
    return this.tok;
  }

  tokenAt(index: number): Token {
    return this.tokens[Math.min(index, this.tokens.length - 1)];
  }

  isKeywordHere(word: string): boolean {
    return this.isKeyword(this.tok, word);
  }

  /**
   * A query as OPA's ParseBody reads it: statements of expressions joined by `;`, one after another up to the end
   * of input, with nothing required between two statements (`x := 1 y := 2` is two expressions), concatenated.
   */
  parseQueryBody(): Body {
    const body: Body = [];
    while (!this.atEnd()) {
      const statement = this.parseBodyStatement();
      if (statement.kind !== 'body') break;
      for (const expr of statement.body) {
        expr.index = body.length;
        body.push(expr);
      }
    }
    if (this.soft.length) throw this.failure([]);
    return body;
  }
}

/** The infix operators OPA's parseHeadFinish refuses right after a rule name. */
const HEAD_OPERATORS: ReadonlySet<TokenKind> = new Set([
  '+',
  '-',
  '*',
  '/',
  '%',
  '&',
  '|',
  '==',
  '!=',
  '>',
  '>=',
  '<',
  '<=',
]);

/** The roots an import path may start from (OPA's RootDocumentNames plus `future` and `rego`). */
const IMPORT_ROOTS = ['data', 'future', 'input', 'rego'];

/** The always-true body OPA gives a rule written without one. */
export function generatedTrue(loc: Location): Expr {
  return {
    index: 0,
    negated: false,
    terms: { type: 'term', term: { type: 'boolean', value: true, location: loc } },
    with: [],
    generated: true,
    location: loc,
  };
}

/** A ref as OPA prints it (Ref.String): `p.q`, `p[x]`, `p["a-b"]`, `_` for a wildcard. */
export function refString(ref: readonly Term[]): string {
  return ref
    .map((t, i) => {
      if (t.type === 'var') {
        const name = t.wildcard ? '_' : t.value;
        return i === 0 ? name : `[${name}]`;
      }
      if (i > 0 && t.type === 'string') {
        return /^[A-Za-z_][A-Za-z0-9_]*$/.test(t.value) && !REGO_KEYWORDS.has(t.value)
          ? `.${t.value}`
          : `[${JSON.stringify(t.value)}]`;
      }
      const text = t.location?.text ?? t.type;
      return i === 0 ? text : `[${text}]`;
    })
    .join('');
}

/** Gives `node` and every node inside it the location `loc` (OPA's setLocRecursive). */
function relocate(node: unknown, loc: Location): void {
  if (Array.isArray(node)) {
    for (const x of node) relocate(x, loc);
  } else if (node !== null && typeof node === 'object') {
    const o = node as Record<string, unknown>;
    if ('location' in o || 'type' in o || 'terms' in o) o.location = { ...loc };
    // The copy has no source text of its own, so opa fmt writes its strings quoted (format.go writeTerm).
    if (o.type === 'string') delete o.raw;
    for (const [k, v] of Object.entries(o)) if (k !== 'location') relocate(v, loc);
  }
}

/**
 * The vars, refs and calls in a default rule's value, outside comprehensions, by OPA's type name, one for each
 * (validateDefaultRuleValue reports every one it meets and looks no deeper into it).
 */
function nonConstants(t: Term, out: string[] = []): string[] {
  switch (t.type) {
    case 'var':
    case 'ref':
    case 'call':
      out.push(t.type);
      break;
    case 'array':
    case 'set':
      for (const x of t.value) nonConstants(x, out);
      break;
    case 'object':
      for (const [k, v] of t.value) {
        nonConstants(k, out);
        nonConstants(v, out);
      }
      break;
    case 'templatestring':
      for (const part of t.parts) {
        if (!('terms' in part)) nonConstants(part, out);
        else if (part.terms.type === 'term') nonConstants(part.terms.term, out);
        else if (part.terms.type === 'call') {
          out.push('ref');
          for (const a of part.terms.args) nonConstants(a, out);
        }
      }
      break;
  }
  return out;
}
