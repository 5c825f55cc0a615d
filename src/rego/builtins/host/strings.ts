// String builtins with Go's semantics: positions and lengths count Unicode code points (runes),
// not UTF-16 units, as OPA does.
import type { HostImpls } from './registry.ts';
import { BuiltinError, BuiltinTypeError, int, isObject, num, operandError, str, stringList } from './values.ts';

const runes = (s: string): string[] => Array.from(s);

/** Index (in runes) of the first occurrence of `sub` in `s` at or after rune `from`, or -1. */
function runeIndexOf(rs: string[], sub: string[], from = 0): number {
  outer: for (let i = from; i + sub.length <= rs.length; i++) {
    for (let j = 0; j < sub.length; j++) if (rs[i + j] !== sub[j]) continue outer;
    return i;
  }
  return -1;
}

// Go's unicode.IsSpace (strings.TrimSpace); JS's \s also strips U+FEFF, Go does not.
const goSpace = new Set([
  0x09, 0x0a, 0x0b, 0x0c, 0x0d, 0x20, 0x85, 0xa0, 0x1680, 0x2000, 0x2001, 0x2002, 0x2003, 0x2004, 0x2005, 0x2006,
  0x2007, 0x2008, 0x2009, 0x200a, 0x2028, 0x2029, 0x202f, 0x205f, 0x3000,
]);

function trimRunes(s: string, drop: (r: string) => boolean, left: boolean, right: boolean): string {
  const rs = runes(s);
  let a = 0;
  let b = rs.length;
  if (left) while (a < b && drop(rs[a])) a++;
  if (right) while (b > a && drop(rs[b - 1])) b--;
  return rs.slice(a, b).join('');
}

const inCutset = (cutset: string) => {
  const set = new Set(runes(cutset));
  return (r: string) => set.has(r);
};

/**
 * Go's strings.ToUpper/ToLower use simple (one rune → one rune) case mapping; JS applies full and
 * context-sensitive mappings ("ß" → "SS", final sigma). Map rune by rune and keep runes whose
 * mapping is not a single rune.
 */
function goCase(s: string, upper: boolean): string {
  if (/^[\x00-\x7f]*$/.test(s)) return upper ? s.toUpperCase() : s.toLowerCase();
  let out = '';
  for (const ch of s) {
    // U+0130 (İ): JS lowercases to "i" + combining dot; Go's simple mapping gives "i".
    const m = !upper && ch === '\u0130' ? 'i' : upper ? ch.toUpperCase() : ch.toLowerCase();
    out += m.length === ch.length || Array.from(m).length === 1 ? m : ch;
  }
  return out;
}

/** Go's strings.Split: an empty separator splits into runes. */
export function goSplit(s: string, sep: string): string[] {
  if (sep === '') return runes(s);
  return s.split(sep);
}

/** Go's strings.Count: non-overlapping occurrences; an empty substring counts rune boundaries. */
function goCount(s: string, sub: string): number {
  if (sub === '') return runes(s).length + 1;
  let n = 0;
  for (let i = s.indexOf(sub); i !== -1; i = s.indexOf(sub, i + sub.length)) n++;
  return n;
}

/** Go's strings.ReplaceAll: an empty `old` inserts `repl` around every rune. */
function goReplaceAll(s: string, old: string, repl: string): string {
  if (old === '') {
    const rs = runes(s);
    return repl + rs.map((r) => r + repl).join('');
  }
  return s.split(old).join(repl);
}

/** Go's strings.NewReplacer(...).Replace: leftmost match wins; at equal positions the earlier pair. */
function replaceMany(s: string, pairs: [string, string][]): string {
  let out = '';
  let i = 0;
  while (i <= s.length) {
    let matched = false;
    for (const [old, repl] of pairs) {
      if (old === '') continue;
      if (s.startsWith(old, i)) {
        out += repl;
        i += old.length;
        matched = true;
        break;
      }
    }
    if (!matched) {
      if (i < s.length) {
        const cp = s.codePointAt(i)!;
        const ch = String.fromCodePoint(cp);
        out += ch;
        i += ch.length;
      } else break;
    }
  }
  return out;
}

/** Operand of any_prefix_match/any_suffix_match: a string, or an array/set of strings. */
function stringOrStrings(v: unknown, pos: number): string[] {
  if (typeof v === 'string') return [v];
  if (!Array.isArray(v)) throw operandError(pos, 'one of {string, set, array}', v);
  return stringList(v, pos);
}

export const stringBuiltins: HostImpls = {
  concat([delim, list]) {
    const d = str(delim, 1);
    if (!Array.isArray(list)) throw operandError(2, 'one of {set, array}', list);
    return stringList(list, 2).join(d);
  },
  contains: ([s, sub]) => str(s, 1).includes(str(sub, 2)),
  startswith: ([s, p]) => str(s, 1).startsWith(str(p, 2)),
  endswith: ([s, p]) => str(s, 1).endsWith(str(p, 2)),
  indexof([s, sub]) {
    const base = runes(str(s, 1));
    const search = str(sub, 2);
    if (search === '') throw new BuiltinError('empty search character');
    return runeIndexOf(base, runes(search));
  },
  indexof_n([s, sub]) {
    const base = runes(str(s, 1));
    if (str(sub, 2) === '') throw new BuiltinError('empty search character');
    const search = runes(sub as string);
    const out: number[] = [];
    // Overlapping occurrences, as OPA reports them.
    for (let i = runeIndexOf(base, search); i !== -1; i = runeIndexOf(base, search, i + 1)) out.push(i);
    return out;
  },
  lower: ([s]) => goCase(str(s, 1), false),
  upper: ([s]) => goCase(str(s, 1), true),
  replace: ([s, old, repl]) => goReplaceAll(str(s, 1), str(old, 2), str(repl, 3)),
  'strings.replace_n'([patterns, s]) {
    if (!isObject(patterns)) throw operandError(1, 'object', patterns);
    const input = str(s, 2);
    const pairs: [string, string][] = [];
    for (const key of Object.keys(patterns).sort()) {
      const v = patterns[key];
      if (typeof v !== 'string') throw new BuiltinTypeError('operand 1 non-string value found in pattern object');
      pairs.push([key, v]);
    }
    return replaceMany(input, pairs);
  },
  split: ([s, d]) => goSplit(str(s, 1), str(d, 2)),
  'strings.split_n'([s, d, n]) {
    const parts = goSplit(str(s, 1), str(d, 2));
    const limit = int(n, 3);
    if (limit === 0) return [];
    if (limit < 0) return parts.slice(Math.max(0, parts.length + limit));
    if (parts.length <= limit) return parts;
    // Go's SplitN: the last part holds the unsplit remainder.
    const head = parts.slice(0, limit - 1);
    const sep = str(d, 2);
    if (sep === '')
      return [
        ...head,
        runes(s as string)
          .slice(limit - 1)
          .join(''),
      ];
    return [...head, parts.slice(limit - 1).join(sep)];
  },
  substring([s, start, length]) {
    const rs = runes(str(s, 1));
    const from = int(start, 2);
    const len = int(length, 3);
    if (from < 0) throw new BuiltinError('negative offset');
    if (from >= rs.length) return '';
    if (len < 0) return rs.slice(from).join('');
    return rs.slice(from, Math.min(rs.length, from + len)).join('');
  },
  trim: ([s, c]) => trimRunes(str(s, 1), inCutset(str(c, 2)), true, true),
  trim_left: ([s, c]) => trimRunes(str(s, 1), inCutset(str(c, 2)), true, false),
  trim_right: ([s, c]) => trimRunes(str(s, 1), inCutset(str(c, 2)), false, true),
  trim_prefix([s, p]) {
    const base = str(s, 1);
    const prefix = str(p, 2);
    return base.startsWith(prefix) ? base.slice(prefix.length) : base;
  },
  trim_suffix([s, p]) {
    const base = str(s, 1);
    const suffix = str(p, 2);
    return suffix !== '' && base.endsWith(suffix) ? base.slice(0, base.length - suffix.length) : base;
  },
  trim_space: ([s]) => trimRunes(str(s, 1), (r) => goSpace.has(r.codePointAt(0)!), true, true),
  'strings.reverse': ([s]) => runes(str(s, 1)).reverse().join(''),
  'strings.count': ([s, sub]) => goCount(str(s, 1), str(sub, 2)),
  'strings.any_prefix_match'([a, b]) {
    const subjects = stringOrStrings(a, 1);
    const prefixes = stringOrStrings(b, 2);
    return subjects.some((s) => prefixes.some((p) => s.startsWith(p)));
  },
  'strings.any_suffix_match'([a, b]) {
    const subjects = stringOrStrings(a, 1);
    const suffixes = stringOrStrings(b, 2);
    return subjects.some((s) => suffixes.some((p) => s.endsWith(p)));
  },
  format_int([n, b]) {
    const value = num(n, 1);
    const base = num(b, 2);
    if (![2, 8, 10, 16].includes(base)) throw new BuiltinTypeError('operand 2 must be one of {2, 8, 10, 16}');
    if (typeof n === 'bigint') return n.toString(base);
    // big.Float.Int truncates toward zero.
    return BigInt(Math.trunc(value)).toString(base);
  },
};
