// Native builtins of the runtime, each called from a generated plan with arguments taken from input
// (Rego syntax, so sets can be passed) and results read as raw JSON text.
import { describe, it, expect, beforeAll } from 'vitest';
import type { LoadedPolicy } from '@open-policy-agent/opa-wasm';
import { builtinPolicy, loadBoth, evalRaw, thrown, readCString, type BothPaths } from './ir-builder.ts';
import { hostBuiltinName } from '../../../src/rego/builtins/index.ts';
import { NATIVE_BUILTINS } from '../../../src/rego/wasm/index.ts';
import { seededBelow } from './seeded-random.ts';

const names = [...NATIVE_BUILTINS.keys()];
let both: BothPaths;
let p: LoadedPolicy;
const call = (name: string, args: string): string => {
  const rs = evalRaw(p, args, p.entrypoints[name]);
  const m = /^\[\{"result":(.*)\}\]$/.exec(rs);
  if (rs === '[]') return 'undefined';
  if (!m) throw new Error(`unexpected result set ${rs}`);
  return m[1];
};

beforeAll(async () => {
  both = await loadBoth(builtinPolicy(names));
  p = both.fast;
});

const cases: Array<[string, string, string]> = [
  // comparison: numbers by value, total order across types
  ['equal', '[1, 1.0]', 'true'],
  ['equal', '[12345678901234567890123, 12345678901234567890124]', 'false'],
  ['equal', '[12345678901234567890123, 12345678901234567890123]', 'true'],
  ['lt', '[12345678901234567890123, 12345678901234567890124]', 'true'],
  ['lt', '[-12345678901234567890124, -12345678901234567890123]', 'true'],
  ['gt', '[12345678901234567890123, 9223372036854775807]', 'true'],
  ['lt', '[9007199254740993, 9007199254740994]', 'true'],
  ['neq', '[{1,2}, {2,1}]', 'false'],
  ['gt', '[{1}, [1]]', 'true'],
  ['lt', '[null, false]', 'true'],
  ['lte', '["a", "a"]', 'true'],
  ['gte', '[[1,2], [1]]', 'true'],
  ['lt', '[{"a":1}, {"a":2}]', 'true'],
  // arithmetic
  ['plus', '[1, 2]', '3'],
  ['plus', '[0.1, 0.2]', '0.30000000000000004'],
  ['plus', '[9007199254740993, 1]', '9007199254740994'],
  ['plus', '["a", 1]', 'undefined'],
  ['minus', '[5, 7]', '-2'],
  ['minus', '[{1,2,3}, {2}]', '[1,3]'],
  ['minus', '[{1}, 1]', 'undefined'],
  ['mul', '[1.5, 2]', '3'],
  ['mul', '[3, -4]', '-12'],
  ['mul', '[1e20, 10]', '1e+21'],
  ['mul', '[3037000500, 3037000500]', '9223372037000250000'],
  ['div', '[6, 3]', '2'],
  ['div', '[7, 2]', '3.5'],
  ['div', '[1, 3]', '0.3333333333333333'],
  ['div', '[1, 10000000]', '1e-7'],
  ['div', '[1, 0]', 'undefined'],
  ['rem', '[7, 3]', '1'],
  ['rem', '[-7, 3]', '-1'],
  ['rem', '[7.5, 2]', 'undefined'],
  ['rem', '[1, 0]', 'undefined'],
  ['abs', '[-3]', '3'],
  ['abs', '[-2.5]', '2.5'],
  ['abs', '[-12345678901234567890123]', '12345678901234567890123'],
  ['abs', '[-9223372036854775808]', '9223372036854775808'],
  ['round', '[2.5]', '3'],
  ['round', '[-2.5]', '-3'],
  ['round', '[2.4]', '2'],
  ['ceil', '[1.2]', '2'],
  ['floor', '[-1.2]', '-2'],
  // an integral decimal comes back as the integer (OPA's FloatToNumber), an integer as written
  ['floor', '[1.0]', '1'],
  ['round', '[2.0]', '2'],
  ['ceil', '[3e0]', '3'],
  ['floor', '[12345678901234567890]', '12345678901234567890'],
  ['abs', '[4.0]', '4'],
  ['abs', '[4.50]', '4.5'],
  ['abs', '[-0.5]', '0.5'],
  // sets
  ['and', '[{1,2,3}, {2,3,4}]', '[2,3]'],
  ['or', '[{1,2}, {"a"}]', '[1,2,"a"]'],
  ['union', '[{{1,2},{3},set()}]', '[1,2,3]'],
  ['intersection', '[{{1,2,3},{2,3},{3,2,9}}]', '[2,3]'],
  ['intersection', '[set()]', '[]'],
  ['and', '[[1], {1}]', 'undefined'],
  // membership
  ['internal.member_2', '[2, [1,2]]', 'true'],
  ['internal.member_2', '[3, {1,2}]', 'false'],
  ['internal.member_2', '[1, {"a":1}]', 'true'],
  ['internal.member_2', '[1, "1"]', 'false'],
  ['internal.member_3', '[0, "a", ["a"]]', 'true'],
  ['internal.member_3', '["k", 1, {"k":1}]', 'true'],
  ['internal.member_3', '["k", 2, {"k":1}]', 'false'],
  // aggregates
  ['count', '["héllo"]', '5'],
  ['count', '[{1,2}]', '2'],
  ['count', '[1]', 'undefined'],
  ['sum', '[[1, 2.5]]', '3.5'],
  ['sum', '[{1, 2}]', '3'],
  ['sum', '[[1, "a"]]', 'undefined'],
  ['product', '[[2, 3, 4]]', '24'],
  ['max', '[[1, "a", null]]', '"a"'],
  ['min', '[[3, 1, 2]]', '1'],
  ['max', '[[]]', 'undefined'],
  ['sort', '[[3, 1, "b", null, 2.5]]', '[null,1,2.5,3,"b"]'],
  ['sort', '[{3, 1}]', '[1,3]'],
  ['sort', '["x"]', 'undefined'],
  // types
  ['is_number', '["x"]', 'false'],
  ['is_number', '[1.5]', 'true'],
  ['is_string', '["x"]', 'true'],
  ['is_boolean', '[false]', 'true'],
  ['is_array', '[{1}]', 'false'],
  ['is_set', '[{1}]', 'true'],
  ['is_object', '[{}]', 'true'],
  ['is_null', '[null]', 'true'],
  ['type_name', '[{1}]', '"set"'],
  ['type_name', '[{}]', '"object"'],
  ['type_name', '[1]', '"number"'],
  // objects and arrays
  ['object.get', '[{"a":{"b":1}}, ["a","b"], 0]', '1'],
  ['object.get', '[{"a":1}, "z", "d"]', '"d"'],
  ['object.get', '[{"a":1}, "a", "d"]', '1'],
  ['object.get', '[{"a":[5,6]}, ["a", 1], 0]', '6'],
  ['object.keys', '[{"b":1,"a":2}]', '["a","b"]'],
  // object.union/union_n/filter/remove/subset and walk: sets and non-string keys pass through (JSON shows
  // sets as arrays and keys as strings; the e2e tests below check them in Rego)
  ['object.union', '[{"a":{"b":1,"c":{1}}}, {"a":{"b":2}}]', '{"a":{"b":2,"c":[1]}}'],
  ['object.union', '[{"a":{"x":1}}, {"a":{1}}]', '{"a":[1]}'],
  ['object.union', '[{"a":{1}}, {"a":{"x":1}}]', '{"a":{"x":1}}'],
  ['object.union', '[{"a":1}, [1]]', 'undefined'],
  ['object.union_n', '[[{"a":1},{"b":{2}},{"a":3}]]', '{"a":3,"b":[2]}'],
  ['object.union_n', '[[]]', '{}'],
  ['object.union_n', '[[{"a":1}, 2]]', 'undefined'],
  ['object.filter', '[{"a":1,"b":2,"c":3}, {"a","c"}]', '{"a":1,"c":3}'],
  ['object.filter', '[{"a":1,"b":2}, ["b","z"]]', '{"b":2}'],
  ['object.filter', '[{"a":1,"b":2}, {"b":0}]', '{"b":2}'],
  ['object.filter', '[{"a":1}, "a"]', 'undefined'],
  ['object.remove', '[{"a":1,"b":{1}}, ["a"]]', '{"b":[1]}'],
  ['object.remove', '[{"a":1,"b":2}, {"a":true}]', '{"b":2}'],
  ['object.subset', '[["create","bar","delete"], {"create","delete"}]', 'true'],
  ['object.subset', '[["create","bar"], {"create","delete"}]', 'false'],
  ['object.subset', '[[], set()]', 'false'],
  ['object.subset', '[[1], set()]', 'true'],
  ['object.subset', '[{"a":{1,2},"b":[1,2,3],"c":{"d":1,"e":2}}, {"a":{1},"b":[2,3],"c":{"e":2}}]', 'true'],
  ['object.subset', '[{"a":[1,2]}, {"a":{1}}]', 'false'],
  ['object.subset', '[[1,2,3], [1,3]]', 'false'],
  ['object.subset', '[[1,1,2], [1,2]]', 'true'],
  ['object.subset', '[{1,2}, {3}]', 'false'],
  ['object.subset', '[{"a":1}, [1]]', 'undefined'],
  ['walk', '[{"a":[1,{2}]}]', '[[[],{"a":[1,[2]]}],[["a"],[1,[2]]],[["a",0],1],[["a",1],[2]],[["a",1,2],2]]'],
  ['walk', '[7]', '[[[],7]]'],
  // json.filter / json.remove: OPA's path tree; array indexes are named by their decimal text
  ['json.filter', '[{"a":{"b":1,"c":2},"d":3}, ["a/b", "d"]]', '{"a":{"b":1},"d":3}'],
  ['json.filter', '[{"a":[{"x":1,"y":2},{"x":3}]}, {"a/1/x"}]', '{"a":[{"x":3}]}'],
  ['json.filter', '[{"a":[1,2]}, [["a", 0]]]', '{"a":[]}'],
  ['json.filter', '[{"a":{"s":{"k","l"}}}, [["a", "s", "k"]]]', '{"a":{"s":["k"]}}'],
  ['json.filter', '[{"a~b":1,"c/d":2,"e":3}, ["a~0b", "/c~1d"]]', '{"a~b":1,"c/d":2}'],
  ['json.filter', '[{"a":1}, [""]]', '{}'],
  ['json.filter', '[{"a":{"b":1,"c":2}}, ["a", "a/b"]]', '{"a":{"b":1,"c":2}}'],
  ['json.filter', '[{"a":1}, "a"]', 'undefined'],
  ['json.filter', '[{"a":1}, [1]]', 'undefined'],
  ['json.remove', '[{"a":{"b":1,"c":2},"d":3}, ["a/b", "d"]]', '{"a":{"c":2}}'],
  ['json.remove', '[{"a":[1,2,3]}, ["a/1"]]', '{"a":[1,3]}'],
  ['json.remove', '[{"a":{"s":{"k","l"}}}, {["a", "s", "k"]}]', '{"a":{"s":["l"]}}'],
  ['json.remove', '[{"a":1,"b":2}, ["a/x"]]', '{"a":1,"b":2}'],
  ['json.remove', '[[1], ["a"]]', 'undefined'],
  ['array.concat', '[[1], [2,3]]', '[1,2,3]'],
  ['array.slice', '[[1,2,3,4], 1, 3]', '[2,3]'],
  ['array.slice', '[[1,2,3,4], -1, 10]', '[1,2,3,4]'],
  ['array.slice', '[[1,2,3,4], 3, 1]', '[]'],
  ['array.reverse', '[[1,2,3]]', '[3,2,1]'],
  // strings: byte comparison over UTF-8
  ['startswith', '["/workspace/a.md", "/workspace/"]', 'true'],
  ['startswith', '["/work", "/workspace/"]', 'false'],
  ['startswith', '["abc", ""]', 'true'],
  ['startswith', '["", ""]', 'true'],
  ['startswith', '["", "a"]', 'false'],
  ['startswith', '["héllo wörld", "hé"]', 'true'],
  ['startswith', '["héllo", "he"]', 'false'],
  ['startswith', '["日本語", "日本"]', 'true'],
  ['startswith', '[1, "a"]', 'undefined'],
  ['startswith', '["a", null]', 'undefined'],
  ['endswith', '["report.md", ".md"]', 'true'],
  ['endswith', '["report.md", ".txt"]', 'false'],
  ['endswith', '["md", "a.md"]', 'false'],
  ['endswith', '["abc", ""]', 'true'],
  ['endswith', '["", ""]', 'true'],
  ['endswith', '["über 🎉", "🎉"]', 'true'],
  ['endswith', '["日本語", "本"]', 'false'],
  ['endswith', '[["a"], "a"]', 'undefined'],
  ['contains', '["Summarise the Q3 report", "report"]', 'true'],
  ['contains', '["Summarise the Q3 report", "Report"]', 'false'],
  ['contains', '["abc", ""]', 'true'],
  ['contains', '["", ""]', 'true'],
  ['contains', '["", "a"]', 'false'],
  ['contains', '["ab", "abc"]', 'false'],
  ['contains', '["aaab", "aab"]', 'true'],
  ['contains', '["abc", "abc"]', 'true'],
  ['contains', '["abcab", "cab"]', 'true'],
  ['contains', '["naïve café", "ïve c"]', 'true'],
  // word-at-a-time scan: matches in the first word, across a word boundary, in the byte tail, and a
  // borrow-flagged byte (0x60 after a matching 'a') that must not count as a candidate start
  ['contains', '["abcdefghijklmnopqrstuvwxyz", "a"]', 'true'],
  ['contains', '["abcdefghijklmnopqrstuvwxyz", "ghij"]', 'true'],
  ['contains', '["abcdefghijklmnopqrstuvwxyz", "xyz"]', 'true'],
  ['contains', '["abcdefghijklmnopqrstuvwxyz", "xyza"]', 'false'],
  ['contains', '["xxxxa`bxxxxxxxxxxxxx", "ab"]', 'false'],
  ['contains', '["xxxxa`bxxxxxxxxxxxxx", "`b"]', 'true'],
  ['contains', '["lorem ipsum dolor sit amet lorem ipsum dolor sit amet lorem ipsum 7", "7"]', 'true'],
  ['contains', '["lorem ipsum dolor sit amet lorem ipsum dolor sit amet lorem ipsum", "@"]', 'false'],
  ['contains', '["ééééééééééééé€", "€"]', 'true'],
  ['contains', '["x🎉y", "🎉"]', 'true'],
  ['contains', '["日本語", "本語"]', 'true'],
  ['contains', '["日本語", "語日"]', 'false'],
  ['contains', '["a", {"a"}]', 'undefined'],
];

describe('native builtins', () => {
  it.each(cases)('%s(%s) = %s', (name, args, want) => {
    expect(call(name, args)).toBe(want);
  });

  it('every native builtin is callable from a plan; only those with a host fallback are listed as host builtins', () => {
    expect(Object.keys(p.entrypoints).sort()).toEqual([...names].sort());
    const ex = (p.wasmInstance as unknown as { exports: Record<string, any> }).exports;
    const listed = Object.keys(JSON.parse(readCString(p, ex.opa_json_dump(ex.builtins()))) as object).sort();
    const withFallback = names
      .filter((n) => NATIVE_BUILTINS.get(n)!.hostFallback)
      .map(hostBuiltinName)
      .sort();
    expect(listed).toEqual(withFallback);
    expect(withFallback).toEqual(['guardian.sprintf', 'lower', 'replace', 'strings.replace_n', 'to_number', 'upper']);
  });

  it('strings order byte-wise (UTF-8, as Go) whatever their length and where they first differ', () => {
    const rnd = seededBelow(0x3c6ef372);
    const alphabet = ['a', 'b', 'z', 'A', '0', 'é', 'ÿ', '€'];
    const word = (len: number) => Array.from({ length: len }, () => alphabet[rnd(alphabet.length)]).join('');
    const strings: string[] = [];
    for (let k = 0; k < 60; k++) {
      const prefix = word(rnd(20));
      strings.push(prefix + word(rnd(4)), prefix + word(rnd(12)));
    }
    const byteOrder = [...strings].sort((a, b) => Buffer.compare(Buffer.from(a), Buffer.from(b)));
    expect(JSON.parse(call('sort', JSON.stringify([strings])))).toEqual(byteOrder);
    for (let k = 0; k + 1 < strings.length; k += 2) {
      const [a, b] = [strings[k], strings[k + 1]];
      expect(call('lt', JSON.stringify([a, b])), `${a} < ${b}`).toBe(
        String(Buffer.compare(Buffer.from(a), Buffer.from(b)) < 0),
      );
    }
  });

  it('native results agree between the fast and the slow path', () => {
    expect(both.fast.evaluate([0.1, 0.2], 'plus')).toEqual(both.slow.evaluate([0.1, 0.2], 'plus'));
    expect(both.fast.evaluate([[3, 1, 2]], 'sort')).toEqual([{ result: [1, 2, 3] }]);
    expect(both.slow.evaluate([[3, 1, 2]], 'sort')).toEqual([{ result: [1, 2, 3] }]);
  });
});

describe('strict builtin errors', () => {
  it('abort with eval_builtin_error / eval_type_error and the statement location', async () => {
    const strict = await loadBoth(builtinPolicy(['div', 'plus', 'rem'], 'calc.rego'), { strictBuiltinErrors: true });
    for (const pol of [strict.fast, strict.slow]) {
      expect(thrown(() => pol.evaluate([1, 0], 'div'))).toBe('calc.rego:3: eval_builtin_error: div: divide by zero');
      expect(thrown(() => pol.evaluate(['a', 1], 'plus'))).toBe(
        'calc.rego:3: eval_type_error: plus: operand 1 must be number but got string',
      );
      expect(thrown(() => pol.evaluate([1, 0], 'rem'))).toBe('calc.rego:3: eval_builtin_error: rem: modulo by zero');
      expect(pol.evaluate([6, 3], 'div')).toEqual([{ result: 2 }]);
    }
    const lax = await loadBoth(builtinPolicy(['div'], 'calc.rego'));
    expect(lax.fast.evaluate([1, 0], 'div')).toEqual([]);
    expect(lax.slow.evaluate([1, 0], 'div')).toEqual([]);
  });

  it('string builtins: both operands must be strings (eval_type_error strict, undefined otherwise)', async () => {
    const fns = ['contains', 'endswith', 'startswith'];
    const strict = await loadBoth(builtinPolicy(fns, 'str.rego'), { strictBuiltinErrors: true });
    const lax = await loadBoth(builtinPolicy(fns, 'str.rego'));
    for (const fn of fns) {
      for (const pol of [strict.fast, strict.slow]) {
        expect(thrown(() => pol.evaluate([1, 'a'], fn))).toBe(
          `str.rego:3: eval_type_error: ${fn}: operand 1 must be string but got number`,
        );
        expect(thrown(() => pol.evaluate(['a', ['a']], fn))).toBe(
          `str.rego:3: eval_type_error: ${fn}: operand 2 must be string but got array`,
        );
        expect(thrown(() => pol.evaluate([null, true], fn))).toBe(
          `str.rego:3: eval_type_error: ${fn}: operand 1 must be string but got null`,
        );
        expect(pol.evaluate(['héllo', 'héllo'], fn)).toEqual([{ result: true }]);
      }
      for (const pol of [lax.fast, lax.slow]) {
        expect(pol.evaluate([1, 'a'], fn)).toEqual([]);
        expect(pol.evaluate(['a', { a: 1 }], fn)).toEqual([]);
        expect(pol.evaluate(['日本語', ''], fn)).toEqual([{ result: true }]);
      }
    }
    expect(strict.fast.evaluate(['/workspace/x.md', '/workspace/'], 'startswith')).toEqual([{ result: true }]);
    expect(strict.slow.evaluate(['/workspace/x.md', '.md'], 'endswith')).toEqual([{ result: true }]);
    expect(strict.fast.evaluate(['/workspace/x.md', '..'], 'contains')).toEqual([{ result: false }]);
    expect(strict.slow.evaluate(['/workspace/x.md', '..'], 'contains')).toEqual([{ result: false }]);
  });
});

describe('number text', () => {
  // Deterministic xorshift so failures reproduce.
  let seed = 0x9e3779b9;
  const rnd = () => {
    seed ^= seed << 13;
    seed ^= seed >>> 17;
    seed ^= seed << 5;
    return seed >>> 0;
  };
  const randomDouble = (): number => {
    const view = new DataView(new ArrayBuffer(8));
    for (;;) {
      view.setUint32(0, rnd());
      view.setUint32(4, rnd());
      const x = view.getFloat64(0);
      if (Number.isFinite(x)) return x;
    }
  };

  it('parses decimal text to the nearest double and prints floats like Go/JS (shortest, closest)', () => {
    const samples: number[] = [
      0.1,
      0.2,
      0.3,
      1 / 3,
      2 / 3,
      1e-7,
      1.5e-7,
      123.456,
      5e-324,
      1.7976931348623157e308,
      2 ** 53 + 2,
      1e21,
      1e20,
    ];
    for (let i = 0; i < 1500; i++) samples.push(randomDouble());
    for (let i = 0; i < 500; i++)
      samples.push(Number(`${rnd() % 100000}.${rnd()}${rnd()}`) * 10 ** ((rnd() % 40) - 20));
    for (const x of samples) {
      const text = JSON.stringify(x);
      // x + 0 goes through the runtime's parser (literal text → f64) and float formatter
      expect(call('plus', `[${text}, 0]`), text).toBe(JSON.stringify(x + 0));
    }
  });

  it('parses long decimal literals (more than 19 digits) to the nearest double', () => {
    for (const text of [
      '0.1000000000000000055511151231257827',
      '3.14159265358979323846264338327950288',
      '123456789012345678901234.5',
    ]) {
      expect(call('plus', `[${text}, 0]`)).toBe(JSON.stringify(Number(text)));
    }
  });
});

describe('exact integer arithmetic beyond 64 bits', () => {
  let seed = 12345;
  const rnd = () => {
    seed = (Math.imul(seed, 1103515245) + 12345) >>> 0;
    return seed;
  };
  const randomInt = (): bigint => {
    const digits = 1 + (rnd() % 40);
    let s = String(1 + (rnd() % 9));
    for (let i = 1; i < digits; i++) s += String(rnd() % 10);
    return rnd() % 2 ? -BigInt(s) : BigInt(s);
  };

  it('plus, minus and mul agree with BigInt on random integers up to 40 digits', () => {
    const edge = [0n, 1n, -1n, 9223372036854775807n, -9223372036854775808n, 10n ** 18n, -(10n ** 18n), 10n ** 19n - 1n];
    const values = [...edge, ...Array.from({ length: 60 }, randomInt)];
    for (let i = 0; i < values.length; i++) {
      const a = values[i];
      const b = values[(i * 7 + 3) % values.length];
      const args = `[${a}, ${b}]`;
      expect(call('plus', args), `${a} + ${b}`).toBe(String(a + b));
      expect(call('minus', args), `${a} - ${b}`).toBe(String(a - b));
      expect(call('mul', args), `${a} * ${b}`).toBe(String(a * b));
    }
  });

  it('div is exact when the divisor divides, rem agrees with BigInt (truncated, sign of the dividend)', () => {
    for (let i = 0; i < 40; i++) {
      const b = randomInt() || 7n;
      const c = randomInt();
      const a = b * c;
      expect(call('div', `[${a}, ${b}]`), `${a} / ${b}`).toBe(String(c));
      const x = randomInt();
      expect(call('rem', `[${x}, ${b}]`), `${x} % ${b}`).toBe(String(x % b));
    }
    expect(call('div', '[12345678901234567890123, 0]')).toBe('undefined');
    expect(call('rem', '[12345678901234567890123, 0]')).toBe('undefined');
  });

  it('sum and product stay exact past 2^63', () => {
    const xs = [9223372036854775807n, 9223372036854775807n, 12345678901234567890123n];
    expect(call('sum', `[[${xs.join(',')}]]`)).toBe(String(xs.reduce((x, y) => x + y)));
    expect(call('product', `[[${xs.join(',')}]]`)).toBe(String(xs.reduce((x, y) => x * y)));
  });
});
