// Google's RE2 (the `re2` native addon) behind the regex host builtins. re2js, a JS port of Go's regexp,
// simulates an NFA at ≈ 0.1–0.6 µs per character per pattern: a 4 KiB text full of digits cost the PII
// library ≈ 4 ms (issue #5). RE2 runs the same syntax and leftmost-first semantics with a DFA, still in
// linear time (no backtracking, so no ReDoS), at ≈ 10 µs per 4 KiB. re2js stays the reference: it parses
// every pattern first (Go's error texts, and the group names `$name` templates need), and runs whatever
// this module declines — patterns the addon would rewrite differently, ill-formed UTF-16, a missing addon.
import { createRequire } from 'node:module';
import type RE2 from 're2';

type Re2Constructor = typeof RE2;

/** The addon, or null when it is not installed or not built (re2js then runs every pattern). */
const Re2: Re2Constructor | null = (() => {
  try {
    return createRequire(import.meta.url)('re2') as Re2Constructor;
  } catch {
    return null;
  }
})();

export const re2Available = Re2 !== null;

/** Match offsets: [start, end] per group (group 0 first), -1 for a group that did not participate. */
export type MatchIndex = number[];

/** The matched text in the unit of its match offsets (UTF-16 code units, or UTF-8 bytes). */
export interface Subject {
  readonly length: number;
  slice(start: number, end: number): string;
}

/** A UTF-8 subject: offsets are bytes; slices decode them (RE2 never splits a UTF-8 sequence). */
class Utf8Subject implements Subject {
  constructor(readonly bytes: Buffer) {}
  get length(): number {
    return this.bytes.length;
  }
  slice(start: number, end: number): string {
    return this.bytes.toString('utf8', start, end);
  }
}

// node-re2 rewrites JS RegExp syntax into RE2's before compiling. On Go syntax that rewrite is the identity
// except for: `\Q…\E` (it escapes a `/` inside, making it two literal characters), `(?<` inside a
// character class (it turns it into `(?P<`, adding `P` to the class) and `\p{…}`/`\P{…}` (names it expands
// itself, with its own idea of being inside a class). Patterns holding those run on re2js.
const REWRITTEN_BY_ADDON = /\\Q|\(\?<|\\[pP]\{/;

// A lone surrogate has no UTF-8 form: the addon would see U+FFFD where re2js sees the surrogate.
const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;
// String.prototype.isWellFormed (ES2024, in Node 20) is ≈ 10× faster than the search; not in our TS lib.
const nativeIsWellFormed = (String.prototype as { isWellFormed?: (this: string) => boolean }).isWellFormed;

export function isWellFormedUtf16(s: string): boolean {
  return nativeIsWellFormed ? nativeIsWellFormed.call(s) : !LONE_SURROGATE.test(s);
}

class Re2Cache {
  private readonly map = new Map<string, RE2 | null>();
  constructor(private readonly limit: number) {}
  get(pattern: string): RE2 | null {
    const hit = this.map.get(pattern);
    if (hit !== undefined) {
      this.map.delete(pattern);
      this.map.set(pattern, hit);
      return hit;
    }
    const compiled = compileRe2(pattern);
    this.map.set(pattern, compiled);
    if (this.map.size > this.limit) this.map.delete(this.map.keys().next().value as string);
    return compiled;
  }
}

function compileRe2(pattern: string): RE2 | null {
  if (Re2 === null || REWRITTEN_BY_ADDON.test(pattern) || !isWellFormedUtf16(pattern)) return null;
  try {
    // `u`: RE2 matches code points (always, the flag only silences the addon); `g`: searches start at
    // lastIndex with the text before it as context (for \b, ^), as Go's FindAll does; `d`: group offsets.
    return new Re2(pattern, 'gud');
  } catch {
    return null; // RE2 refused what re2js (Go's grammar) accepted, e.g. over its program-size budget
  }
}

// Fewer than re2js's 512: each RE2 object may grow its lazily built DFA up to RE2's default budget (8 MiB)
// outside the JS heap; the library itself uses about 15 patterns.
const cache = new Re2Cache(128);

/**
 * The RE2 program for a pattern re2js has already accepted, or null when re2js must run it (see
 * REWRITTEN_BY_ADDON). Cached, bounded.
 */
export function re2For(pattern: string): RE2 | null {
  return Re2 === null ? null : cache.get(pattern);
}

/** Byte length of the UTF-8 sequence starting with `lead` (the subject is always valid UTF-8). */
function utf8Width(lead: number): number {
  return lead < 0x80 ? 1 : lead < 0xe0 ? 2 : lead < 0xf0 ? 3 : 4;
}

/**
 * Go's Regexp.FindAllSubmatchIndex(s, n) on RE2: successive non-overlapping matches, an empty match
 * abutting the previous match skipped, the search moving one code point past an empty match. `s` must be
 * well-formed UTF-16. Offsets are in the returned subject's units (bytes, or code units for ASCII text).
 */
export function re2FindAll(re: RE2, s: string, n: number): { subject: Subject; matches: MatchIndex[] } {
  const bytes = Buffer.from(s, 'utf8');
  // ASCII: byte offsets are UTF-16 offsets, so slices come from the string without decoding.
  const subject: Subject = bytes.length === s.length ? s : new Utf8Subject(bytes);
  const matches: MatchIndex[] = [];
  const end = bytes.length;
  let pos = 0;
  let prevEnd = -1;
  while ((n < 0 || matches.length < n) && pos <= end) {
    re.lastIndex = pos;
    const m = re.exec(bytes);
    if (m === null) break;
    const indices = m.indices as (readonly [number, number] | undefined)[];
    const [start, stop] = indices[0] as readonly [number, number];
    let accept = true;
    if (stop === pos) {
      // An empty match at pos: not right after the previous match; go on one code point further.
      if (start === prevEnd) accept = false;
      pos += pos < end ? utf8Width(bytes[pos]) : 1;
    } else {
      pos = stop;
    }
    prevEnd = stop;
    if (accept) {
      const flat: MatchIndex = [];
      for (const g of indices) flat.push(g ? g[0] : -1, g ? g[1] : -1);
      matches.push(flat);
    }
  }
  return { subject, matches };
}

/**
 * Go's Regexp.FindAllString(s, n) on RE2. The addon's global match (one native call, strings back) follows
 * JS's RegExp semantics, which agree with Go's as long as no match is empty (they differ only in how they
 * go on after an empty match); with an empty match in the result, the Go loop above runs instead. ≈ 15×
 * cheaper per match than one exec per match (≈ 5 µs each, the result object built through the addon).
 */
export function re2FindStrings(re: RE2, s: string, n: number): string[] {
  if (n === 0) return [];
  re.lastIndex = 0;
  const found: string[] = re.match(s) ?? [];
  if (found.includes('')) {
    const { subject, matches } = re2FindAll(re, s, n);
    return matches.map((m) => subject.slice(m[0], m[1]));
  }
  return n < 0 || found.length <= n ? found : found.slice(0, n);
}

/** Whether RE2 finds a match anywhere in `s`. */
export function re2Test(re: RE2, s: string): boolean {
  re.lastIndex = 0;
  return re.test(s);
}
