// Tokenizer for Rego source. Produces the whole token array up front so the parser can backtrack
// cheaply (OPA's parser saves/restores scanner state for the same ambiguities). OPA's scanner runs lazily, so
// its errors only count once the parser reaches the bad token: here a scanner error ends the token array with
// an `illegal` token carrying it, which the parser reports when it gets there (a syntax error before it wins).
import { RegoError } from '../errors.ts';
import { parseErrorDetails } from './error-details.ts';
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
  | '&'
  /** What OPA's scanner gives tokens.Illegal for: a character it does not know, or a token with scanner errors. */
  | 'illegal';

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
  /** An `illegal` token's scanner errors (none for an unknown character: the parser says "illegal token"). */
  scanErrors?: RegoError[];
  /**
   * A well-formed token whose value OPA's parser refuses when it reads the term (a number with a leading zero,
   * a string whose escapes JSON does not decode): raised by the parser then, like OPA's parseNumber/parseString.
   */
  invalid?: RegoError;
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

  /** OPA reports every scanner and token error at the start of the token (the parser's p.s.Loc()). */
  const errorAt = (message: string, offset: number, r: number, c: number): RegoError => {
    const loc: Location = { file, row: r, col: c, offset };
    return new RegoError('rego_parse_error', message, loc, parseErrorDetails(text, offset));
  };
  /** The errors OPA's scanner records for the token being read (it goes on reading the token after each). */
  let scanErrors: RegoError[] = [];
  /** Thrown to end lexing at an illegal token; everything after it is out of the parser's reach. */
  const stop = Symbol('illegal token');

  const frames: TemplateFrame[] = [];

  /**
   * One piece of a template string from `from` (just past `$"`, `` $` `` or the `}` closing an expression) to
   * its `{` or closing quote, as OPA's scanTemplateString / scanRawTemplateString read it. Returns the end
   * offset, whether it closed the string, the piece's text (`\{` unescaped; JSON escapes decoded) and, when
   * JSON cannot decode it, the error OPA's parser gives the piece.
   */
  const scanTemplatePiece = (
    start: number,
    from: number,
    multiLine: boolean,
    open: string,
    r: number,
    col: number,
  ): { end: number; closed: boolean; value: string; invalid?: RegoError } => {
    const quote = multiLine ? '`' : '"';
    let j = from;
    let body = '';
    let closed = false;
    for (;;) {
      if (j >= n || (!multiLine && text[j] === '\n')) {
        scanErrors.push(errorAt('non-terminated string', start, r, col));
        break;
      }
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
          if (!TEMPLATE_ESCAPES.has(next)) {
            scanErrors.push(errorAt('illegal escape sequence', start, r, col));
            body += ch;
            continue;
          }
          // OPA's scanner steps over `u` and the three characters after it whatever they are (a `{` or `"`
          // among them neither opens an expression nor ends the string); the parser's JSON decoding judges them.
          const width = next === 'u' ? 4 : 1;
          body += ch + text.slice(j, j + width);
          j += width;
          continue;
        }
      }
      body += ch;
    }
    let value = body;
    let invalid: RegoError | undefined;
    // OPA's parser decodes a piece as JSON only when it has a backslash; other text is taken as written,
    // control characters included (templateStringPartToStringLiteral).
    if (!multiLine && body.includes('\\') && scanErrors.length === 0) {
      try {
        value = JSON.parse(`"${body}"`) as string;
      } catch {
        // OPA's parser quotes the piece as its scanner gave it: opening `"` or `}`, then up to `{` or `"`.
        invalid = errorAt(`illegal template-string part: ${open}${body}${closed ? quote : '{'}`, start, r, col);
      }
    }
    return { end: j, closed, value, ...(invalid ? { invalid } : {}) };
  };

  /** Push a template piece token starting at `start` (its text from there to the piece's end). */
  const templateToken = (start: number, from: number, multiLine: boolean, open: string, col: number): void => {
    const piece = scanTemplatePiece(start, from, multiLine, open, row, col);
    if (scanErrors.length) {
      illegal(start, piece.end, col);
    }
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
      ...(piece.invalid ? { invalid: piece.invalid } : {}),
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

  /** End the tokens with an illegal one from `start` to `end`, carrying the scanner errors (if any). */
  function illegal(start: number, end: number, col: number): never {
    tokens.push({
      kind: 'illegal',
      text: text.slice(start, end),
      value: text.slice(start, end),
      row,
      col,
      offset: start,
      end,
      ws,
      nl,
      ...(scanErrors.length ? { scanErrors } : {}),
    });
    throw stop;
  }

  try {
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
      scanErrors = [];
      if (c === '$') {
        const q = text[i + 1];
        if (q !== '"' && q !== '`') {
          scanErrors.push(errorAt('illegal $ character', start, row, col));
          illegal(start, start + 1, col);
        }
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
      let invalid: RegoError | undefined;
      if (isIdentStart(c)) {
        while (i < n && isIdentPart(text[i])) i++;
        kind = 'ident';
      } else if (isDigit(c)) {
        // OPA's scanNumber: digits, a fraction and an exponent each need a digit, and a letter right after
        // the number makes the whole run of letters and digits one bad number.
        while (i < n && isDigit(text[i])) i++;
        if (text[i] === '.') {
          i++;
          if (!isDigit(text[i] ?? '')) scanErrors.push(errorAt('expected fraction', start, row, col));
          while (i < n && isDigit(text[i])) i++;
        }
        if (text[i] === 'e' || text[i] === 'E') {
          i++;
          if (text[i] === '+' || text[i] === '-') i++;
          if (!isDigit(text[i] ?? '')) scanErrors.push(errorAt('expected exponent', start, row, col));
          while (i < n && isDigit(text[i])) i++;
        }
        if (i < n && isIdentStart(text[i])) {
          scanErrors.push(errorAt('illegal number format', start, row, col));
          while (i < n && isIdentPart(text[i])) i++;
        }
        if (scanErrors.length) illegal(start, i, col);
        const lit = text.slice(start, i);
        // The parser's check (parseNumber), so it is raised when the number is read as a term.
        if (lit.length > 1 && lit[0] === '0' && lit[1] !== '.' && lit[1] !== 'e' && lit[1] !== 'E') {
          invalid = errorAt('unexpected number token: expected number without leading zero', start, row, col);
        }
        kind = 'number';
      } else if (c === '"') {
        i++;
        let escaped = false;
        for (;;) {
          if (i >= n || text[i] === '\n') {
            scanErrors.push(errorAt('non-terminated string', start, row, col));
            break;
          }
          const ch = text[i];
          i++;
          if (ch === '"') break;
          if (ch === '\\') {
            escaped = true;
            const next = text[i];
            // `\u` steps over the `u` and three more characters, as in template strings.
            if (next === 'u') i += 4;
            else if (next !== undefined && '\\"/bfnrt'.includes(next)) i++;
            // OPA's scanner leaves the character after a bad escape to be read as string text.
            else scanErrors.push(errorAt('illegal escape sequence', start, row, col));
          }
        }
        if (scanErrors.length) illegal(start, i, col);
        const lit = text.slice(start, i);
        if (escaped) {
          try {
            value = JSON.parse(lit) as string;
          } catch {
            // OPA's parseString decodes escapes as JSON, when the parser reads the string.
            invalid = errorAt(`illegal string literal: ${lit}`, start, row, col);
            value = lit.slice(1, -1);
          }
        } else {
          // Without a backslash OPA's parseString takes the text between the quotes as it is.
          value = lit.slice(1, -1);
        }
        kind = 'string';
      } else if (c === '`') {
        const close = text.indexOf('`', i + 1);
        // OPA's scanRawString words it as for any string.
        if (close < 0) {
          scanErrors.push(errorAt('non-terminated string', start, row, col));
          illegal(start, n, col);
        }
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
        // OPA's scanner names a lone `!`; any other character it does not know is just an illegal token.
        if (c === '!') scanErrors.push(errorAt('illegal ! character', start, row, col));
        illegal(start, start + 1, col);
      }
      const tokText = text.slice(start, i);
      tokens.push({
        kind,
        text: tokText,
        value: value ?? tokText,
        row,
        col,
        offset: start,
        end: i,
        ws,
        nl,
        ...(invalid ? { invalid } : {}),
      });
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
  } catch (e) {
    if (e !== stop) throw e;
    // The parser never steps past the illegal token; an end marker keeps the array well-formed.
    const last = tokens[tokens.length - 1];
    tokens.push({
      kind: 'eof',
      text: '',
      value: '',
      row: last.row,
      col: last.col,
      offset: last.end,
      end: last.end,
      ws,
      nl,
    });
    return { tokens, comments };
  }
  // OPA's scanner leaves the column at the last character read: the end of the last line, 0 after a newline.
  tokens.push({ kind: 'eof', text: '', value: '', row, col: i - lineStart, offset: i, end: i, ws, nl });
  return { tokens, comments };
}
