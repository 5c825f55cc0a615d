// The irregexp path of the regex builtins against re2js (the engine with Go's semantics): random patterns of
// the translated subset and the library's own patterns, random texts (ASCII, separators, non-ASCII, astral
// characters, lone surrogates), every regex builtin; the linear engine V8 falls back to must agree too.
import { readFileSync } from 'node:fs';
import fc from 'fast-check';
import { RE2JS } from 're2js';
import { afterEach, describe, expect, it } from 'vitest';
import { evaluateQuery } from '../../../src/rego/index.ts';
import {
  IRREGEXP_MAX_TEXT,
  IrregexpPattern,
  irregexpFor,
  linearFallbackInForce,
  setIrregexpEnabled,
  translateRe2,
  type Found,
} from '../../../src/rego/builtins/host/regex-irregexp.ts';
import { call } from './call.ts';

const config = JSON.parse(readFileSync(new URL('../../../rego/data.json', import.meta.url), 'utf8')).acs_config;
const piiPatterns: Record<string, string> = config.pii.patterns;
const nationalPhones: Record<string, string> = config.pii.national_phones;
// Built as rego/acs/pii and rego/acs/baseline build them.
const nationalPhonePattern = Object.values(nationalPhones)
  .map((p) => `(?:${p})`)
  .join('|');
const destructivePattern = `(?:${(config.baseline.destructive_shell_patterns as string[]).join(')|(?:')})`;
const libraryPatterns: Record<string, string> = {
  ...piiPatterns,
  ...nationalPhones,
  national_phone: nationalPhonePattern,
  destructive: destructivePattern,
};

afterEach(() => setIrregexpEnabled(true));

/** re2js's answer in the shape of IrregexpPattern.findAll. */
function re2FindAll(pattern: string, s: string, n: number): Found[] {
  const indexes = (RE2JS.compile(pattern).re2().findAllSubmatchIndex(s, n) as number[][] | null) ?? [];
  return indexes.map((m) => {
    const groups: (string | undefined)[] = [];
    for (let g = 0; g < m.length; g += 2) groups.push(m[g] >= 0 ? s.slice(m[g], m[g + 1]) : undefined);
    return { start: m[0], end: m[1], groups };
  });
}

const wholeMatches = (found: Found[]) => found.map((f) => ({ start: f.start, end: f.end, text: f.groups[0] }));

/** Every builtin on the path, once with irregexp allowed and once on re2js only. */
function everyBuiltin(pattern: string, s: string, n: number): unknown[] {
  return [
    call('regex.match', pattern, s),
    call('regex.find_n', pattern, s, n),
    call('regex.find_all_string_submatch_n', pattern, s, n),
    call('regex.split', pattern, s),
    call('regex.replace', s, pattern, '<$0|$1|${2}>'),
  ];
}

/** How many comparisons irregexp (or the linear engine) answered itself. */
let answered = 0;

function expectSameAsRe2(pattern: string, s: string, n: number): void {
  // The translated forms (irregexp, and the linear engine it falls back to) against re2js directly.
  const expected = re2FindAll(pattern, s, n);
  for (const keepCaptures of [false, true]) {
    const t = translateRe2(pattern, keepCaptures);
    if (t === null) continue;
    for (const flags of ['', 'l']) {
      let fast: IrregexpPattern;
      try {
        fast = new IrregexpPattern(t, flags);
      } catch {
        continue; // the linear engine refuses it; irregexpFor refuses it too
      }
      // undefined: this text is not for irregexp (a surrogate pair for a rune-sensitive pattern, or a call
      // was slow); the builtins then answer with re2js, compared below.
      const found = fast.findAll(s, n);
      if (found !== undefined) {
        answered++;
        if (keepCaptures) expect(found, `${flags} /${t.source}/`).toEqual(expected);
        else expect(wholeMatches(found), `${flags} /${t.source}/`).toEqual(wholeMatches(expected));
      }
      const matched = fast.test(s);
      if (matched !== undefined) expect(matched).toBe(RE2JS.compile(pattern).test(s));
    }
  }
  // The builtins, fast path on and off.
  const withIrregexp = everyBuiltin(pattern, s, n);
  setIrregexpEnabled(false);
  const onRe2 = everyBuiltin(pattern, s, n);
  setIrregexpEnabled(true);
  expect(withIrregexp).toEqual(onRe2);
}

const compiles = (p: string) => {
  try {
    RE2JS.compile(p);
    return true;
  } catch {
    return false;
  }
};

// A grammar of the translated subset, with a few constructs outside it mixed in (they must fall back).
const literal = fc.constantFrom(
  'a',
  'b',
  'k',
  'K',
  's',
  '0',
  '1',
  ' ',
  '-',
  '_',
  '\\.',
  '\\-',
  '\\n',
  '\\t',
  '\\{',
  '{',
  '}',
  ',',
  '/',
  '\\\\',
);
const charClass = fc.constantFrom(
  '[a-c]',
  '[^a]',
  '[0-9 ]',
  '[^\\n]',
  '[]a]',
  '[a-]',
  '[^-0-9]',
  '[\\d\\s]',
  '[\\w.]',
  '[kS]',
  '[A-Z]',
);
const perl = fc.constantFrom('\\d', '\\w', '\\s', '\\D', '\\W', '\\S', '.');
const assertion = fc.constantFrom('^', '$', '\\b', '\\B', '\\A', '\\z');
const outside = fc.constantFrom('é', '\\pL', '(?s:.)', '[[:digit:]]', '\\x41', '(?U)a*', '(?m)^a', 'ſ', '\\Q.\\E');
const quantifier = fc.constantFrom(
  '*',
  '+',
  '?',
  '*?',
  '+?',
  '??',
  '{2}',
  '{0,3}',
  '{1,}',
  '{2,4}?',
  '{17}',
  '{3,20}',
  '{0,18}',
  '{16,}',
);

const { regex } = fc.letrec((tie) => ({
  regex: fc.oneof(
    { depthSize: 'small', withCrossShrink: true },
    literal,
    charClass,
    perl,
    assertion,
    fc.tuple(tie('regex'), quantifier).map(([r, q]) => `(?:${r})${q}`),
    fc.tuple(literal, quantifier).map(([r, q]) => r + q),
    fc.tuple(charClass, quantifier).map(([r, q]) => r + q),
    fc.array(tie('regex'), { minLength: 2, maxLength: 4 }).map((rs) => rs.join('')),
    fc.tuple(tie('regex'), tie('regex')).map(([a, b]) => `${a}|${b}`),
    tie('regex').map((r) => `(${r})`),
    tie('regex').map((r) => `(?P<g>${r})`),
    tie('regex').map((r) => `(?i:${r})`),
    tie('regex').map((r) => `(?i)${r}`),
    outside,
  ),
}));

const textChar = fc.constantFrom(
  'a',
  'b',
  'c',
  'k',
  'K',
  's',
  'S',
  'A',
  '0',
  '1',
  '9',
  ' ',
  '-',
  '.',
  '_',
  '\n',
  '\r',
  '\t',
  '\v',
  '\f',
  '{',
  ',',
  'é',
  '\u212a',
  '\u017f',
  '😀',
  '\u2028',
  '\ud83d',
  '\ude00',
);
const text = fc.array(textChar, { maxLength: 24 }).map((cs) => cs.join(''));
const limit = fc.constantFrom(-1, 0, 1, 2, 5);

describe('irregexp path of the regex builtins', () => {
  it('the linear-engine fallback is in force in this process', () => {
    expect(linearFallbackInForce()).toBe(true);
  });

  it('random patterns of the subset: same results as re2js for every builtin', () => {
    let translated = 0;
    let runs = 0;
    answered = 0;
    fc.assert(
      fc.property(regex, text, limit, (pattern, s, n) => {
        fc.pre(compiles(pattern));
        runs++;
        if (translateRe2(pattern, false) !== null) translated++;
        expectSameAsRe2(pattern, s, n);
      }),
      { numRuns: 3000 },
    );
    // Most generated patterns take the path, so the comparison above is about irregexp, not re2js twice.
    expect(translated).toBeGreaterThan(runs / 2);
    expect(answered).toBeGreaterThan(runs / 2);
  });

  it('the library patterns take the path', () => {
    for (const [name, pattern] of Object.entries(libraryPatterns)) {
      expect(irregexpFor(pattern, false), name).not.toBeNull();
    }
  });

  const piiPiece = fc.constantFrom(
    'jane.doe@example.com',
    '+44 20 7946 0958',
    '+1 (555) 010-0199',
    '4111 1111 1111 1111',
    '4111-1111-1111-1111',
    'GB82 WEST 1234 5698 7654 32',
    'DE89370400440532013000',
    '123-45-6789',
    'AB 12 34 56 C',
    '12345678-Z',
    '2345 6789 0123',
    'AKIAABCDEFGHIJKLMNOP',
    'ghp_' + 'a1'.repeat(18),
    'sk-' + 'x'.repeat(24),
    'xoxb-1234567890-abc',
    'AIza' + 'B'.repeat(35),
    'eyJhbGciOiJI.eyJzdWIiOiIx.SflKxwRJSMeK',
    '-----BEGIN RSA PRIVATE KEY-----',
    '030 1234567',
    '612 34 56 78',
    '01 23 45 67 89',
    '020 7946 0958',
    '98765 43210',
    '(555) 234-5678',
    '555.234.5678',
    'rm -rf /',
    'rm -r -f ~/',
    'DROP TABLE users',
    'dRoP dataBase x',
    'ſhutdown now',
    'dd if=/dev/zero of=/dev/sda',
    ':(){ :|:& };:',
    'git push origin main --force',
    'chmod -R 777 /',
    'find / -name x -delete',
  );
  const libraryText = fc
    .array(fc.oneof(piiPiece, textChar, fc.constantFrom(' ', ', ', '\n', 'ref 2024-01-15 ')), { maxLength: 12 })
    .map((xs) => xs.join(''));

  it('library patterns on PII-like and command-like texts: same results as re2js', () => {
    answered = 0;
    fc.assert(
      fc.property(fc.constantFrom(...Object.values(libraryPatterns)), libraryText, (pattern, s) => {
        expectSameAsRe2(pattern, s, -1);
      }),
      { numRuns: 600 },
    );
    expect(answered).toBeGreaterThan(600);
  });

  it('a pathological pattern completes with the right answer (linear fallback)', () => {
    // Without V8's fallback, (?:a|a)*b backtracks 2^n times on n a's; irregexp takes texts up to IRREGEXP_MAX_TEXT.
    const s = 'a'.repeat(IRREGEXP_MAX_TEXT - 1);
    for (const pattern of ['(?:a|a)*b', '(?:a+)+b', '(?:a|aa)+c']) {
      const fast = irregexpFor(pattern, false);
      expect(fast, pattern).not.toBeNull();
      expect(fast?.findAll(s, -1), pattern).toEqual([]);
    }
    expect(call('regex.match', '(?:a|a)*b', s)).toBe(false);
    expect(call('regex.find_n', '(?:a|aa)*c', s + 'c', 1)).toEqual([s + 'c']);
    // Longer texts go to re2js.
    expect(call('regex.find_n', '(?:a+)+b', s + s + 'b', -1)).toEqual([s + s + 'b']);
  });

  it('patterns outside the subset still work (re2js)', () => {
    const cases: [string, string, unknown][] = [
      ['(?i)straße', 'STRASSE straße STRAẞE', ['straße', 'STRAẞE']],
      ['\\pL+', 'ab1çd', ['ab', 'çd']],
      ['(?s)a.b', 'a\nb', ['a\nb']],
      ['[[:digit:]]+', 'x42y7', ['42', '7']],
      ['\\x41+', 'AAB', ['AA']],
      ['(?U)a+', 'aaa', ['a', 'a', 'a']],
      ['(?m)^x', 'x\nx', ['x', 'x']],
      ['(a*)*', 'b', ['', '']],
      ['é+', 'éé e', ['éé']],
    ];
    for (const [pattern, s, expected] of cases) {
      expect(translateRe2(pattern, false), pattern).toBeNull();
      expect(call('regex.find_n', pattern, s, -1), pattern).toEqual(expected);
    }
  });

  it("translated patterns keep Go's meaning where JS differs by default", () => {
    const cases: [string, string, unknown][] = [
      ['.', 'a\rb\u2028', ['a', '\r', 'b', '\u2028']], // JS's `.` skips \r and U+2028, Go's does not
      ['\\s+', 'a\v\t b', ['\t ']], // Go's \s has no \v
      ['[^a]', '\n', ['\n']],
      ['(?i)k', 'kK\u212a', ['k', 'K', '\u212a']], // Go folds k to the Kelvin sign
      ['(?i)[r-t]', '\u017fS', ['\u017f', 'S']],
      ['^..$', '😀', []], // one rune in Go: the surrogate pair goes to re2js
      ['\\B', 'a😀', ['']], // Go: only after the pair, not inside it
      ['x*', '😀', ['', '']],
      ['[]a]+', 'a]b', ['a]']],
      ['a{,2}', 'a{,2}', ['a{,2}']], // not a repetition in Go: literal text
      ['[0-9A-Z]{16,}', 'AKIAABCDEFGHIJKLMNOP', ['AKIAABCDEFGHIJKLMNOP']],
      ['(?:ab){17}', 'ab'.repeat(18), ['ab'.repeat(17)]],
      ['(?:ab){2,40}', 'ab'.repeat(43), ['ab'.repeat(40), 'ab'.repeat(3)]],
    ];
    for (const [pattern, s, expected] of cases) {
      expect(call('regex.find_n', pattern, s, -1), pattern).toEqual(expected);
      expectSameAsRe2(pattern, s, -1);
    }
    expect(translateRe2('.', false)?.runeSensitive).toBe(true);
    expect(translateRe2('[0-9]+', false)?.runeSensitive).toBe(false);
    // JS stops a loop on an empty iteration where Go goes on: found by the property test, so refused.
    expect(translateRe2('(?:[a-c]??)*', false)).toBeNull();
    // Large counts would nest hundreds of groups: re2js keeps them.
    expect(translateRe2('a{0,1000}b', false)).toBeNull();
    expect(translateRe2('a{300}', false)).toBeNull();
    expect(call('regex.find_n', 'a{0,1000}b', 'a'.repeat(1200) + 'b', -1)).toEqual(['a'.repeat(1000) + 'b']);
  });

  it('through Wasm a lone surrogate in the input reaches the builtins as U+FFFD, a surrogate pair intact', async () => {
    const rs = await evaluateQuery({
      sources: [
        {
          file: 'p.rego',
          text: 'package p\n\nx := [regex.find_n(".", input.s, -1), regex.find_n("[0-9]+", input.s, -1)]\n',
        },
      ],
      query: 'data.p.x = v',
      input: { s: 'a\ud83d\u{1f600}1\ude00' },
    });
    expect(rs).toEqual([{ v: [['a', '\ufffd', '\u{1f600}', '1', '\ufffd'], ['1']] }]);
  });

  it('capture groups inside a quantifier are reported by re2js (Go keeps the last iteration)', () => {
    expect(translateRe2('(?:(a)|b)+', true)).toBeNull();
    expect(translateRe2('(?:(a)|b)+', false)).not.toBeNull();
    expect(call('regex.find_all_string_submatch_n', '(?:(a)|b)+', 'ab', -1)).toEqual([['ab', 'a']]);
    expect(call('regex.replace', 'ab', '(?:(a)|b)+', '[$1]')).toBe('[a]');
  });
});

describe('where a search starts (Span)', () => {
  const members = (re: RegExp | undefined) => re?.source;

  it('library patterns: every match holds one of the anchors and only alphabet characters', () => {
    expect(members(translateRe2(piiPatterns.email, false)?.span?.anchorSearch)).toBe('[\\x40]');
    expect(members(translateRe2(piiPatterns.credit_card, false)?.span?.anchorSearch)).toBe(
      '[\\x30\\x31\\x32\\x33\\x34\\x35\\x36\\x37\\x38\\x39]',
    );
    // Alternation: the union of what each alternative needs (digits here, not the spaces some also need).
    expect(members(translateRe2(nationalPhonePattern, false)?.span?.anchorSearch)).toBe(
      '[\\x30\\x32\\x33\\x34\\x35\\x36\\x37\\x38\\x39]',
    );
    // `.`, a negated class, a folded k, or a pattern that can match empty: no span.
    for (const p of ['a.b', '[^a]b', '(?i)k@', 'a*', '(?:a|)b?'])
      expect(translateRe2(p, false)?.span, p).toBeUndefined();
  });

  // Texts of anchors, alphabet characters and others, in long runs, with the patterns the jump applies to.
  const spanPattern = fc
    .tuple(
      fc.constantFrom('[a-c.]+', '[a-c]*', 'a?', '7?', '\\b', '\\b[a-c.]+', '[0-9 -]{0,3}', '(?:7|a?)', ''),
      fc.constantFrom('@', '[0-9]', '(?:@|-)', '[0-9](?: ?[0-9]){2,4}'),
      fc.constantFrom('', '[a-c]+', '\\b', '[a-c.]{2,}\\b', '(?:x|[0-9]+)', '(?:7|a?)'),
    )
    .map(([a, b, c]) => a + b + c);
  const spanText = fc
    .array(fc.constantFrom('a', 'b', '.', '@', '-', ' ', '0', '7', 'x', 'z', ',', 'é', '😀', 'abc.a@b', '12 34 5'), {
      maxLength: 30,
    })
    .map((xs) => xs.join(''));

  it('a search that jumps to the anchors finds what re2js finds', () => {
    fc.assert(
      fc.property(spanPattern, spanText, limit, (pattern, s, n) => {
        expect(translateRe2(pattern, false)?.span, pattern).toBeDefined();
        expectSameAsRe2(pattern, s, n);
      }),
      { numRuns: 800 },
    );
  });
});
