// The runtime's JSON / Rego-term parser and serialisers, driven through the module's ABI exports.
import { describe, it, expect, beforeAll } from 'vitest';
import type { LoadedPolicy } from '@open-policy-agent/opa-wasm';
import {
  PolicyBuilder,
  stmt,
  returnBlock,
  loadBoth,
  roundTrip,
  exportsOf,
  writeBytes,
  readCString,
} from './ir-builder.ts';
import { seededBelow } from './seeded-random.ts';

let p: LoadedPolicy;

beforeAll(async () => {
  const b = new PolicyBuilder();
  b.rule('t.x', [{ stmts: [stmt('AssignVarOnceStmt', { source: b.str('x'), target: 2 })] }, returnBlock()]);
  b.entrypoint('t/x', 't.x');
  p = (await loadBoth(b.build())).fast;
});

describe('JSON round trips', () => {
  it('sorts object keys and keeps scalars', () => {
    expect(roundTrip(p, ' {"b" : 1, "a":[true,false,null,"x", {}, []]} ')).toBe(
      '{"a":[true,false,null,"x",{},[]],"b":1}',
    );
    expect(roundTrip(p, '{"a":1,"a":2}')).toBe('{"a":2}');
    expect(roundTrip(p, '"plain"')).toBe('"plain"');
  });

  it('sorts large unsorted objects with duplicate keys (last one wins)', () => {
    const keys = Array.from({ length: 5000 }, (_, i) => `k${(i * 7919) % 5000}`);
    const text = '{' + keys.map((k, i) => `${JSON.stringify(k)}:${i}`).join(',') + ',"k1":"dup","k0":"dup0"}';
    const expected: Record<string, unknown> = {};
    keys.forEach((k, i) => (expected[k] = i));
    expected.k1 = 'dup';
    expected.k0 = 'dup0';
    const sorted = Object.keys(expected).sort((a, b) => Buffer.compare(Buffer.from(a), Buffer.from(b)));
    const want = '{' + sorted.map((k) => `${JSON.stringify(k)}:${JSON.stringify(expected[k])}`).join(',') + '}';
    expect(roundTrip(p, text)).toBe(want);
    // number keys (Rego syntax) sort numerically and dump as their JSON text
    const numeric = Object.keys(expected)
      .map((k) => Number(k.slice(1)))
      .sort((a, b) => a - b);
    const wantNumeric = '{' + numeric.map((n) => `"${n}":${JSON.stringify(expected[`k${n}`])}`).join(',') + '}';
    expect(roundTrip(p, text.replace(/"k(\d+)"/g, '$1'), 'value')).toBe(wantNumeric);
  });

  it('decodes unicode escapes and surrogate pairs to UTF-8 and dumps UTF-8 raw', () => {
    expect(roundTrip(p, '"h\\u00e9llo \\u2713 \\ud834\\udd1e"')).toBe('"héllo ✓ 𝄞"');
    expect(roundTrip(p, '"héllo ✓ 𝄞"')).toBe('"héllo ✓ 𝄞"');
    // a lone surrogate becomes U+FFFD, as Go does
    expect(roundTrip(p, '"\\ud834x"')).toBe('"\uFFFDx"');
    expect(roundTrip(p, '{"ключ":"значение"}')).toBe('{"ключ":"значение"}');
  });

  it('escapes quotes, backslashes and control characters', () => {
    const out = roundTrip(p, '"\\"\\\\\\/\\b\\f\\n\\r\\t\\u0001"');
    expect(out).toBe('"\\"\\\\/\\u0008\\u000c\\n\\r\\t\\u0001"');
    expect(JSON.parse(out!)).toBe('"\\/\b\f\n\r\t\u0001');
  });

  it('parses long strings with escapes and control bytes at every offset of a 16-byte block', () => {
    const plain = 'lorem ipsum dolor sit amet, 2026-11-29T12:07:00Z '.repeat(3);
    for (let at = 0; at < 40; at++) {
      const text = plain.slice(0, at) + '\n"\\' + plain.slice(at) + '\t' + plain.slice(0, at);
      expect(roundTrip(p, JSON.stringify(text)), `escapes at ${at}`).toBe(JSON.stringify(text));
      // a raw control byte or a missing closing quote anywhere is malformed
      expect(
        roundTrip(p, JSON.stringify(plain).slice(0, at + 1) + '\u0001' + JSON.stringify(plain).slice(at + 1)),
      ).toBeNull();
      expect(roundTrip(p, '"' + plain.slice(0, at + 20))).toBeNull();
    }
  });

  it('keeps number literals exactly, including integers beyond 2^53 and decimals', () => {
    for (const n of [
      '0',
      '-1',
      '9007199254740993',
      '123456789012345678901234567890',
      '-98765432109876543210',
      '1.50',
      '1e400',
      '-2.5E-3',
      '0.1',
    ]) {
      expect(roundTrip(p, `[${n}]`)).toBe(`[${n}]`);
    }
  });

  it('rejects malformed JSON', () => {
    for (const bad of [
      '',
      ' ',
      '{"a":1,}',
      '[1 2]',
      '[1,]',
      '01',
      '1.',
      '.5',
      '-',
      '1e',
      '"\\x"',
      'tru',
      'nul',
      '"unterminated',
      '"tab\there"',
      '1 2',
      'NaN',
      "'single'",
      '{a:1}',
      '{"a" 1}',
      '{1:2}',
      '{1,2}',
      'set()',
      '[',
      '{"a":[}',
      '"\\u12G4"',
    ]) {
      expect(roundTrip(p, bad), bad).toBeNull();
    }
  });

  it('limits nesting depth to 1000', () => {
    const nest = (n: number) => '['.repeat(n) + ']'.repeat(n);
    expect(roundTrip(p, nest(1000))).toBe(nest(1000));
    expect(roundTrip(p, nest(1001))).toBeNull();
    expect(roundTrip(p, '{"a":'.repeat(1001) + '1' + '}'.repeat(1001))).toBeNull();
  });
});

describe('Rego term syntax (opa_value_parse / opa_value_dump)', () => {
  it('parses sets and dumps them as sorted arrays in JSON, as sets in Rego syntax', () => {
    expect(roundTrip(p, '{3, 1, "a", 1}', 'value')).toBe('[1,3,"a"]');
    expect(roundTrip(p, '{3, 1, "a", 1}', 'value', 'value')).toBe('{1,3,"a"}');
    expect(roundTrip(p, 'set()', 'value', 'value')).toBe('set()');
    expect(roundTrip(p, 'set( )', 'value')).toBe('[]');
    expect(roundTrip(p, '{}', 'value', 'value')).toBe('{}');
  });

  it('dumps non-string keys as their JSON text (escaped, also when nested)', () => {
    expect(roundTrip(p, '{1: "a", "b": 2}', 'value')).toBe('{"1":"a","b":2}');
    expect(roundTrip(p, '{[1, "x"]: true}', 'value')).toBe('{"[1,\\"x\\"]":true}');
    expect(roundTrip(p, '{{"a": "q\\""}: 1}', 'value')).toBe('{"{\\"a\\":\\"q\\\\\\"\\"}":1}');
    expect(JSON.parse(roundTrip(p, '{{"a": "q\\""}: 1}', 'value')!)).toEqual({ '{"a":"q\\""}': 1 });
    expect(roundTrip(p, '{1: "a", {2}: 3}', 'value', 'value')).toBe('{1:"a",{2}:3}');
  });
});

describe('data update ABI', () => {
  it('opa_value_add_path / opa_value_remove_path upsert and delete nested keys', () => {
    const ex = exportsOf(p);
    ex.opa_heap_ptr_set(p.dataHeapPtr);
    const parse = (t: string) => {
      const bytes = new TextEncoder().encode(t);
      return ex.opa_json_parse(writeBytes(p, bytes), bytes.length) as number;
    };
    const base = parse('{"a":{"b":123}}');
    expect(ex.opa_value_add_path(base, parse('["a","x","y"]'), parse('{"foo":"bar"}'))).toBe(0);
    expect(readCString(p, ex.opa_json_dump(base))).toBe('{"a":{"b":123,"x":{"y":{"foo":"bar"}}}}');
    expect(ex.opa_value_remove_path(base, parse('["a","b"]'))).toBe(0);
    expect(readCString(p, ex.opa_json_dump(base))).toBe('{"a":{"x":{"y":{"foo":"bar"}}}}');
    expect(ex.opa_value_add_path(parse('[1]'), parse('["a"]'), parse('1'))).toBe(2);
    expect(ex.opa_value_add_path(base, parse('[]'), parse('1'))).toBe(3);
  });
});

describe('allocator and opa_eval', () => {
  it('refuses allocations beyond its own 1 GiB heap cap with a clear abort, without growing memory', () => {
    const ex = exportsOf(p);
    const before = (p.mem as unknown as { buffer: ArrayBuffer }).buffer.byteLength;
    let err: unknown;
    try {
      ex.opa_malloc(2 ** 30 + 1);
    } catch (e) {
      err = e;
    }
    expect(err).toBe('opa_malloc: failed: allocation exceeds the 1 GiB heap limit');
    expect((p.mem as unknown as { buffer: ArrayBuffer }).buffer.byteLength).toBe(before);
    expect(p.evaluate({})).toEqual([{ result: 'x' }]);
  });

  it('dumps text that runs past the end of memory (grown while writing) into one exact allocation', () => {
    const ex = exportsOf(p);
    const mem = () => (p.mem as unknown as { buffer: ArrayBuffer }).buffer.byteLength;
    const long = 'plain text, then "quotes", \\ and \u0001 control bytes\n'.repeat(40);
    const doc = {
      a: [1, 2.5, null, true, 'x'.repeat(300)],
      b: { long, nested: { k: long.slice(0, 77) } },
      c: 'é ✓ 𝄞'.repeat(30),
    };
    const want = JSON.stringify(doc);
    // Non-string keys dump as escaped JSON text inside a string (nested escaping); checked against a dump with room.
    const regoText =
      '{' +
      Array.from(
        { length: 30 },
        (_, i) => `{"k${i}": "q\\"x\\n${'y'.repeat(i * 7)}"}: [${i}, "${'z'.repeat(i * 5)}"]`,
      ).join(', ') +
      '}';
    const dumpWith = (text: string, parse: 'json' | 'value', dump: 'json' | 'value', slack: number): string => {
      ex.opa_heap_ptr_set(p.dataHeapPtr);
      const bytes = new TextEncoder().encode(text);
      const addr = writeBytes(p, bytes);
      const v = (
        parse === 'json' ? ex.opa_json_parse(addr, bytes.length) : ex.opa_value_parse(addr, bytes.length)
      ) as number;
      expect(v).not.toBe(0);
      // Leave about `slack` bytes between the heap pointer and the end of memory.
      const free = mem() - (ex.opa_heap_ptr_get() as number);
      if (free > slack + 8) ex.opa_malloc(free - slack - 8);
      const before = ex.opa_heap_ptr_get() as number;
      const out = (dump === 'json' ? ex.opa_json_dump(v) : ex.opa_value_dump(v)) as number;
      const result = readCString(p, out);
      expect(out).toBe(before);
      const size = new TextEncoder().encode(result).length + 1;
      expect(ex.opa_heap_ptr_get()).toBe(before + Math.ceil(size / 8) * 8);
      return result;
    };
    const roomy = {
      json: dumpWith(regoText, 'value', 'json', 1 << 20),
      value: dumpWith(regoText, 'value', 'value', 1 << 20),
    };
    expect(roomy.json).toContain('"{\\"k1\\":\\"q\\\\\\"x');
    for (const slack of [0, 1, 7, 8, 95, 96, 97, 300, 5000]) {
      for (const dump of ['json', 'value'] as const) {
        expect(dumpWith(want, 'json', dump, slack), `${dump} with ${slack} bytes free`).toBe(want);
        expect(dumpWith(regoText, 'value', dump, slack), `non-string keys, ${dump} with ${slack} bytes free`).toBe(
          roomy[dump],
        );
      }
    }
    expect(p.evaluate({})).toEqual([{ result: 'x' }]);
  });

  it('opa_eval dumps the result set as JSON (format 0) or Rego syntax (format 1) and parses Rego input', () => {
    const ex = exportsOf(p);
    const input = new TextEncoder().encode('{"s": {2, 1}}');
    const inputAddr = p.dataHeapPtr;
    new Uint8Array((p.mem as unknown as { buffer: ArrayBuffer }).buffer).set(input, inputAddr);
    const heap = inputAddr + input.length;
    expect(readCString(p, ex.opa_eval(0, 0, p.dataAddr, inputAddr, input.length, heap, 0))).toBe('[{"result":"x"}]');
    expect(readCString(p, ex.opa_eval(0, 0, p.dataAddr, inputAddr, input.length, heap, 1))).toBe('{{"result":"x"}}');
    expect(readCString(p, ex.opa_eval(0, 0, p.dataAddr, 0, 0, heap, 0))).toBe('[{"result":"x"}]');
  });
});

describe('random JSON texts against JSON.parse', () => {
  // Keys never look like array indices, so a JS object keeps them in insertion order and the dump's key order shows.
  const KEYS = [
    'a',
    'b',
    'ab',
    'b\u00e9',
    'z',
    'k1',
    'k10',
    'k2',
    'A',
    '_',
    'é',
    '✓',
    '𝄞',
    'a"q',
    'x\\y',
    'long_key_name',
    'long_key_name_b',
    'long_key_namf',
    'long_key_name_\u00e9',
  ];
  type J = null | boolean | number | string | J[] | { [k: string]: J };

  function randomValue(below: (n: number) => number, depth: number): J {
    const kind = below(depth > 3 ? 5 : 7);
    if (kind === 0) return null;
    if (kind === 1) return below(2) === 0;
    if (kind === 2) return below(2_000_001) - 1_000_000;
    if (kind === 3 || kind === 4) return KEYS[below(KEYS.length)] + '\n\t"'.slice(0, below(4));
    if (kind === 5) return Array.from({ length: below(5) }, () => randomValue(below, depth + 1));
    const o: { [k: string]: J } = {};
    for (let i = below(8); i > 0; i--) o[KEYS[below(KEYS.length)]] = randomValue(below, depth + 1);
    return o;
  }

  // Object text with keys in the given order, optionally repeating a key earlier with a value the last one overrides.
  function textOf(v: J, below: (n: number) => number): string {
    if (Array.isArray(v)) return '[' + v.map((x) => textOf(x, below)).join(',') + ']';
    if (v === null || typeof v !== 'object') return JSON.stringify(v);
    let keys = Object.keys(v);
    const order = below(3);
    if (order === 1) keys = keys.sort(byUtf8);
    else if (order === 2) keys = keys.reverse();
    const members = keys.map((k) => `${JSON.stringify(k)} : ${textOf(v[k], below)}`);
    if (keys.length > 0 && below(3) === 0) {
      // an earlier duplicate, right before the winning member (so sorted input stays sorted) or first
      const i = below(keys.length);
      members.splice(below(2) === 0 ? i : 0, 0, `${JSON.stringify(keys[i])}:"overridden"`);
    }
    return '{ ' + members.join(',') + ' }';
  }

  const byUtf8 = (a: string, b: string) => Buffer.compare(Buffer.from(a), Buffer.from(b));
  function canonical(v: J): J {
    if (Array.isArray(v)) return v.map(canonical);
    if (v === null || typeof v !== 'object') return v;
    const o: { [k: string]: J } = {};
    for (const k of Object.keys(v).sort(byUtf8)) o[k] = canonical(v[k]);
    return o;
  }

  it('parses and dumps 3,000 random documents (sorted, unsorted, duplicate keys) as their canonical form', () => {
    for (let seed = 1; seed <= 3000; seed++) {
      const below = seededBelow(seed * 2654435761);
      const text = textOf(randomValue(below, 0), below);
      const out = roundTrip(p, text);
      // the generated strings escape the same way in the dump as in JSON.stringify, so the texts must be equal
      expect(out, `seed ${seed}: ${text}`).toBe(JSON.stringify(canonical(JSON.parse(text) as J)));
    }
  });
});
