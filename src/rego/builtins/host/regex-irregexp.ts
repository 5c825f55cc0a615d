// V8's own regex engine (irregexp) for the regex builtins, where it is provably equivalent to RE2 and
// cannot backtrack without bound; re2js stays the engine for everything else.
//
// Why it is safe:
// - Same answers. translateRe2 accepts a subset of RE2 syntax whose meaning is identical in JS (no 'u' flag,
//   UTF-16 code units) and in Go (UTF-8 runes): ASCII literals and classes, \d \w \s (\s spelled as Go's
//   [\t\n\f\r ]), \b \B, ^ $ \A \z without multi-line, `.` as [^\n], greedy and lazy quantifiers, groups,
//   alternation (leftmost-first in both), and (?i) by spelling out Go's case folding (k also folds to U+212A
//   KELVIN SIGN, s to U+017F LONG S). Anything else (other flags, \p, POSIX classes, \x, non-ASCII pattern
//   text) returns null. Quantified bodies that can match empty are refused (JS and Go treat empty
//   iterations differently), and capture groups inside quantifiers are refused when groups are reported (JS
//   resets them on each iteration, Go keeps the last value).
// - Code units vs runes. A pattern whose matches are all non-empty runs of ASCII characters cannot tell the
//   two apart: every match starts and ends on a rune boundary, and so is every place an assertion looks at.
//   A pattern that can match a non-ASCII character (`.`, negated classes, \D \S \W, folded k and s) or the
//   empty string can (a surrogate pair is one rune in Go, two units here), so it answers only for text
//   without surrogates, where a unit is a rune; with one, the caller uses re2js.
// - Linear time. V8 re-runs a match on its experimental linear-time engine after
//   --regexp-backtracks-before-fallback (50,000) backtracks when these flags are on. They are set process-wide
//   when this module loads (Node 20.16+, which has process.getBuiltinModule), before it compiles anything.
//   The fallback covers a regex only if the linear engine accepts it, so a translation is used only if `new RegExp(source, 'l')` compiles (counted
//   repetitions are spelled as chunks the linear engine accepts: X{n,m} is X{n} then m-n optional X, exactly
//   as RE2 itself expands it), and only once a self-check has seen a catastrophic pattern come back at once.
//   V8 does not count a greedy loop over a fixed-length body giving characters back, so every optional copy
//   is spelled (?:X|\b\B) to make it count (see emitRepeat).
// - Not slower than re2js by much. The linear engine is slow per character, so only texts up to
//   IRREGEXP_MAX_TEXT go to irregexp, and a pattern whose calls keep being slow sends longer texts to re2js.
//   A text lacking a character every match needs (the '@' of an email) has no match without running a regex,
//   as re2js's own pre-filter decides, and a search skips the stretches no match can start in (Span).

// Reached through process.getBuiltinModule, not an import, so that the module also loads where there is no
// node:v8 (a browser page): there the flags stay off, `new RegExp(…, 'l')` fails and re2js answers everything.
const v8 = globalThis.process?.getBuiltinModule?.('node:v8');
v8?.setFlagsFromString('--enable-experimental-regexp-engine');
v8?.setFlagsFromString('--enable-experimental-regexp-engine-on-excessive-backtracks');

type Range = [number, number];
type Node =
  | { k: 'class'; neg: boolean; ranges: Range[] }
  | { k: 'any' }
  | { k: 'assert'; js: '^' | '$' | '\\b' | '\\B' }
  | { k: 'group'; capture: boolean; body: Node }
  | { k: 'alt'; alts: Node[] }
  | { k: 'cat'; items: Node[] }
  | { k: 'rep'; min: number; max: number; lazy: boolean; body: Node };

/** Thrown inside the parser for any construct outside the subset. */
class Unsupported extends Error {}

const DIGIT: Range[] = [[0x30, 0x39]];
const WORD: Range[] = [
  [0x30, 0x39],
  [0x41, 0x5a],
  [0x5f, 0x5f],
  [0x61, 0x7a],
];
const SPACE: Range[] = [
  [0x09, 0x0a],
  [0x0c, 0x0d],
  [0x20, 0x20],
]; // Go's \s: no \v
const KELVIN = 0x212a;
const LONG_S = 0x17f;

const isAlnum = (c: number) => (c >= 0x30 && c <= 0x39) || (c >= 0x41 && c <= 0x5a) || (c >= 0x61 && c <= 0x7a);
/** Go's single-letter escapes that stand for one character (parseEscape). */
const CHAR_ESCAPES: Record<string, number> = { a: 7, f: 12, n: 10, r: 13, t: 9, v: 11 };

/** Adds Go's simple case folding of the ASCII letters in `ranges` (the only non-ASCII partners are K and ſ). */
function foldRanges(ranges: Range[]): Range[] {
  const out: Range[] = [...ranges];
  const has = (c: number) => ranges.some(([lo, hi]) => c >= lo && c <= hi);
  for (let c = 0x41; c <= 0x5a; c++) {
    if (has(c) || has(c + 32)) out.push([c, c], [c + 32, c + 32]);
  }
  if (has(0x4b) || has(0x6b)) out.push([KELVIN, KELVIN]);
  if (has(0x53) || has(0x73)) out.push([LONG_S, LONG_S]);
  return out;
}

class Parser {
  private i = 0;
  constructor(private readonly src: string) {}

  parse(): Node {
    const node = this.alternation(false);
    if (this.i !== this.src.length) throw new Unsupported();
    return node;
  }

  private peek(): string | undefined {
    return this.src[this.i];
  }

  private alternation(fold: boolean): Node {
    const alts: Node[] = [];
    for (;;) {
      const items: Node[] = [];
      for (;;) {
        const c = this.peek();
        if (c === undefined || c === '|' || c === ')') break;
        if (c === '(' && this.src.startsWith('(?i)', this.i)) {
          // Go scopes a bare (?i) to the rest of the enclosing group, across later alternatives too.
          this.i += 4;
          fold = true;
          continue;
        }
        items.push(this.quantified(this.atom(fold)));
      }
      alts.push(items.length === 1 ? items[0] : { k: 'cat', items });
      if (this.peek() !== '|') break;
      this.i++;
    }
    return alts.length === 1 ? alts[0] : { k: 'alt', alts };
  }

  private quantified(atom: Node): Node {
    let min: number;
    let max: number;
    const c = this.peek();
    if (c === '*') [min, max] = [0, Infinity];
    else if (c === '+') [min, max] = [1, Infinity];
    else if (c === '?') [min, max] = [0, 1];
    else if (c === '{') {
      const m = /^\{(\d+)(,(\d*))?\}/.exec(this.src.slice(this.i));
      if (!m) return atom; // Go: a '{' that starts no repetition is a literal (handled by atom next time)
      min = Number(m[1]);
      max = m[2] === undefined ? min : m[3] === '' ? Infinity : Number(m[3]);
      this.i += m[0].length - 1;
    } else return atom;
    this.i++;
    let lazy = false;
    if (this.peek() === '?') {
      lazy = true;
      this.i++;
    }
    if (atom.k === 'assert' || min > 1000 || max < min || (max !== Infinity && max > 1000)) throw new Unsupported();
    const next = this.peek();
    if (
      next === '*' ||
      next === '+' ||
      next === '?' ||
      (next === '{' && /^\{\d+(,\d*)?\}/.test(this.src.slice(this.i)))
    )
      throw new Unsupported();
    return { k: 'rep', min, max, lazy, body: atom };
  }

  private atom(fold: boolean): Node {
    const c = this.src[this.i++];
    const cls = (ranges: Range[], neg = false): Node => ({
      k: 'class',
      neg,
      ranges: fold ? foldRanges(ranges) : ranges,
    });
    switch (c) {
      case '(': {
        let capture = true;
        let innerFold = fold;
        if (this.peek() === '?') {
          const rest = this.src.slice(this.i);
          if (rest.startsWith('?:')) {
            capture = false;
            this.i += 2;
          } else if (rest.startsWith('?i:')) {
            capture = false;
            innerFold = true;
            this.i += 3;
          } else {
            const named = /^\?P?<[A-Za-z0-9_]+>/.exec(rest);
            if (!named) throw new Unsupported();
            this.i += named[0].length;
          }
        }
        const body = this.alternation(innerFold);
        if (this.src[this.i++] !== ')') throw new Unsupported();
        return { k: 'group', capture, body };
      }
      case '[':
        return this.charClass(fold);
      case '.':
        return { k: 'any' };
      case '^':
        return { k: 'assert', js: '^' };
      case '$':
        return { k: 'assert', js: '$' };
      case '\\': {
        const e = this.src[this.i++];
        if (e === undefined) throw new Unsupported();
        if (e === 'A') return { k: 'assert', js: '^' };
        if (e === 'z') return { k: 'assert', js: '$' };
        if (e === 'b') return { k: 'assert', js: '\\b' };
        if (e === 'B') return { k: 'assert', js: '\\B' };
        if (e === 'd') return cls(DIGIT);
        if (e === 'w') return cls(WORD);
        if (e === 's') return cls(SPACE);
        if (e === 'D') return cls(DIGIT, true);
        if (e === 'W') return cls(WORD, true);
        if (e === 'S') return cls(SPACE, true);
        return cls([[this.escapedChar(e), this.escapedChar(e)]]);
      }
      case '|':
      case ')':
      case '*':
      case '+':
      case '?':
      case undefined:
        throw new Unsupported();
      default: {
        const code = c.charCodeAt(0);
        if (code >= 0x80) throw new Unsupported();
        return cls([[code, code]]);
      }
    }
  }

  /** The character an escape other than a class or assertion stands for (Go's parseEscape, ASCII part). */
  private escapedChar(e: string): number {
    const code = e.charCodeAt(0);
    if (code < 0x80 && !isAlnum(code)) return code;
    if (e in CHAR_ESCAPES) return CHAR_ESCAPES[e];
    throw new Unsupported();
  }

  private charClass(fold: boolean): Node {
    let neg = false;
    if (this.peek() === '^') {
      neg = true;
      this.i++;
    }
    const ranges: Range[] = [];
    let first = true;
    for (;;) {
      const c = this.peek();
      if (c === undefined) throw new Unsupported();
      if (c === ']' && !first) break;
      first = false;
      if (c === '[' && this.src[this.i + 1] === ':') throw new Unsupported(); // POSIX class
      if (c === '\\') {
        const e = this.src[this.i + 1];
        if (e === 'd' || e === 'w' || e === 's') {
          ranges.push(...(e === 'd' ? DIGIT : e === 'w' ? WORD : SPACE));
          this.i += 2;
          continue;
        }
      }
      const lo = this.classChar();
      let hi = lo;
      if (this.peek() === '-' && this.src[this.i + 1] !== ']' && this.src[this.i + 1] !== undefined) {
        this.i++;
        hi = this.classChar();
        if (hi < lo) throw new Unsupported();
      }
      ranges.push([lo, hi]);
    }
    this.i++;
    return { k: 'class', neg, ranges: fold ? foldRanges(ranges) : ranges };
  }

  private classChar(): number {
    const c = this.src[this.i++];
    if (c === '\\') {
      const e = this.src[this.i++];
      if (e === undefined) throw new Unsupported();
      return this.escapedChar(e);
    }
    const code = c.charCodeAt(0);
    if (code >= 0x80) throw new Unsupported();
    return code;
  }
}

const nullable = (n: Node): boolean => {
  switch (n.k) {
    case 'class':
    case 'any':
      return false;
    case 'assert':
      return true;
    case 'group':
      return nullable(n.body);
    case 'cat':
      return n.items.every(nullable);
    case 'alt':
      return n.alts.some(nullable);
    case 'rep':
      return n.min === 0 || nullable(n.body);
  }
};

/** Whether a match of `n` can consume a non-ASCII character. */
const touchesNonAscii = (n: Node): boolean => {
  switch (n.k) {
    case 'class':
      return n.neg || n.ranges.some(([, hi]) => hi >= 0x80);
    case 'any':
      return true;
    case 'assert':
      return false;
    case 'group':
    case 'rep':
      return touchesNonAscii(n.body);
    case 'cat':
      return n.items.some(touchesNonAscii);
    case 'alt':
      return n.alts.some(touchesNonAscii);
  }
};

/** Checks the quantifier rules; `inRep` is true below a quantifier. */
function checkQuantifiers(n: Node, keepCaptures: boolean, inRep: boolean): void {
  switch (n.k) {
    case 'group':
      if (n.capture && inRep && keepCaptures) throw new Unsupported();
      return checkQuantifiers(n.body, keepCaptures, inRep);
    case 'cat':
      return n.items.forEach((x) => checkQuantifiers(x, keepCaptures, inRep));
    case 'alt':
      return n.alts.forEach((x) => checkQuantifiers(x, keepCaptures, inRep));
    case 'rep':
      if (nullable(n.body)) throw new Unsupported();
      return checkQuantifiers(n.body, keepCaptures, true);
    default:
  }
}

/** Characters (codes) that every match of `n` contains. */
const requiredChars = (n: Node): Set<number> => {
  switch (n.k) {
    case 'class':
      return !n.neg && n.ranges.length === 1 && n.ranges[0][0] === n.ranges[0][1]
        ? new Set([n.ranges[0][0]])
        : new Set();
    case 'group':
      return requiredChars(n.body);
    case 'cat':
      return new Set(n.items.flatMap((x) => [...requiredChars(x)]));
    case 'alt': {
      const [first, ...rest] = n.alts.map(requiredChars);
      return new Set([...first].filter((c) => rest.every((r) => r.has(c))));
    }
    case 'rep':
      return n.min > 0 ? requiredChars(n.body) : new Set();
    default:
      return new Set();
  }
};

/** A set of ASCII characters by code (1 = member); code units from 128 up are never members. */
type AsciiSet = Uint8Array;

/** Every character a match of `n` can consume, when all are ASCII (no `.`, negated or non-ASCII class). */
function alphabetOf(n: Node, into: AsciiSet = new Uint8Array(128)): AsciiSet | undefined {
  switch (n.k) {
    case 'class':
      if (n.neg || n.ranges.some(([, hi]) => hi >= 0x80)) return undefined;
      for (const [lo, hi] of n.ranges) into.fill(1, lo, hi + 1);
      return into;
    case 'any':
      return undefined;
    case 'assert':
      return into;
    case 'group':
    case 'rep':
      return alphabetOf(n.body, into);
    case 'cat':
      return n.items.every((x) => alphabetOf(x, into) !== undefined) ? into : undefined;
    case 'alt':
      return n.alts.every((x) => alphabetOf(x, into) !== undefined) ? into : undefined;
  }
}

/** How often a character is expected in ordinary text: letters and spaces are everywhere, digits are not. */
const commonness = (c: number) =>
  c === 0x20 || ((c | 0x20) >= 0x61 && (c | 0x20) <= 0x7a)
    ? 16
    : c >= 0x30 && c <= 0x39
      ? 1
      : '.,-:;\'"()/!?'.includes(String.fromCharCode(c))
        ? 8
        : 2;

/**
 * A set of characters every match of `n` holds at least one of (the rarest such set found, by commonness),
 * within the alphabet (called only when alphabetOf is defined, so every class here is ASCII and not negated).
 */
function requiredSetOf(n: Node): { set: AsciiSet; cost: number } | undefined {
  switch (n.k) {
    case 'class': {
      const set = new Uint8Array(128);
      for (const [lo, hi] of n.ranges) set.fill(1, lo, hi + 1);
      let cost = 0;
      set.forEach((member, c) => (cost += member * commonness(c)));
      return { set, cost };
    }
    case 'group':
      return requiredSetOf(n.body);
    case 'rep':
      return n.min > 0 ? requiredSetOf(n.body) : undefined;
    case 'cat': {
      let best: { set: AsciiSet; cost: number } | undefined;
      for (const item of n.items) {
        const r = requiredSetOf(item);
        if (r && (!best || r.cost < best.cost)) best = r;
      }
      return best;
    }
    case 'alt': {
      const set = new Uint8Array(128);
      let cost = 0;
      for (const alt of n.alts) {
        const r = requiredSetOf(alt);
        if (!r) return undefined;
        r.set.forEach((member, c) => (set[c] |= member));
        cost += r.cost;
      }
      return { set, cost };
    }
    default:
      return undefined;
  }
}

/** How many copies of its innermost atoms the linear engine makes for `n` (it refuses more than 16). */
const replication = (n: Node): number => {
  switch (n.k) {
    case 'group':
      return replication(n.body);
    case 'cat':
      return Math.max(1, ...n.items.map(replication));
    case 'alt':
      return Math.max(1, ...n.alts.map(replication));
    case 'rep':
      return (n.max === Infinity ? n.min + 1 : n.max) * replication(n.body);
    default:
      return 1;
  }
};

const LINEAR_REPLICATION_LIMIT = 16;
/** Larger counted repetitions stay on re2js (see emitRepeat). */
const MAX_NESTED_OPTIONALS = 32;
const MAX_MANDATORY_COPIES = 256;

const hex = (c: number) =>
  c < 0x100 ? `\\x${c.toString(16).padStart(2, '0')}` : `\\u${c.toString(16).padStart(4, '0')}`;
const unit = (c: number) => (isAlnum(c) ? String.fromCharCode(c) : hex(c));

function emitClass(neg: boolean, ranges: Range[]): string {
  const sorted = [...ranges].sort((a, b) => a[0] - b[0]);
  let body = '';
  for (const [lo, hi] of sorted) body += lo === hi ? unit(lo) : `${unit(lo)}-${unit(hi)}`;
  if (!neg && sorted.length === 1 && sorted[0][0] === sorted[0][1]) return unit(sorted[0][0]);
  return `[${neg ? '^' : ''}${body}]`;
}

function emit(n: Node, keepCaptures: boolean): string {
  switch (n.k) {
    case 'class':
      return emitClass(n.neg, n.ranges);
    case 'any':
      return '[^\\n]';
    case 'assert':
      return n.js;
    case 'group':
      return `(${n.capture && keepCaptures ? '' : '?:'}${emit(n.body, keepCaptures)})`;
    case 'cat':
      return n.items.map((x) => emit(x, keepCaptures)).join('');
    case 'alt':
      return n.alts.map((x) => emit(x, keepCaptures)).join('|');
    case 'rep':
      return emitRepeat(n, keepCaptures);
  }
}

/**
 * X{min,max} as pieces the linear engine accepts: the mandatory copies in chunks of X{c}, then the optional
 * ones as X{0,k} or, past the limit, as nested optionals (X(X(X)?)?)? — the same priorities as X{min,max}
 * for a body that cannot match empty, which checkQuantifiers guarantees.
 *
 * Every optional copy is spelled (?:X|\b\B): the second alternative never matches (no place is both a word
 * boundary and not one), but it stops irregexp from running the loop as a "greedy loop", whose giving back
 * of characters is not counted as backtracking. Uncounted, `[0-9]+x` on 64 KiB of digits takes seconds
 * (quadratic: every start position rescans the run) and never reaches the linear fallback; counted, it falls
 * back after 50,000 backtracks.
 */
function emitRepeat(n: Extract<Node, { k: 'rep' }>, keepCaptures: boolean): string {
  const body = emit(n.body, keepCaptures);
  // A class or group is already one atom.
  const x = n.body.k === 'class' || n.body.k === 'any' || n.body.k === 'group' ? body : `(?:${body})`;
  const counted = `(?:${body}|\\b\\B)`;
  const q = n.lazy ? '?' : '';
  const chunk = Math.max(1, Math.floor(LINEAR_REPLICATION_LIMIT / replication(n.body)));
  if (n.min > MAX_MANDATORY_COPIES) throw new Unsupported();
  let out = '';
  for (let left = n.min; left > 0; left -= chunk)
    out += Math.min(left, chunk) === 1 ? x : `${x}{${Math.min(left, chunk)}}`;
  if (n.max === Infinity) return `${out}${counted}*${q}`;
  const optional = n.max - n.min;
  if (optional === 0) return out;
  if (optional === 1) return `${out}${counted}?${q}`;
  if (optional <= chunk) return `${out}${counted}{0,${optional}}${q}`;
  // Each nested copy adds a group; hundreds make compiling slow and the fallback crawl.
  if (optional > MAX_NESTED_OPTIONALS) throw new Unsupported();
  let nested = '';
  for (let k = 0; k < optional; k++) nested = `(?:${x}${nested}|\\b\\B)?${q}`;
  return out + nested;
}

/**
 * Where the matches of a pattern can start, when every character a match consumes is in `alphabet` and
 * every match holds one of `anchors` (email: its characters and `@`; a card number: digits, space and
 * hyphen, and a digit). A match starting at or before the first anchor from a position contains that anchor
 * (it holds one, and none comes earlier) and only alphabet characters up to it, so no match starts before
 * the run of alphabet characters that ends at that anchor, and none at all when no anchor is left. The
 * search jumps there instead of letting irregexp try every position: the email pattern rescans each word of
 * prose without the jump, and after the last
 * match of a card or phone number the rest of the message is not scanned at all.
 */
export interface Span {
  alphabet: AsciiSet;
  /** Finds the next anchor (global: from its lastIndex). */
  anchorSearch: RegExp;
}

export interface Translation {
  /** JS RegExp source (no flags) with the same matches as the RE2 pattern. */
  source: string;
  /** The pattern can tell code units from runes: it may only answer for text without surrogates. */
  runeSensitive: boolean;
  /** Characters every match contains: a text lacking one has no match (re2js skips such texts the same way). */
  required: string[];
  /** Where a search can start (see Span); undefined when a match can consume non-ASCII or be empty. */
  span?: Span;
}

function spanOf(tree: Node): Span | undefined {
  const alphabet = alphabetOf(tree);
  const anchors = alphabet && requiredSetOf(tree)?.set;
  if (!alphabet || !anchors) return undefined;
  let cls = '';
  anchors.forEach((member, c) => (cls += member ? hex(c) : ''));
  return { alphabet, anchorSearch: new RegExp(`[${cls}]`, 'g') };
}

/**
 * Translates an RE2 pattern (already accepted by re2js) to an equivalent JS RegExp source, or null outside
 * the subset. Without `keepCaptures` every group is non-capturing (only the whole match is reported).
 */
export function translateRe2(pattern: string, keepCaptures: boolean): Translation | null {
  try {
    const tree = new Parser(pattern).parse();
    checkQuantifiers(tree, keepCaptures, false);
    return {
      source: emit(tree, keepCaptures),
      runeSensitive: nullable(tree) || touchesNonAscii(tree),
      required: [...requiredChars(tree)].slice(0, 4).map((c) => String.fromCharCode(c)),
      span: spanOf(tree),
    };
  } catch (e) {
    if (e instanceof Unsupported) return null;
    throw e;
  }
}

let enabled = true;

/** Turns the irregexp path off (re2js answers everything) or back on: differential tests, bisecting. */
export function setIrregexpEnabled(on: boolean): void {
  enabled = on;
}

export const irregexpEnabled = (): boolean => enabled;

let fallbackInForce: boolean | undefined;

/**
 * Whether V8 falls back to its linear engine on excessive backtracking in this process: `(?:a|a)*b` on 24
 * 'a's takes ~2^24 backtracks without the fallback and a bounded linear scan with it. Checked
 * once; a slow answer (a loaded machine included) keeps the process on re2js, which is the safe side.
 */
export function linearFallbackInForce(): boolean {
  if (fallbackInForce === undefined) {
    try {
      // A constructor, not a literal: an engine without the `l` flag must throw here, not fail to parse the module.
      // biome-ignore lint/complexity/useRegexLiterals: see above
      new RegExp('a', 'l');
      const started = performance.now();
      // biome-ignore lint/complexity/useRegexLiterals: built at run time so --enable-experimental-regexp-engine applies
      const result = new RegExp('(?:a|a)*b').exec('a'.repeat(24));
      fallbackInForce = result === null && performance.now() - started < 200;
    } catch {
      fallbackInForce = false;
    }
  }
  return fallbackInForce;
}

export interface Found {
  start: number;
  end: number;
  /** groups[0] is the whole match; a group that did not take part is undefined. */
  groups: (string | undefined)[];
}

const SURROGATE = /[\ud800-\udfff]/;

/**
 * Longest text irregexp is given. Once a match has burnt its 50,000 backtracks, V8's linear engine finishes
 * it several times slower per character than re2js (which also skips texts lacking a required literal), so on
 * long runs of letters or digits, such as the email pattern on base64 holding an '@', irregexp+fallback costs
 * more than re2js. This length bounds that worst case (bench/builtins.ts measures both engines).
 */
export const IRREGEXP_MAX_TEXT = 2048;

/** A call slower than this (µs) for its text length counts as slow (see IrregexpPattern.strikes). */
const slowCallMicros = (length: number) => 50 + 0.5 * length;

/** A translated pattern compiled by irregexp; each method returns undefined when re2js must answer. */
export class IrregexpPattern {
  private readonly once: RegExp;
  private readonly global: RegExp;
  /**
   * Texts this long or longer go to re2js: starts at IRREGEXP_MAX_TEXT + 1 and halves below the length of
   * the call that makes `strikes` reach 3, so texts that keep making irregexp fall back cost a few slow calls
   * per pattern, not one per request. A slow call adds a strike and a normal one takes 1/64 off: a call the
   * OS happened to preempt on a loaded machine does not count for long. Timing only picks the engine; both
   * give the same answer.
   */
  private re2jsFrom = IRREGEXP_MAX_TEXT + 1;
  private strikes = 0;
  /** `engineFlags` 'l' runs it on the linear engine outright (tests compare that engine with re2js too). */
  constructor(
    private readonly translation: Translation,
    engineFlags = '',
  ) {
    this.once = new RegExp(translation.source, engineFlags);
    this.global = new RegExp(translation.source, 'g' + engineFlags);
    // V8 compiles a regex on its first runs (bytecode, then native code); do it here so that the timing
    // below measures matching, not compilation.
    for (let i = 0; i < 3; i++) {
      this.once.test('');
      this.global.lastIndex = 0;
      this.global.exec('');
    }
  }

  private canAnswer(s: string): boolean {
    return s.length < this.re2jsFrom && (!this.translation.runeSensitive || !SURROGATE.test(s));
  }

  private timed<T>(s: string, run: () => T): T {
    const started = performance.now();
    const result = run();
    if ((performance.now() - started) * 1000 <= slowCallMicros(s.length))
      this.strikes = Math.max(0, this.strikes - 1 / 64);
    else if (++this.strikes >= 3) {
      this.re2jsFrom = Math.min(this.re2jsFrom, Math.floor(s.length / 2));
      this.strikes = 0;
    }
    return result;
  }

  private lacksRequired(s: string): boolean {
    for (const c of this.translation.required) if (!s.includes(c)) return true;
    return false;
  }

  test(s: string): boolean | undefined {
    if (!this.canAnswer(s)) return undefined;
    if (this.lacksRequired(s)) return false;
    const span = this.translation.span;
    if (span === undefined) return this.timed(s, () => this.once.test(s));
    const from = spanStart(span, s, 0);
    return (
      from >= 0 &&
      this.timed(s, () => {
        this.global.lastIndex = from;
        return this.global.test(s);
      })
    );
  }

  /** Go's Regexp.allMatches: no empty match right after a match, at most n matches (all when n < 0). */
  findAll(s: string, n: number): Found[] | undefined {
    if (!this.canAnswer(s)) return undefined;
    return this.lacksRequired(s) ? [] : this.timed(s, () => this.findAllIn(s, n));
  }

  private findAllIn(s: string, n: number): Found[] {
    const span = this.translation.span;
    const limit = n < 0 ? s.length + 1 : n;
    const out: Found[] = [];
    const re = this.global;
    let pos = 0;
    let prevEnd = -1;
    while (out.length < limit && pos <= s.length) {
      const from = span === undefined ? pos : spanStart(span, s, pos);
      if (from < 0) break;
      re.lastIndex = from;
      const m = re.exec(s);
      if (m === null) break;
      const start = m.index;
      const end = start + m[0].length;
      let accept = true;
      if (end === pos) {
        // An empty match at pos; only rune-sensitive patterns match empty, so the text has no surrogate and
        // the next rune is one unit on.
        if (start === prevEnd) accept = false;
        pos++;
      } else pos = end;
      prevEnd = end;
      if (accept) out.push({ start, end, groups: [...m] });
    }
    return out;
  }
}

/** The first position from `pos` where a match can start (see Span); -1 when none can. */
function spanStart(span: Span, s: string, pos: number): number {
  span.anchorSearch.lastIndex = pos;
  if (!span.anchorSearch.test(s)) return -1;
  const anchor = span.anchorSearch.lastIndex - 1;
  let start = anchor;
  while (start > pos && span.alphabet[s.charCodeAt(start - 1)] === 1) start--;
  return start;
}

/**
 * The irregexp form of an RE2 pattern when it is safe to use (see the top of this file), else null.
 * `keepCaptures`: whether the caller reads capture groups.
 */
export function irregexpFor(pattern: string, keepCaptures: boolean): IrregexpPattern | null {
  const translation = translateRe2(pattern, keepCaptures);
  if (translation === null || !linearFallbackInForce()) return null;
  try {
    new RegExp(translation.source, 'l');
    return new IrregexpPattern(translation);
  } catch {
    return null; // refused by the linear engine, or too large or deep for V8 (x{0,1000} nests 1000 groups)
  }
}
