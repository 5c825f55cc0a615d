// canonicalJson (RFC 8785 through the `canonicalize` package): the RFC's own number and ordering samples, the
// refusals, and the member splice the signing path uses, against canonicalising the whole object.
import canonicalize from 'canonicalize';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { canonicalJson, canonicalJsonWithout } from '../../src/chain/index.ts';

// Strings from the whole UTF-16 range (lone surrogates included: both must refuse them) and full-range doubles.
const text = fc.oneof(fc.string({ unit: 'binary' }), fc.string({ unit: 'grapheme' }), fc.string());
const json = fc.letrec((tie) => ({
  value: fc.oneof(
    { depthSize: 'small' },
    fc.constant(null),
    fc.boolean(),
    fc.double({ noNaN: true, noDefaultInfinity: true }),
    fc.integer(),
    text,
    fc.array(tie('value'), { maxLength: 5 }),
    fc.dictionary(text, tie('value'), { maxKeys: 6 }),
  ),
})).value;

const reference = (v: unknown): string | Error => {
  try {
    return canonicalize(v) ?? new Error('undefined');
  } catch (err) {
    return err as Error;
  }
};

describe('canonicalJson (RFC 8785)', () => {
  it('writes RFC 8785 §3.2.2.3 numbers and sorts keys by UTF-16 code units (§3.2.3)', () => {
    expect(canonicalJson([1e21, 1e-7, -0, 0.000001, 123456789012345680000, 4.5, 2 ** 53])).toBe(
      '[1e+21,1e-7,0,0.000001,123456789012345680000,4.5,9007199254740992]',
    );
    expect(canonicalJson({ '\u20ac': 1, '\r': 2, '\ud83d\ude00': 3, '\ufb33': 4, '1': 5, a: 6 })).toBe(
      '{"\\r":2,"1":5,"a":6,"\u20ac":1,"\ud83d\ude00":3,"\ufb33":4}',
    );
    expect(canonicalJson({ b: undefined, a: [undefined, 1] })).toBe('{"a":[null,1]}');
    expect(canonicalJson({ at: new Date(0) })).toBe('{"at":"1970-01-01T00:00:00.000Z"}');
  });

  it('writes every value exactly as the canonicalize package does, or refuses it as the package does', () => {
    // Beyond plain JSON too: dates and other toJSON values, undefined and symbol members, holes, deep values.
    const odd = fc.oneof(
      fc.constant(undefined),
      fc.constant(Symbol('s')),
      fc.date({ noInvalidDate: true }),
      fc.constant({ toJSON: () => ({ b: 1, a: [2] }) }),
    );
    const value = fc.letrec((tie) => ({
      value: fc.oneof(
        { depthSize: 'small' },
        fc.constant(null),
        fc.boolean(),
        fc.double(),
        fc.integer(),
        text,
        odd,
        fc.array(tie('value'), { maxLength: 5 }),
        fc.sparseArray(tie('value'), { maxLength: 5 }),
        fc.dictionary(text, tie('value'), { maxKeys: 6 }),
      ),
    })).value;
    fc.assert(
      fc.property(value, (v) => {
        const want = reference(v);
        if (want instanceof Error) expect(() => canonicalJson(v)).toThrow(TypeError);
        else expect(canonicalJson(v)).toBe(want);
      }),
      { numRuns: 5000 },
    );
    // Objects past the insertion-sort length (32 members) take Array.prototype.sort.
    fc.assert(
      fc.property(fc.dictionary(text, fc.oneof(fc.integer(), text), { minKeys: 20, maxKeys: 60 }), (v) => {
        const want = reference(v);
        if (want instanceof Error) expect(() => canonicalJson(v)).toThrow(TypeError);
        else expect(canonicalJson(v)).toBe(want);
      }),
      { numRuns: 300 },
    );
    let deep: unknown = 'x';
    for (let i = 0; i < 300; i++) deep = i % 2 ? [deep] : { k: deep };
    expect(canonicalJson(deep)).toBe(reference(deep));
  });

  it('writes values whose members are already in canonical order (what a JCS client sends) as the package does', () => {
    // Rebuilt with every object's members inserted in §3.2.3 order, odd values and refusals included.
    const inOrder = (v: unknown): unknown => {
      if (Array.isArray(v)) return v.map((item, i) => (i in v ? inOrder(item) : item));
      if (v === null || typeof v !== 'object' || v instanceof Date) return v;
      const out: Record<string, unknown> = {};
      for (const key of Object.keys(v).sort()) out[key] = inOrder((v as Record<string, unknown>)[key]);
      return out;
    };
    const odd = fc.oneof(
      fc.constant(undefined),
      fc.constant(Symbol('s')),
      fc.date({ noInvalidDate: true }),
      fc.constant(NaN),
      fc.constant('\ud800'),
    );
    const value = fc.letrec((tie) => ({
      value: fc.oneof(
        { depthSize: 'small' },
        fc.constant(null),
        fc.boolean(),
        fc.double(),
        fc.integer(),
        text,
        odd,
        fc.array(tie('value'), { maxLength: 5 }),
        fc.sparseArray(tie('value'), { maxLength: 5 }),
        fc.dictionary(fc.oneof(text, fc.nat().map(String)), tie('value'), { maxKeys: 8 }),
      ),
    })).value;
    fc.assert(
      fc.property(value, (raw) => {
        const v = inOrder(raw);
        const want = reference(v);
        if (want instanceof Error) expect(() => canonicalJson(v)).toThrow(TypeError);
        else expect(canonicalJson(v)).toBe(want);
      }),
      { numRuns: 5000 },
    );
    const envelope = JSON.parse(
      canonicalJson({
        jsonrpc: '2.0',
        id: 'r-1',
        method: 'steps/toolCallRequest',
        params: { b: [1, { y: 2, x: 'é' }], a: -0, '10': 1, '9': 2 },
      }),
    );
    expect(canonicalJson(envelope)).toBe(canonicalize(envelope));
  });

  it('refuses non-finite numbers, lone surrogates, circular values and non-JSON types', () => {
    const circular: Record<string, unknown> = { a: 1 };
    circular.self = { deeper: circular };
    for (const bad of [
      NaN,
      Infinity,
      { x: -Infinity },
      '\ud800',
      { '\udc00': 1 },
      ['a\ud83d'],
      circular,
      undefined,
      10n,
      () => 1,
    ]) {
      expect(() => canonicalJson(bad)).toThrow(TypeError);
    }
  });

  it('splices a member into an object canonicalised without it: the same text as canonicalising the whole', () => {
    fc.assert(
      fc.property(fc.dictionary(text, json, { maxKeys: 8 }), text, json, (object, name, value) => {
        const without = { ...object };
        delete without[name];
        const want = reference({ ...without, [name]: value });
        const wantWithout = reference(without);
        if (want instanceof Error || wantWithout instanceof Error) return;
        const split = canonicalJsonWithout(object, name);
        expect(split.text).toBe(wantWithout);
        expect(split.withMember(value)).toBe(want);
      }),
      { numRuns: 2000 },
    );
    const split = canonicalJsonWithout({ type: 'final', decision: 'allow', signature: { old: true } }, 'signature');
    expect(split.text).toBe('{"decision":"allow","type":"final"}');
    expect(split.withMember({ value: 'x' })).toBe('{"decision":"allow","signature":{"value":"x"},"type":"final"}');
  });
});
