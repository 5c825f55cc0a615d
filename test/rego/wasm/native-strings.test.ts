// The runtime's native string builtins against the host implementations (src/rego/builtins/host), which
// follow OPA: same results, same errors (strict: same message; otherwise undefined), and no host call
// unless the input is outside the native subset (then the host answers, through HOST_FALLBACK).
import { beforeAll, describe, expect, it } from 'vitest';
import type { LoadedPolicy } from '@open-policy-agent/opa-wasm';
import { loadPolicy } from '@open-policy-agent/opa-wasm';
import { builtinPolicy, thrown, evalRaw } from './ir-builder.ts';
import { linkPolicyWasm } from '../../../src/rego/wasm/index.ts';
import { hostImplementations, BuiltinError, HostBuiltinContext } from '../../../src/rego/builtins/index.ts';
import { countingHostBuiltins } from './counting-host.ts';
import { seededBelow } from './seeded-random.ts';

const NAMES = [
  'concat',
  'split',
  'replace',
  'trim_prefix',
  'trim_suffix',
  'trim',
  'trim_space',
  'lower',
  'upper',
  'indexof',
  'substring',
  'sprintf',
  'strings.replace_n',
];

const hostCalls: string[] = [];
const counted = (strict: boolean) => countingHostBuiltins(strict, hostCalls);

let lax: LoadedPolicy;
let strict: LoadedPolicy;
beforeAll(async () => {
  const policy = builtinPolicy(NAMES, 'str.rego');
  lax = await loadPolicy(await linkPolicyWasm(policy), { initial: 5 }, counted(false));
  strict = await loadPolicy(await linkPolicyWasm(policy, { strictBuiltinErrors: true }), { initial: 5 }, counted(true));
});

type Outcome = { value: unknown } | { error: string };

/** What the host implementation gives (OPA's semantics as the rest of the project implements them). */
function host(name: string, args: unknown[]): Outcome {
  try {
    return { value: hostImplementations[name](args, new HostBuiltinContext()) };
  } catch (e) {
    if (!(e instanceof BuiltinError)) throw e;
    return { error: `${e.code}: ${name}: ${e.message}` };
  }
}

/** JSON text with bigints written as exact integers (opa-wasm's evaluate cannot take them). */
const exactText = (v: unknown): string =>
  JSON.stringify(v, (_k, x) => (typeof x === 'bigint' ? `@${x}@` : x)).replace(/"@(-?\d+)@"/g, '$1');

function native(p: LoadedPolicy, name: string, args: unknown[]): Outcome {
  try {
    const rs = JSON.parse(evalRaw(p, exactText(args), p.entrypoints[name])) as { result: unknown }[];
    return rs.length ? { value: rs[0].result } : { error: 'undefined' };
  } catch (e) {
    // native errors abort with the statement location; a strict host builtin throws OPA's message
    return { error: (e instanceof Error ? e.message : String(e)).replace(/^str\.rego:3: /, '') };
  }
}

// [builtin, args, answered natively (no host call)]
const cases: Array<[string, unknown[], boolean]> = [
  ['concat', [', ', ['a', 'b', 'c']], true],
  ['concat', ['', ['a', 'b']], true],
  ['concat', ['-', []], true],
  ['concat', ['-', ['only']], true],
  ['concat', ['', ['', '']], true],
  ['concat', ['→', ['日本', '語', '🎉']], true],
  ['concat', [1, ['a']], true],
  ['concat', [',', 'ab'], true],
  ['concat', [',', ['a', 1]], true],
  ['concat', [',', { a: 'b' }], true],
  ['split', ['a.b.c', '.'], true],
  ['split', ['abc', ''], true],
  ['split', ['', ''], true],
  ['split', ['', ','], true],
  ['split', ['a,,b,', ','], true],
  ['split', ['no separator', ';'], true],
  ['split', ['aaaa', 'aa'], true],
  ['split', ['日本語', ''], true],
  ['split', ['x🎉y🎉', '🎉'], true],
  ['split', ['a', 1], true],
  ['split', [null, 'a'], true],
  ['replace', ['aaaa', 'aa', 'b'], true],
  ['replace', ['aaa', 'aa', 'b'], true],
  ['replace', ['abcabc', 'bc', ''], true],
  ['replace', ['abc', 'x', 'y'], true],
  ['replace', ['', 'x', 'y'], true],
  ['replace', ['a/b~c', '~', '~0'], true],
  ['replace', ['naïve café', 'é', 'e'], true],
  ['replace', ['abc', '', '-'], false],
  ['replace', ['日本', '', '|'], false],
  ['replace', ['abc', 'b', 1], true],
  ['trim_prefix', ['/workspace/x', '/workspace/'], true],
  ['trim_prefix', ['abc', ''], true],
  ['trim_prefix', ['ab', 'abc'], true],
  ['trim_prefix', ['héllo', 'hé'], true],
  ['trim_prefix', [1, 'a'], true],
  ['trim_suffix', ['/workspace/', '/'], true],
  ['trim_suffix', ['abc', ''], true],
  ['trim_suffix', ['', ''], true],
  ['trim_suffix', ['c', 'abc'], true],
  ['trim_suffix', ['über🎉', '🎉'], true],
  ['trim_suffix', ['a', ['a']], true],
  ['trim', ['  xx  ', ' '], true],
  ['trim', ['xyhixy', 'yx'], true],
  ['trim', ['aaa', 'a'], true],
  ['trim', ['abc', ''], true],
  ['trim', ['', 'a'], true],
  ['trim', ['ééaéé', 'é'], true],
  ['trim', ['🎉x🎉', '🎉'], true],
  ['trim', ['€a€', 'â'], true],
  ['trim', ['a', 2], true],
  ['trim_space', ['  \t hi there \n '], true],
  ['trim_space', [''], true],
  ['trim_space', ['   '], true],
  ['trim_space', ['\u00a0\u2003x\u3000\u0085'], true],
  ['trim_space', ['\ufeffx\ufeff'], true],
  ['trim_space', ['x'], true],
  ['trim_space', [3], true],
  ['lower', ['Hello WORLD 123'], true],
  ['lower', ['already lower'], true],
  ['lower', [''], true],
  ['lower', ['ÀÉÎ'], false],
  ['lower', ['\u0130'], false],
  ['lower', [null], true],
  ['upper', ['sha-256'], true],
  ['upper', ['straße'], false],
  ['upper', [['a']], true],
  ['indexof', ['hello', 'l'], true],
  ['indexof', ['hello', 'z'], true],
  ['indexof', ['héllo wörld', 'w'], true],
  ['indexof', ['🎉🎉x', 'x'], true],
  ['indexof', ['日本語', '本語'], true],
  ['indexof', ['abc', ''], true],
  ['indexof', ['', 'a'], true],
  ['indexof', [1, 'a'], true],
  ['substring', ['abcdef', 2, 3], true],
  ['substring', ['abcdef', 0, -1], true],
  ['substring', ['abcdef', 4, 10], true],
  ['substring', ['abcdef', 6, 1], true],
  ['substring', ['abcdef', 9, 1], true],
  ['substring', ['abcdef', 0, 0], true],
  ['substring', ['', 0, 5], true],
  ['substring', ['héllo 🎉 wörld', 1, 7], true],
  ['substring', ['日本語テキスト', 2, -1], true],
  ['substring', ['日本語', 0, 3], true],
  ['substring', ['abc', -1, 2], true],
  ['substring', ['abc', 1.5, 2], true],
  ['substring', ['abc', 0, 'x'], true],
  ['substring', [['abc'], 0, 1], true],
  ['sprintf', ['tool %s is on the deny list', ['shell']], true],
  ['sprintf', ['/content/%d/value', [12]], true],
  ['sprintf', ['%s %d/%d', ['calls', 3, -40]], true],
  ['sprintf', ['%v and %v', ['x', 9223372036854775807n]], true],
  ['sprintf', ['100%% of %s', ['日本']], true],
  ['sprintf', ['no verbs', []], true],
  ['sprintf', ['%s|%v|%s', [true, false, null]], true],
  ['sprintf', ['', []], true],
  ['sprintf', ['%d', ['x']], false],
  ['sprintf', ['%s', [5]], false],
  ['sprintf', ['%v', [1.5]], false],
  ['sprintf', ['%v', [[1, 'a']]], false],
  ['sprintf', ['%v', [{ a: 1 }]], false],
  ['sprintf', ['%5s|%-3d|%x', ['a', 1, 255]], false],
  ['sprintf', ['%s %s', ['one']], false],
  ['sprintf', ['%s', ['a', 'b']], false],
  ['sprintf', ['trailing %', []], false],
  ['sprintf', ['%d', [12345678901234567890123n]], true],
  ['sprintf', [1, []], true],
  [
    'strings.replace_n',
    [
      { 'jane@example.com': '[EMAIL]', '4111 1111 1111 1111': '[CARD]' },
      'mail jane@example.com, card 4111 1111 1111 1111.',
    ],
    true,
  ],
  ['strings.replace_n', [{ a: 'b', b: 'a' }, 'abba'], true],
  ['strings.replace_n', [{ ab: 'X', abc: 'Y' }, 'abcab'], true],
  ['strings.replace_n', [{ abc: 'Y', b: 'Z' }, 'abcb'], true],
  ['strings.replace_n', [{ é: 'e', '🎉': '' }, 'café 🎉!'], true],
  ['strings.replace_n', [{}, 'unchanged'], true],
  ['strings.replace_n', [{ x: 'y' }, ''], true],
  ['strings.replace_n', [{ '': '-' }, 'ab'], false],
  ['strings.replace_n', [{ a: 1 }, 'ab'], false],
  ['strings.replace_n', [['a'], 'ab'], true],
  ['strings.replace_n', [{ a: 'b' }, 2], true],
  // one-byte keys (a byte table): one-byte values, longer and empty values, no key present, a hit at the
  // first and last byte, high bytes, and the PII shape table itself
  ['strings.replace_n', [{ '1': '0', '2': '0', A: 'a' }, '12 Apples, 21 BANANAS 2'], true],
  ['strings.replace_n', [{ ' ': '', '-': '' }, '4111 1111-1111 1111 -'], true],
  [
    'strings.replace_n',
    [{ ' ': '', '-': '' }, '0000 0000-0000 0000 and 000-00-0000 in a longer text without a trailing match'],
    true,
  ],
  ['strings.replace_n', [{ ' ': '', '-': '' }, 'no_separators_in_this_text_at_all_0000'], true],
  ['strings.replace_n', [{ a: 'XYZ', b: '', c: 'c' }, 'abcabc-cab'], true],
  ['strings.replace_n', [{ q: 'x', z: 'y' }, 'nothing to map here'], true],
  ['strings.replace_n', [{ x: 'é', é: 'e' }, 'xé'], true],
  [
    'strings.replace_n',
    [
      { ...Object.fromEntries([...'123456789BCDEFGHIJKLMNOPQRSTUVWXYZ'].map((c) => [c, /[0-9]/.test(c) ? '0' : 'A'])) },
      'Order 18234 at 2026-11-29T12:07:00Z, IBAN DE89 3704 0044 0532 0130 00',
    ],
    true,
  ],
  ['sprintf', ['%s', 'x'], true],
];

const show = (v: unknown) => JSON.stringify(v, (_k, x) => (typeof x === 'bigint' ? `${x}n` : x));

describe('native string builtins agree with the host implementations', () => {
  it.each(cases.map(([n, a, nat]) => [n, show(a), a, nat] as const))(
    '%s(%s)',
    (name, _label, args, answeredNatively) => {
      const want = host(name, args as unknown[]);
      hostCalls.length = 0;
      const strictGot = native(strict, name, args as unknown[]);
      expect(strictGot).toEqual(want);
      expect(hostCalls.length, `host calls ${hostCalls.join(',')}`).toBe(answeredNatively ? 0 : 1);
      hostCalls.length = 0;
      const laxGot = native(lax, name, args as unknown[]);
      expect(laxGot).toEqual('error' in want ? { error: 'undefined' } : want);
      expect(hostCalls.length).toBe(answeredNatively ? 0 : 1);
    },
  );

  it('sets are sets, as OPA sees them (the host receives them as arrays)', () => {
    expect(thrown(() => evalRaw(strict, '[",", {"a", 2}]', strict.entrypoints.concat))).toBe(
      'str.rego:3: eval_type_error: concat: operand 2 must be set of strings but got set containing number',
    );
    expect(evalRaw(lax, '["-", {"b", "a"}]', lax.entrypoints.concat)).toBe('[{"result":"a-b"}]');
    // OPA's sprintf takes an array only (ArrayOperand)
    expect(thrown(() => evalRaw(strict, '["%s", {"a"}]', strict.entrypoints.sprintf))).toBe(
      'str.rego:3: eval_type_error: sprintf: operand 2 must be array but got set',
    );
  });

  it('results point into the operands without corrupting them when reused', () => {
    // split parts and trimmed strings share the operand's bytes; later calls must still see the original
    expect(lax.evaluate(['a/b/c', '/'], 'split')).toEqual([{ result: ['a', 'b', 'c'] }]);
    expect(lax.evaluate(['a/b/c/', '/'], 'trim_suffix')).toEqual([{ result: 'a/b/c' }]);
    expect(lax.evaluate(['A/B', '/'], 'split')).toEqual([{ result: ['A', 'B'] }]);
  });

  /** indexof, split and replace of `needle` in `text`: the module's answer is the host's. */
  const expectSearchesAgree = (text: string, needle: string): void => {
    for (const [name, args] of [
      ['indexof', [text, needle]],
      ['split', [text, needle]],
      ['replace', [text, needle, '_']],
    ] as const) {
      expect(native(lax, name, [...args]), `${name}(${JSON.stringify(args)})`).toEqual(host(name, [...args]));
    }
  };

  it('indexof, split and replace agree with the host on random texts over a small alphabet (every word-boundary offset)', () => {
    const rnd = seededBelow(0x2545f491);
    const alphabet = ['a', 'b', 'a', 'a', '€', 'é'];
    const word = (len: number) => Array.from({ length: len }, () => alphabet[rnd(alphabet.length)]).join('');
    for (let k = 0; k < 300; k++) {
      const text = word(rnd(40));
      const needle = word(1 + rnd(3));
      expectSearchesAgree(text, needle);
    }
  });

  it('indexof, split and replace agree with the host on shape-like texts (needles tested by their rarest bytes, runs of one byte)', () => {
    const rnd = seededBelow(0x1b873593);
    // mostly `0`, as in a PII shape of digit-heavy text, so candidates are frequent and runs long
    const alphabet = ['0', '0', '0', '0', 'A', '-', ' ', 'a', '.', 'é'];
    const word = (len: number) => Array.from({ length: len }, () => alphabet[rnd(alphabet.length)]).join('');
    const needles = [
      '000-00-0000',
      '00000000A',
      'AA00 0',
      '000 000 000',
      '0000000000000',
      '000000000000',
      '00',
      '000',
      'A0-',
      '0é',
      '000-00-0000 0000-0000 A',
    ];
    for (let k = 0; k < 400; k++) {
      const needle =
        k % 3 === 0 ? word(2 + rnd(20)) : k % 3 === 1 ? '0'.repeat(2 + rnd(14)) : needles[rnd(needles.length)];
      let text = word(rnd(90));
      if (k % 2) {
        // plant the needle (a match at a random offset, possibly near the end)
        const at = rnd(text.length + 1);
        text = text.slice(0, at) + needle + text.slice(at, at + rnd(20));
      }
      expectSearchesAgree(text, needle);
    }
  });

  it('strings.replace_n with one-byte keys agrees with the host on random maps and texts (runs of keys, tables, every tail length)', () => {
    const rnd = seededBelow(0x68e31da4);
    const alphabet = [...'0123456789ABCDEFabcdef -.', '\u0000', 'é'];
    for (let k = 0; k < 200; k++) {
      const map: Record<string, string> = {};
      // odd k: one-byte values; k % 4 == 2: every value empty (deletion); otherwise mixed
      for (let j = rnd(12); j > 0; j--)
        map[alphabet[rnd(alphabet.length - 1)]] =
          k % 4 === 2 ? '' : ['0', 'A', 'x', '', 'XY', '\u0000'][rnd(k % 2 ? 3 : 6)];
      const text = Array.from({ length: rnd(70) }, () => alphabet[rnd(alphabet.length)]).join('');
      const args = [map, text];
      hostCalls.length = 0;
      expect(native(lax, 'strings.replace_n', args), JSON.stringify(args)).toEqual(host('strings.replace_n', args));
      expect(hostCalls).toEqual([]);
    }
  });

  it('strings.replace_n deleting one-byte keys agrees with the host on long texts dense in deleted bytes (every drop pattern of a 16-byte block)', () => {
    const rnd = seededBelow(0x2f6b1c3d);
    const alphabet = ['0', '0', ' ', '-', 'A', 'x', 'é', ' ', '-'];
    for (let k = 0; k < 600; k++) {
      const map: Record<string, string> =
        k % 3 ? { ' ': '', '-': '' } : { [alphabet[rnd(6)]]: '', [alphabet[rnd(6)]]: '' };
      const text = Array.from({ length: 16 + rnd(300) }, () => alphabet[rnd(alphabet.length)]).join('');
      const args = [map, text];
      hostCalls.length = 0;
      expect(native(lax, 'strings.replace_n', args), JSON.stringify(args)).toEqual(host('strings.replace_n', args));
      expect(hostCalls).toEqual([]);
    }
  });

  it('strings.replace_n with longer keys agrees with the host on random maps and texts (overlapping keys, up to and over four first bytes, texts with hundreds of matches)', () => {
    const rnd = seededBelow(0x3c6ef372);
    const alphabet = [...'abcab 01.@', 'é'];
    const word = (len: number) => Array.from({ length: len }, () => alphabet[rnd(alphabet.length)]).join('');
    for (let k = 0; k < 300; k++) {
      const map: Record<string, string> = {};
      // at least one key of two or more bytes, so the one-byte paths are not taken
      map[word(2 + rnd(4))] = ['[X]', '', 'y', 'longer replacement'][rnd(4)];
      for (let j = rnd(k % 3 === 0 ? 9 : 4); j > 0; j--) map[word(1 + rnd(5))] = ['[X]', '', 'y', 'é'][rnd(4)];
      const keys = Object.keys(map);
      // k % 5 == 0: a long text made of keys (several hundred matches: the second-pass path), else random text with keys planted
      const text =
        k % 5 === 0
          ? Array.from({ length: 300 + rnd(200) }, () => (rnd(4) ? keys[rnd(keys.length)] : word(1 + rnd(3)))).join('')
          : Array.from({ length: rnd(8) }, () => word(rnd(20)) + keys[rnd(keys.length)]).join('') + word(rnd(40));
      const args = [map, text];
      hostCalls.length = 0;
      expect(native(lax, 'strings.replace_n', args), JSON.stringify(args)).toEqual(host('strings.replace_n', args));
      expect(hostCalls).toEqual([]);
    }
  });

  it('a run of one byte is found at the start, the end, after a shorter run, or not at all', () => {
    const run = '0'.repeat(13);
    for (const text of [
      run + 'x',
      'x' + run,
      '0'.repeat(12) + 'x' + run + '0',
      '0'.repeat(12) + 'x' + '0'.repeat(12),
      'x0000000000000y',
      '0'.repeat(40),
    ]) {
      expect(native(lax, 'indexof', [text, run]), text).toEqual(host('indexof', [text, run]));
    }
  });

  it('long inputs: word-at-a-time search across boundaries', () => {
    const text = 'lorem ipsum dolor sit amet '.repeat(40) + 'needle' + ' tail'.repeat(9);
    for (const [name, args] of [
      ['indexof', [text, 'needle']],
      ['split', [text, 'dolor']],
      ['replace', [text, 'ipsum', 'IPSUM']],
      ['substring', [text, 1070, 12]],
      // a common first byte ('e') whose second byte ('y') rarely follows it; the match straddles a word
      ['indexof', ['the eye sees every eerie eel '.repeat(3) + 'e'.repeat(7) + 'eyJhbGciOi', 'eyJ']],
      ['indexof', ['e'.repeat(64) + 'ey', 'ey']],
      ['indexof', ['e'.repeat(64), 'ey']],
      // candidates whose first 8 bytes match but whose tail does not (needles of 9–16 and of 17+ bytes)
      ['indexof', ['-B000000000' + '1 ' + '-B0000000000'.repeat(3), '-B0000000000']],
      ['indexof', ['-B' + '0'.repeat(19) + '1 ' + '-B' + '0'.repeat(20) + 'x'.repeat(20), '-B' + '0'.repeat(20)]],
      ['indexof', ['x'.repeat(20) + '-B00000', '-B000']],
    ] as const) {
      hostCalls.length = 0;
      expect(native(lax, name, [...args]), name).toEqual(host(name, [...args]));
      expect(hostCalls).toEqual([]);
    }
  });
});
