// The regex host builtins give the same answers whichever engine matches: Google's RE2 (the `re2` addon,
// regex-re2.ts) against re2js (Go's regexp in JS, the reference). Over the PII library's own patterns
// (rego/data.json), OPA's conformance calls, our builtin cases, hand-picked edge cases (multibyte text,
// empty matches, \b at the edges, anchors, case folding, n = -1/0/k) and random patterns and texts.
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { createRequire } from 'node:module';
import { Worker } from 'node:worker_threads';
import { join } from 'node:path';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { regexBuiltinsUsing } from '../../../src/rego/builtins/host/regex.ts';
import { re2Available, re2For } from '../../../src/rego/builtins/host/regex-re2.ts';
import type { HostBuiltinContext } from '../../../src/rego/builtins/host/context.ts';
import { regexCases } from './cases.ts';

const ctx = {} as HostBuiltinContext; // the regex builtins read no context
const re2 = regexBuiltinsUsing('re2');
const re2js = regexBuiltinsUsing('re2js');

type Outcome = { value: unknown } | { error: string };
function outcome(engine: typeof re2, name: string, args: unknown[]): Outcome {
  try {
    return { value: engine[name](args, ctx) };
  } catch (e) {
    return { error: `${(e as Error).constructor.name}: ${(e as Error).message}` };
  }
}

/** Every string-taking regex builtin on (pattern, text), both engines, same outcome. */
function expectSameOnText(pattern: string, text: string): void {
  const calls: [string, unknown[]][] = [
    ['regex.match', [pattern, text]],
    ['regex.find_n', [pattern, text, -1]],
    ['regex.find_n', [pattern, text, 0]],
    ['regex.find_n', [pattern, text, 1]],
    ['regex.find_n', [pattern, text, 2]],
    ['regex.find_all_string_submatch_n', [pattern, text, -1]],
    ['regex.find_all_string_submatch_n', [pattern, text, 3]],
    ['regex.split', [pattern, text]],
    ['regex.replace', [text, pattern, '<$0|${1}>']],
    ['regex.replace', [text, pattern, '']],
  ];
  for (const [name, args] of calls) {
    expect(outcome(re2, name, args), `${name}(${JSON.stringify(args)})`).toEqual(outcome(re2js, name, args));
  }
}

const pii = (JSON.parse(readFileSync(new URL('../../../rego/data.json', import.meta.url), 'utf8')) as {
  acs_config: { pii: { patterns: Record<string, string>; national_phones: Record<string, string> } };
}).acs_config.pii;
const nationalPhone = Object.keys(pii.national_phones)
  .sort()
  .map((k) => `(?:${pii.national_phones[k]})`)
  .join('|');
const libraryPatterns = [...Object.values(pii.patterns), ...Object.values(pii.national_phones), nationalPhone, '[0-9]'];

const logText = Array.from(
  { length: 40 },
  (_, i) => `2026-11-${String(10 + (i % 19)).padStart(2, '0')}T12:${String(i % 60).padStart(2, '0')}:03Z order ${48213 + i * 7} amount=${1234 + i * 13}.56 EUR v1.${i % 4}.2`,
).join('\n');
const piiTexts = [
  logText,
  'Hi, Jane here: jane.doe@example.com, +44 20 7946 0958 or 020 7946 0958; card 4111 1111 1111 1111, IBAN GB82 WEST 1234 5698 7654 32.',
  'SSN 123-45-6789, NINO AB 12 34 56 C, DNI 12345678Z, Aadhaar 2345 6789 0123, US (212) 555-0199 and 212.555.0199, FR 01 23 45 67 89',
  'keys: AKIAIOSFODNN7EXAMPLE ghp_abcdefghijklmnopqrstuvwxyz0123456789 sk-abcdefghijklmnopqrstuvwxyz eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0.c2lnbmF0dXJlMTIz',
  '-----BEGIN RSA PRIVATE KEY-----\nMIIB…\n-----END RSA PRIVATE KEY-----',
  'Ünïcödé — café 4111 1111 1111 1111 日本語 😀 +33 1 23 45 67 89 naïve@exämple.com é12345678Z',
  '',
  'no digits at all, just prose.',
];

describe('regex engines agree (RE2 addon vs re2js)', () => {
  it('the RE2 addon is installed and takes every library pattern (else this file compares re2js with itself)', () => {
    expect(re2Available).toBe(true);
    for (const p of libraryPatterns) expect(re2For(p), p).not.toBeNull();
  });

  it('the addon loads and matches in a worker thread (the policy engine pool evaluates there)', async () => {
    const source = `const { parentPort, workerData } = require('node:worker_threads');
      const RE2 = require(workerData.re2);
      parentPort.postMessage(new RE2(workerData.pattern, 'gu').match('card 4111 1111 1111 1111, 2026-11-29'));`;
    const worker = new Worker(source, { eval: true, workerData: { re2: createRequire(import.meta.url).resolve('re2'), pattern: pii.patterns.credit_card } });
    const found = await new Promise((resolve, reject) => worker.once('message', resolve).once('error', reject));
    await worker.terminate();
    expect(found).toEqual(['4111 1111 1111 1111']);
  });

  it('on the PII library patterns over realistic texts', () => {
    for (const p of libraryPatterns) for (const t of piiTexts) expectSameOnText(p, t);
  });

  it('on the builtin cases (results and error texts)', () => {
    for (const c of regexCases) {
      if (!c.name.startsWith('regex.') || c.name === 'regex.globs_match') continue;
      expect(outcome(re2, c.name, c.args), `${c.name}(${JSON.stringify(c.args)})`).toEqual(outcome(re2js, c.name, c.args));
    }
  });

  it("on OPA's conformance regex calls", () => {
    const root = '/work/shared/rego-conformance';
    const files: string[] = [];
    const walk = (dir: string): void => {
      for (const e of readdirSync(dir)) {
        const p = join(dir, e);
        if (statSync(p).isDirectory()) walk(p);
        else if (p.endsWith('.yaml')) files.push(p);
      }
    };
    walk(root);
    // Calls with two literal leading operands: regex.f("…", "…" …); the Rego string literal is JSON.
    const call = /regex\.(find_n|match|split|replace|find_all_string_submatch_n)\(("(?:[^"\\]|\\.)*"), ("(?:[^"\\]|\\.)*")/g;
    let seen = 0;
    for (const f of files) {
      const text = readFileSync(f, 'utf8');
      for (const m of text.matchAll(call)) {
        const [a, b] = [JSON.parse(m[2]) as string, JSON.parse(m[3]) as string];
        if (m[1] === 'replace') expectSameOnText(b, a);
        else expectSameOnText(a, b);
        seen++;
      }
    }
    expect(seen).toBeGreaterThanOrEqual(4);
  });

  it('on edge cases: multibyte, empty matches, \\b at the edges, anchors, case folding, flags, classes', () => {
    const patterns = [
      '', 'a*', 'x*', '(?:)', '\\b', '\\B', 'b*|a', '(a*)(b*)', '(a|ab)(c|bcd)(d*)', '(?U)a+', 'a+?', '.', '(?s).', '.*', '(?s).*',
      '^', '$', '^a', 'a$', '(?m)^\\w+', '(?m)$', '(?m)^$', '\\A.', '.\\z', '^$', '\\bcafé\\b', '\\bé', 'é\\b', '\\w+', '\\W+', '\\s+', '\\S',
      '\\d+', '\\D', '[^a]', '[^a]+', '[[:alpha:]]+', '[[:^digit:]]', '\\pL+', '\\p{Greek}+', '\\PL', '[\\p{Lu}]', '(?i)straße', '(?i)k',
      '(?i)é', '(?i)[a-z]+', '(?i)Σ', '(?P<word>\\w+)\\s(?P<num>\\d+)', '(?<w>x)', '\\Qa.b\\E', '\\Q/\\E', '[(?<a]', '/', '\\x{1F600}',
      '[😀-😂]', '😀*', '\\x{E9}', '(?i:A)b', 'a{2,3}', '(a{2}){0,2}', '[a-c]{0}', '\\.', '\\$\\{1\\}', '(a)|(b)', '(a)?(b)?c',
      '[0-9](?:[ -]?[0-9]){12,18}',
    ];
    const texts = [
      '', 'a', 'aaa', 'baaac', 'ab', 'abc', 'abcd', 'café', 'é', 'éé', 'aé b', 'café au lait 12 3', '日本語', '😀', 'a😀b😀😀c', '😀😁😂',
      'Straße STRASSE', 'KELVIN K k', 'ΣσςΣ', 'line1\nline2\n', '\n', 'x\r\ny', 'hello world 42 and 7', '$ ${1} a.b a/b',
      'x a.b y', 'a/b', '\u00e9\u0301', '\t \u00a0\u2003x', '4111 1111 1111 1111', 'word 12 other 345',
    ];
    for (const p of patterns) for (const t of texts) expectSameOnText(p, t);
  });

  it('on texts with lone surrogates (re2js runs them) and on invalid patterns', () => {
    for (const t of ['a\uD800b', '\uDC00', 'x\uD83D', '😀\uDE00']) for (const p of ['.', '[^a]', 'a|b', '\\b', '']) expectSameOnText(p, t);
    for (const p of ['(', '[a', 'a**', '(?P<n>a)(?P<n>b)', '\\C', '\\8', 'x{1001}', '(?<', '\\p{Nope}', '\\Q', '*'])
      expectSameOnText(p, 'abc');
  });

  it('on random patterns and texts', () => {
    const atom = fc.constantFrom('a', 'b', 'é', '😀', ' ', '1', '.', '\\b', '\\B', '^', '$', '\\w', '\\d', '\\s', '[ab]', '[^a]', '(?i)B', '\\pL', '');
    const pattern: fc.Arbitrary<string> = fc.letrec<{ re: string }>((tie) => ({
      re: fc.oneof(
        { depthSize: 'small', withCrossShrink: true },
        atom,
        fc.tuple(tie('re'), tie('re')).map(([x, y]) => x + y),
        fc.tuple(tie('re'), tie('re')).map(([x, y]) => `(?:${x}|${y})`),
        fc.tuple(tie('re'), fc.constantFrom('*', '+', '?', '{1,2}', '*?', '??')).map(([x, q]) => `(?:${x})${q}`),
        tie('re').map((x) => `(${x})`),
      ),
    })).re;
    const text = fc.array(fc.constantFrom('a', 'b', 'é', '😀', ' ', '1', 'A', 'B', '\n'), { maxLength: 12 }).map((cs) => cs.join(''));
    fc.assert(
      fc.property(pattern, text, (p, t) => {
        expectSameOnText(p, t);
      }),
      { numRuns: 400 },
    );
  });
});
