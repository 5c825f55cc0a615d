// Tokenizer for Rego source. Produces the whole token array up front so the parser can backtrack
// cheaply (OPA's parser saves/restores scanner state for the same ambiguities).
import { RegoError, RegoErrors } from '../errors.ts';
import type { Comment, Location } from './types.ts';

export type TokenKind =
  | 'ident'
  | 'number'
  | 'string'
  | 'rawstring'
  | 'templatepart'
  | 'templateend'
  | 'eof'
  | '{'
  | '}'
  | '['
  | ']'
  | '('
  | ')'
  | ','
  | ';'
  | '.'
  | ':'
  | ':='
  | '='
  | '=='
  | '!='
  | '<'
  | '<='
  | '>'
  | '>='
  | '+'
  | '-'
  | '*'
  | '/'
  | '%'
  | '|'
  | '&';

export interface Token {
  kind: TokenKind;
  /** Source text of the token. */
  text: string;
  /** Decoded value for strings; the text otherwise. */
  value: string;
  row: number;
  col: number;
  offset: number;
  end: number;
  /** Whitespace or a comment separates this token from the previous one. */
  ws: boolean;
  /** A newline separates this token from the previous one. */
  nl: boolean;
  /** Template-string pieces: the raw (multi-line, backtick) form. */
  multiLine?: boolean;
}

export interface LexResult {
  tokens: Token[];
  comments: Comment[];
}

const PUNCT2 = new Set([':=', '==', '!=', '<=', '>=']);
const PUNCT1 = new Set([
  '{',
  '}',
  '[',
  ']',
  '(',
  ')',
  ',',
  ';',
  '.',
  ':',
  '=',
  '<',
  '>',
  '+',
  '-',
  '*',
  '/',
  '%',
  '|',
  '&',
]);

function isIdentStart(c: string): boolean {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c === '_';
}
function isIdentPart(c: string): boolean {
  return isIdentStart(c) || isDigit(c);
}
function isDigit(c: string): boolean {
  return c >= '0' && c <= '9';
}

/**
 * A template string whose `{expression}` is being lexed: the `{`/`}` nesting inside the expression, so the
 * `}` that closes it is known. OPA's parser decides this by asking its scanner to continue the template
 * string after the expression's `}` (scanner.ContinueTemplateString); lexing up front, braces are counted.
 */
interface TemplateFrame {
  multiLine: boolean;
  depth: number;
}

/**
 * JSON escapes OPA's scanner accepts in a `$"..."` template string besides `\{` (scanTemplateString); any
 * other backslash, `\}` included, is its "illegal escape sequence". OPA's scanner tests once had `\}` as an
 * escape in both forms ("both braces"); the scanner and tests after them take it out again.
 */
const TEMPLATE_ESCAPES = new Set(['\\', '"', '/', 'b', 'f', 'n', 'r', 't', 'u']);

export function lex(file: string, text: string): LexResult {
  const tokens: Token[] = [];
  const comments: Comment[] = [];
  // A UTF-8 byte order mark at the very start is not part of the source.
  let i = text.charCodeAt(0) === 0xfeff ? 1 : 0;
  let row = 1;
  let lineStart = 0;
  let ws = false;
  let nl = false;
  const n = text.length;

  const fail = (message: string, offset: number, r: number, c: number): never => {
    const loc: Location = { file, row: r, col: c, offset };
    const line = text.split('\n')[r - 1] ?? '';
    throw new RegoErrors([
      new RegoError('rego_parse_error', message, loc, [line, ' '.repeat(Math.max(0, c - 1)) + '^']),
    ]);
  };

  const frames: TemplateFrame[] = [];

  /**
   * One piece of a template string from `from` (just past `$"`, `` $` `` or the `}` closing an expression) to
   * its `{` or closing quote, as OPA's scanTemplateString / scanRawTemplateString read it. Returns the end
   * offset, whether it closed the string, and the piece's text (`\{` unescaped; JSON escapes decoded).
   */
  const scanTemplatePiece = (
    from: number,
    multiLine: boolean,
    open: string,
    r: number,
    col: number,
  ): { end: number; closed: boolean; value: string } => {
    const quote = multiLine ? '`' : '"';
    let j = from;
    let body = '';
    let closed = false;
    for (;;) {
      if (j >= n || (!multiLine && text[j] === '\n')) fail('non-terminated string', from, r, col);
      const ch = text[j];
      j++;
      if (ch === quote) {
        closed = true;
        break;
      }
      if (ch === '{') break;
      if (ch === '\\') {
        const next = text[j] ?? '';
        // OPA's scanner drops the backslash of `\{`, in both forms; a raw template keeps every other one.
        if (next === '{') {
          body += next;
          j++;
          continue;
        }
        if (!multiLine) {
          if (!TEMPLATE_ESCAPES.has(next)) fail('illegal escape sequence', j, r, col);
          // OPA's scanner steps over the four characters after `\u` whatever they are (a `{` or `"` among
          // them neither opens an expression nor ends the string); the parser's JSON decoding judges them.
          const width = next === 'u' ? 5 : 1;
          body += ch + text.slice(j, j + width);
          j += width;
          continue;
        }
      }
      body += ch;
    }
    let value = body;
    // OPA's parser decodes a piece as JSON only when it has a backslash; other text is taken as written,
    // control characters included (templateStringPartToStringLiteral).
    if (!multiLine && body.includes('\\')) {
      try {
        value = JSON.parse(`"${body}"`) as string;
      } catch {
        // OPA's parser quotes the piece as its scanner gave it: opening `"` or `}`, then up to `{` or `"`.
        fail(`illegal template-string part: ${open}${body}${closed ? quote : '{'}`, from, r, col);
      }
    }
    return { end: j, closed, value };
  };

  /** Push a template piece token starting at `start` (its text from there to the piece's end). */
  const templateToken = (start: number, from: number, multiLine: boolean, open: string, col: number): void => {
    const piece = scanTemplatePiece(from, multiLine, open, row, col);
    tokens.push({
      kind: piece.closed ? 'templateend' : 'templatepart',
      text: text.slice(start, piece.end),
      value: piece.value,
      row,
      col,
      offset: start,
      end: piece.end,
      ws,
      nl,
      multiLine,
    });
    for (let k = start; k < piece.end; k++) {
      if (text[k] === '\n') {
        row++;
        lineStart = k + 1;
      }
    }
    if (!piece.closed) frames.push({ multiLine, depth: 0 });
    i = piece.end;
    ws = false;
    nl = false;
  };

  while (i < n) {
    const c = text[i];
    if (c === '\n') {
      i++;
      row++;
      lineStart = i;
      ws = true;
      nl = true;
      continue;
    }
    if (c === ' ' || c === '\t' || c === '\r') {
      i++;
      ws = true;
      continue;
    }
    const col = i - lineStart + 1;
    if (c === '#') {
      let j = i + 1;
      while (j < n && text[j] !== '\n') j++;
      let body = text.slice(i + 1, j);
      while (body.endsWith('\r')) body = body.slice(0, -1);
      comments.push({ text: body, location: { file, row, col, offset: i, text: text.slice(i, j) } });
      i = j;
      ws = true;
      continue;
    }
    const start = i;
    if (c === '$') {
      const q = text[i + 1];
      if (q !== '"' && q !== '`') fail('illegal $ character', start, row, col);
      templateToken(start, i + 2, q === '`', q, col);
      continue;
    }
    const frame = frames[frames.length - 1];
    if (frame && c === '{') frame.depth++;
    if (frame && c === '}') {
      if (frame.depth === 0) {
        // The `}` closing a template expression, then the template string goes on right after it.
        frames.pop();
        tokens.push({ kind: '}', text: '}', value: '}', row, col, offset: start, end: start + 1, ws, nl });
        ws = false;
        nl = false;
        templateToken(start + 1, start + 1, frame.multiLine, '}', col + 1);
        continue;
      }
      frame.depth--;
    }
    let kind: TokenKind;
    let value: string | undefined;
    if (isIdentStart(c)) {
      while (i < n && isIdentPart(text[i])) i++;
      kind = 'ident';
    } else if (isDigit(c)) {
      while (i < n && isDigit(text[i])) i++;
      if (text[i] === '.' && isDigit(text[i + 1] ?? '')) {
        i++;
        while (i < n && isDigit(text[i])) i++;
      }
      if (text[i] === 'e' || text[i] === 'E') {
        let j = i + 1;
        if (text[j] === '+' || text[j] === '-') j++;
        if (isDigit(text[j] ?? '')) {
          while (j < n && isDigit(text[j])) j++;
          i = j;
        }
      }
      const lit = text.slice(start, i);
      if (lit.length > 1 && lit[0] === '0' && lit[1] !== '.' && lit[1] !== 'e' && lit[1] !== 'E') {
        fail('unexpected number token: expected number without leading zero', start, row, col);
      }
      if (i < n && isIdentStart(text[i])) fail('illegal number format', start, row, col);
      kind = 'number';
    } else if (c === '"') {
      i++;
      let escaped = false;
      for (;;) {
        if (i >= n || text[i] === '\n') fail('non-terminated string', start, row, col);
        const ch = text[i];
        if (ch === '\\') {
          escaped = true;
          i += 2;
          continue;
        }
        i++;
        if (ch === '"') break;
      }
      const lit = text.slice(start, i);
      if (escaped) {
        try {
          value = JSON.parse(lit) as string;
        } catch {
          fail(`illegal string literal: ${lit}`, start, row, col);
        }
      } else {
        // Control characters are not allowed inside a (JSON) string literal.
        if (/[\u0000-\u001f]/.test(lit)) fail(`illegal string literal: ${lit}`, start, row, col);
        value = lit.slice(1, -1);
      }
      kind = 'string';
    } else if (c === '`') {
      const close = text.indexOf('`', i + 1);
      // OPA's scanRawString words it as for any string.
      if (close < 0) fail('non-terminated string', start, row, col);
      value = text.slice(i + 1, close);
      i = close + 1;
      kind = 'rawstring';
    } else if (PUNCT2.has(text.slice(i, i + 2))) {
      kind = text.slice(i, i + 2) as TokenKind;
      i += 2;
    } else if (PUNCT1.has(c)) {
      kind = c as TokenKind;
      i += 1;
    } else {
      fail(`illegal token`, start, row, col);
      throw new Error('unreachable');
    }
    const tokText = text.slice(start, i);
    tokens.push({ kind, text: tokText, value: value ?? tokText, row, col, offset: start, end: i, ws, nl });
    // Raw strings may span lines: keep the row count right for later tokens.
    if (kind === 'rawstring') {
      for (let k = start; k < i; k++) {
        if (text[k] === '\n') {
          row++;
          lineStart = k + 1;
        }
      }
    }
    ws = false;
    nl = false;
  }
  tokens.push({ kind: 'eof', text: '', value: '', row, col: i - lineStart + 1, offset: i, end: i, ws, nl });
  return { tokens, comments };
}
