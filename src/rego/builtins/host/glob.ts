// glob.match (gobwas/glob syntax, as OPA uses it) compiled to RE2, glob.quote_meta, and
// regex.globs_match (do two "regex-globs" — literals, `.`, `[...]`, `*`, `+` — share a string?).
import { RE2JS } from 're2js';
import type { HostImpls } from './registry.ts';
import { BuiltinError, BuiltinTypeError, operandError, str, typeName } from './values.ts';

const globCache = new Map<string, RE2JS>();

const escapeClassChar = (ch: string): string => (/[\\\][^-]/.test(ch) ? '\\' + ch : ch);

/** Translates a gobwas glob into an anchored RE2 pattern. `seps` are the delimiter runes. */
export function globToRegex(pattern: string, seps: string[]): string {
  const notSep = seps.length ? `[^${seps.map(escapeClassChar).join('')}]` : '(?s:.)';
  const chars = Array.from(pattern);
  let i = 0;

  const parseSeq = (inAlt: boolean): string => {
    let out = '';
    while (i < chars.length) {
      const c = chars[i];
      if (inAlt && (c === ',' || c === '}')) return out;
      i++;
      switch (c) {
        case '\\':
          if (i >= chars.length) throw new BuiltinError(`unexpected end of input after escape in glob ${pattern}`);
          out += RE2JS.quote(chars[i++]);
          break;
        case '*':
          if (chars[i] === '*') {
            i++;
            out += '(?s:.*)';
          } else out += `${notSep}*`;
          break;
        case '?':
          out += notSep;
          break;
        case '[': {
          let negated = false;
          if (chars[i] === '!') {
            negated = true;
            i++;
          }
          let body = '';
          let closed = false;
          while (i < chars.length) {
            const d = chars[i++];
            if (d === ']') {
              closed = true;
              break;
            }
            if (d === '-' && body !== '' && chars[i] !== ']') body += '-';
            else body += escapeClassChar(d === '\\' && i < chars.length ? chars[i++] : d);
          }
          if (!closed || body === '')
            throw new BuiltinError(`unexpected end of input: unclosed character class in glob ${pattern}`);
          out += `[${negated ? '^' : ''}${body}]`;
          break;
        }
        case '{': {
          const alts: string[] = [];
          for (;;) {
            alts.push(parseSeq(true));
            if (i >= chars.length)
              throw new BuiltinError(`unexpected end of input: unclosed alternatives in glob ${pattern}`);
            const sep = chars[i++];
            if (sep === '}') break;
          }
          out += `(?:${alts.join('|')})`;
          break;
        }
        default:
          out += RE2JS.quote(c);
      }
    }
    return out;
  };

  const body = parseSeq(false);
  return `^${body}$`;
}

function compileGlob(pattern: string, seps: string[]): RE2JS {
  const key = seps.join('\u0000') + '\u0001' + pattern;
  let re = globCache.get(key);
  if (!re) {
    try {
      re = RE2JS.compile(globToRegex(pattern, seps));
    } catch (e) {
      if (e instanceof BuiltinError) throw e;
      throw new BuiltinError((e as Error).message);
    }
    if (globCache.size > 512) globCache.delete(globCache.keys().next().value as string);
    globCache.set(key, re);
  }
  return re;
}

// ---- regex.globs_match -------------------------------------------------------------------------

interface CharSet {
  negated: boolean;
  ranges: [number, number][];
}
interface Token {
  set: CharSet;
  star: boolean;
}

const ANY: CharSet = { negated: true, ranges: [] };
const single = (cp: number): CharSet => ({ negated: false, ranges: [[cp, cp]] });

function parseRegexGlob(p: string): Token[] {
  const cps = Array.from(p).map((c) => c.codePointAt(0)!);
  const tokens: Token[] = [];
  let i = 0;
  while (i < cps.length) {
    const c = String.fromCodePoint(cps[i++]);
    let set: CharSet;
    if (c === '.') set = ANY;
    else if (c === '\\') {
      if (i >= cps.length) throw new BuiltinError(`trailing backslash in ${p}`);
      set = single(cps[i++]);
    } else if (c === '[') {
      const cls: CharSet = { negated: false, ranges: [] };
      if (cps[i] === 0x5e /* ^ */) {
        cls.negated = true;
        i++;
      }
      let closed = false;
      while (i < cps.length) {
        let lo = cps[i++];
        if (lo === 0x5d /* ] */ && cls.ranges.length > 0) {
          closed = true;
          break;
        }
        if (lo === 0x5c /* \ */ && i < cps.length) lo = cps[i++];
        let hi = lo;
        if (cps[i] === 0x2d /* - */ && i + 1 < cps.length && cps[i + 1] !== 0x5d) {
          hi = cps[i + 1];
          if (hi === 0x5c && i + 2 < cps.length) {
            hi = cps[i + 2];
            i++;
          }
          i += 2;
        }
        if (hi < lo) throw new BuiltinError(`invalid character class range in ${p}`);
        cls.ranges.push([lo, hi]);
      }
      if (!closed) throw new BuiltinError(`unclosed character class in ${p}`);
      set = cls;
    } else if (c === '*' || c === '+') {
      throw new BuiltinError(`quantifier ${c} without a preceding token in ${p}`);
    } else set = single(cps[i - 1]);
    const q = i < cps.length ? String.fromCodePoint(cps[i]) : '';
    if (q === '*') {
      i++;
      tokens.push({ set, star: true });
    } else if (q === '+') {
      i++;
      tokens.push({ set, star: false }, { set, star: true });
    } else tokens.push({ set, star: false });
  }
  return tokens;
}

const inSet = (s: CharSet, cp: number): boolean => s.ranges.some(([lo, hi]) => cp >= lo && cp <= hi) !== s.negated;

/** Whether two character sets share a code point: only range borders (±1) need checking. */
function setsIntersect(a: CharSet, b: CharSet): boolean {
  const cands = new Set<number>([0, 0x61, 0x10ffff]);
  for (const [lo, hi] of [...a.ranges, ...b.ranges])
    for (const c of [lo - 1, lo, hi, hi + 1]) if (c >= 0 && c <= 0x10ffff) cands.add(c);
  for (const c of cands) if (inSet(a, c) && inSet(b, c)) return true;
  return false;
}

/** Emptiness check of the product automaton of the two patterns. */
export function regexGlobsIntersect(p1: string, p2: string): boolean {
  const a = parseRegexGlob(p1);
  const b = parseRegexGlob(p2);
  const seen = new Set<string>();
  const stack: [number, number][] = [[0, 0]];
  while (stack.length) {
    const [i, j] = stack.pop()!;
    const key = `${i},${j}`;
    if (seen.has(key)) continue;
    seen.add(key);
    if (i === a.length && j === b.length) return true;
    // Starred tokens may match nothing.
    if (i < a.length && a[i].star) stack.push([i + 1, j]);
    if (j < b.length && b[j].star) stack.push([i, j + 1]);
    if (i < a.length && j < b.length && setsIntersect(a[i].set, b[j].set)) {
      stack.push([a[i].star ? i : i + 1, b[j].star ? j : j + 1]);
    }
  }
  return false;
}

export const globBuiltins: HostImpls = {
  'glob.match'([pattern, delimiters, match]) {
    const p = str(pattern, 1);
    let seps: string[];
    if (delimiters === null) seps = [];
    else if (Array.isArray(delimiters)) {
      seps = [];
      for (const d of delimiters) {
        if (typeof d !== 'string')
          throw new BuiltinTypeError(`operand 2 must be array of strings but got array containing ${typeName(d)}`);
        // OPA: each delimiter is exactly one rune.
        if (Array.from(d).length !== 1)
          throw new BuiltinTypeError('operand 2 must be array of runes but got array containing string');
        seps.push(d);
      }
      // OPA: an empty delimiter list means the default, ".".
      if (delimiters.length === 0) seps = ['.'];
    } else throw operandError(2, 'one of {array, null}', delimiters);
    return compileGlob(p, seps).testExact(str(match, 3));
  },
  'glob.quote_meta': ([s]) =>
    Array.from(str(s, 1))
      .map((c) => ('*?\\[]{}'.includes(c) ? '\\' + c : c))
      .join(''),
  'regex.globs_match': ([a, b]) => regexGlobsIntersect(str(a, 1), str(b, 2)),
};
