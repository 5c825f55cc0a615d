// Regular-expression builtins with RE2 semantics (re2js), as OPA uses Go's regexp: linear-time
// matching, no backreferences or lookaround, so policies cannot be made to backtrack forever. Patterns in
// the subset regex-irregexp.ts proves equivalent run on V8's irregexp instead, with the same guarantees.
import { utf8Bytes } from '../../utf8.ts';
import { RE2JS } from 're2js';
import type { HostImpls } from './registry.ts';
import { goQuote } from './format.ts';
import { irregexpEnabled, irregexpFor, type Found, type IrregexpPattern } from './regex-irregexp.ts';
import { BuiltinError, int, str } from './values.ts';

/**
 * Compiled patterns by text, at most `limit`: policies reuse a handful of patterns on every request. A hit
 * reads one map and writes nothing (an LRU's delete and re-insert on every hit is measurable in a process with
 * a large heap, and a PII evaluation makes several); patterns in use stay by moving to `recent` when `older` is
 * dropped.
 */
class PatternCache<T> {
  private recent = new Map<string, T>();
  private older = new Map<string, T>();
  constructor(private readonly limit: number) {}
  get(key: string, make: () => T): T {
    const hit = this.recent.get(key);
    if (hit !== undefined) return hit;
    const value = this.older.get(key) ?? make();
    if (this.recent.size >= this.limit / 2) {
      this.older = this.recent;
      this.recent = new Map();
    }
    this.recent.set(key, value);
    return value;
  }
}

/** An RE2 pattern, with its irregexp forms made on first use (null: outside the subset, re2js answers). */
class CompiledRegex {
  private whole?: IrregexpPattern | null;
  private withGroups?: IrregexpPattern | null;
  constructor(
    readonly pattern: string,
    readonly re2: RE2JS,
  ) {}

  private irregexp(groups: boolean): IrregexpPattern | null {
    if (!irregexpEnabled()) return null;
    return groups
      ? (this.withGroups ??= irregexpFor(this.pattern, true))
      : (this.whole ??= irregexpFor(this.pattern, false));
  }

  test(s: string): boolean {
    return this.irregexp(false)?.test(s) ?? this.re2.test(s);
  }

  /** Go's FindAllStringSubmatchIndex(s, n); without `groups` only groups[0] is filled. */
  findAll(s: string, n: number, groups: boolean): Found[] {
    const found = this.irregexp(groups)?.findAll(s, n);
    if (found !== undefined) return found;
    const indexes = (this.re2.re2().findAllSubmatchIndex(s, n) as number[][] | null) ?? [];
    return indexes.map((m) => {
      const texts: (string | undefined)[] = [];
      for (let g = 0; g < (groups ? m.length : 1); g += 2) texts.push(m[g] >= 0 ? s.slice(m[g], m[g + 1]) : undefined);
      return { start: m[0], end: m[1], groups: texts };
    });
  }
}

const regexCache = new PatternCache<CompiledRegex>(512);

/** Compiles a Go/RE2 pattern; syntax errors become builtin errors with Go's wording. */
export function compileRegex(pattern: string): CompiledRegex {
  return regexCache.get(pattern, () => {
    try {
      return new CompiledRegex(pattern, RE2JS.compile(pattern));
    } catch (e) {
      throw new BuiltinError((e as Error).message);
    }
  });
}

/** Go's Regexp.Split(s, -1). */
function goRegexSplit(re: CompiledRegex, s: string): string[] {
  if (s === '' && re.pattern !== '') return [''];
  const out: string[] = [];
  let beg = 0;
  let end = 0;
  for (const m of re.findAll(s, -1, false)) {
    end = m.start;
    if (m.end !== 0) out.push(s.slice(beg, end));
    beg = m.end;
  }
  if (end !== s.length) out.push(s.slice(beg));
  return out;
}

/** Go's Regexp.Expand template syntax: `$1`, `${1}`, `$name`, `${name}`, `$$`. */
function expand(template: string, groups: (string | undefined)[], names: Record<string, number>): string {
  let out = '';
  for (let i = 0; i < template.length; i++) {
    const c = template[i];
    if (c !== '$' || i + 1 >= template.length) {
      out += c;
      continue;
    }
    if (template[i + 1] === '$') {
      out += '$';
      i++;
      continue;
    }
    let name: string;
    let next: number;
    if (template[i + 1] === '{') {
      const close = template.indexOf('}', i + 2);
      const inner = close === -1 ? '' : template.slice(i + 2, close);
      if (close === -1 || !/^[A-Za-z0-9_]+$/.test(inner)) {
        out += c; // malformed: the '$' is literal
        continue;
      }
      name = inner;
      next = close;
    } else {
      const mm = /^[A-Za-z0-9_]+/.exec(template.slice(i + 1));
      if (!mm) {
        out += c;
        continue;
      }
      name = mm[0];
      next = i + mm[0].length;
    }
    let group = -1;
    if (/^\d+$/.test(name)) group = Number(name);
    else if (name in names) group = names[name];
    if (group >= 0 && group < groups.length) out += groups[group] ?? '';
    i = next;
  }
  return out;
}

/** Go's ReplaceAllString. */
function goReplaceAll(re: CompiledRegex, s: string, template: string): string {
  const names = re.re2.namedGroups();
  let out = '';
  let last = 0;
  for (const m of re.findAll(s, -1, true)) {
    out += s.slice(last, m.start) + expand(template, m.groups, names);
    last = m.end;
  }
  return out + s.slice(last);
}

/** OPA's regex.template_match: regex fragments between (single-character) delimiters, literal text elsewhere, anchored. */
function templateToRegex(template: string, open: string, close: string): string {
  // First-level delimiter positions; a close before any open, or an unclosed open, is unbalanced.
  const idxs: number[] = [];
  let level = 0;
  let start = 0;
  for (let i = 0; i < template.length; i++) {
    const c = template[i];
    if (c === open) {
      if (++level === 1) start = i;
    } else if (c === close) {
      if (--level === 0) idxs.push(start, i + 1);
      else if (level < 0) throw new BuiltinError(`unbalanced braces in ${goQuote(template)}`);
    }
  }
  if (level !== 0) throw new BuiltinError(`unbalanced braces in ${goQuote(template)}`);
  let out = '^';
  let end = 0;
  for (let i = 0; i < idxs.length; i += 2) {
    const fragment = template.slice(idxs[i] + 1, idxs[i + 1] - 1);
    compileRegex(`^${fragment}$`); // each fragment must be a valid regex on its own
    out += RE2JS.quote(template.slice(end, idxs[i])) + '(' + fragment + ')';
    end = idxs[i + 1];
  }
  return out + RE2JS.quote(template.slice(end)) + '$';
}

export const regexBuiltins: HostImpls = {
  'regex.match': ([p, s]) => compileRegex(str(p, 1)).test(str(s, 2)),
  'regex.is_valid'([p]) {
    if (typeof p !== 'string') return false;
    try {
      compileRegex(p);
      return true;
    } catch {
      return false;
    }
  },
  'regex.find_n'([p, s, n]) {
    return compileRegex(str(p, 1))
      .findAll(str(s, 2), int(n, 3), false)
      .map((m) => m.groups[0] as string);
  },
  'regex.find_all_string_submatch_n'([p, s, n]) {
    return compileRegex(str(p, 1))
      .findAll(str(s, 2), int(n, 3), true)
      .map((m) => m.groups.map((g) => g ?? ''));
  },
  'regex.split': ([p, s]) => goRegexSplit(compileRegex(str(p, 1)), str(s, 2)),
  // Note OPA's operand order: regex.replace(s, pattern, value).
  'regex.replace': ([s, p, v]) => goReplaceAll(compileRegex(str(p, 2)), str(s, 1), str(v, 3)),
  'regex.template_match'([t, s, open, close]) {
    const template = str(t, 1);
    str(s, 2);
    const start = str(open, 3);
    const end = str(close, 4);
    // OPA counts bytes here (Go len); both messages report the start delimiter's length, as OPA does.
    if (utf8Bytes(start).length !== 1)
      throw new BuiltinError(
        `start delimiter has to be exactly one character long but is ${utf8Bytes(start).length} long`,
      );
    if (utf8Bytes(end).length !== 1)
      throw new BuiltinError(
        `end delimiter has to be exactly one character long but is ${utf8Bytes(start).length} long`,
      );
    const pattern = templateToRegex(template, start, end);
    return compileRegex(pattern).test(str(s, 2));
  },
};
