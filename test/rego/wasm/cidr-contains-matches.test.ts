// net.cidr_contains_matches through the whole toolchain and the unmodified opa-wasm host. Expected values are
// the examples of OPA's policy reference ("net.cidr_contains_matches") and the semantics of OPA's
// topdown/cidr.go: a set of [index1, index2] for every pair net.cidr_contains accepts; a string operand is its
// own index, an array is indexed by position, a set by its elements, an object by its keys.
import { describe, expect, it } from 'vitest';
import { capabilitiesDocument } from '../../../src/rego/builtins/capabilities.ts';
import {
  CapabilitiesError,
  compilePolicyWasm,
  hostBuiltins,
  instantiatePolicy,
  readCapabilities,
  RegoErrors,
} from '../../../src/rego/index.ts';
import { thrownMessage } from './thrown-message.ts';

const SOURCE = `package cidrs

# OPA's documented examples.
docs_string := net.cidr_contains_matches("1.1.1.0/24", "1.1.1.128")

docs_array := net.cidr_contains_matches(["1.1.1.0/24", "1.1.2.0/24"], "1.1.1.128")

docs_pairs := net.cidr_contains_matches([["1.1.0.0/16", "foo"], "1.1.2.0/24"], ["1.1.1.128", ["1.1.254.254", "bar"]])

docs_objects := net.cidr_contains_matches(
	{"x": "1.1.0.0/16", "y": "1.1.2.0/24"},
	{"a": "1.1.1.128", "b": ["1.1.254.254", "bar"]},
)

sets := net.cidr_contains_matches({"10.0.0.0/8", "192.168.0.0/16"}, {"10.1.2.3", ["192.168.1.1", "db"], "172.16.0.1"})

# A function hides the key types from the type checker, as a value from a rule or input would.
hide(x) := x

number_keys := net.cidr_contains_matches(hide({1: "10.0.0.0/8", "1": "11.0.0.0/8"}), ["10.2.3.4", "11.2.3.4"])

number_key_types := [[type_name(m[0]), type_name(m[1])] | some m in number_keys]

ipv6 := net.cidr_contains_matches(["2001:db8::/32", "10.0.0.0/8"], ["2001:db8::1", "2001:db9::1", "10.0.0.1", "::ffff:10.9.9.9"])

cidr_in_cidr := net.cidr_contains_matches("10.0.0.0/8", ["10.1.0.0/16", "10.0.0.0/7", "10.0.0.0/8"])

none := net.cidr_contains_matches("10.0.0.0/8", ["11.0.0.1", "192.168.0.0/16"])

shape := {"type": type_name(none), "is_set": is_set(docs_pairs), "count": count(docs_pairs), "member": [0, 1] in docs_pairs}

from_input := net.cidr_contains_matches(input.a, input.b)

input_type := type_name(net.cidr_contains_matches(input.a, input.b))

undefined_operand := net.cidr_contains_matches(input.missing, "1.2.3.4")

fake(_, _) := {["mocked", 1]}

by_value := x if {
	x := net.cidr_contains_matches("10.0.0.0/8", "10.0.0.1") with net.cidr_contains_matches as {["value", 0]}
}

by_function := x if {
	x := net.cidr_contains_matches("10.0.0.0/8", "10.0.0.1") with net.cidr_contains_matches as fake
}

mocked := [by_value, by_function]
`;

const ENTRYPOINTS = [
  'docs_string',
  'docs_array',
  'docs_pairs',
  'docs_objects',
  'sets',
  'number_keys',
  'number_key_types',
  'ipv6',
  'cidr_in_cidr',
  'none',
  'shape',
  'from_input',
  'input_type',
  'undefined_operand',
  'mocked',
].map((e) => `cidrs/${e}`);

async function load(strict: boolean) {
  const { wasm } = await compilePolicyWasm({
    sources: [{ file: 'cidrs.rego', text: SOURCE }],
    entrypoints: ENTRYPOINTS,
    strictBuiltinErrors: strict,
  });
  const policy = await instantiatePolicy(wasm, hostBuiltins({ strict }));
  policy.setData({});
  return (entry: string, input: unknown = {}): unknown => {
    const rs = policy.evaluate(input, `cidrs/${entry}`) as { result: unknown }[];
    return rs.length ? rs[0].result : undefined;
  };
}

/** Sets come out of the module as JSON arrays in Rego's order; compare as sets. */
const sorted = (v: unknown): unknown => (Array.isArray(v) ? [...v].map((x) => JSON.stringify(x)).sort() : v);

describe('net.cidr_contains_matches', () => {
  it("OPA's documented examples", { timeout: 120_000 }, async () => {
    const evaluate = await load(false);
    expect(evaluate('docs_string')).toEqual([['1.1.1.0/24', '1.1.1.128']]);
    expect(evaluate('docs_array')).toEqual([[0, '1.1.1.128']]);
    expect(sorted(evaluate('docs_pairs'))).toEqual(
      sorted([
        [0, 0],
        [0, 1],
      ]),
    );
    expect(sorted(evaluate('docs_objects'))).toEqual(
      sorted([
        ['x', 'a'],
        ['x', 'b'],
      ]),
    );
  });

  it('sets are indexed by their elements, objects by their keys of any type', { timeout: 120_000 }, async () => {
    const evaluate = await load(false);
    expect(sorted(evaluate('sets'))).toEqual(
      sorted([
        ['10.0.0.0/8', '10.1.2.3'],
        ['192.168.0.0/16', ['192.168.1.1', 'db']],
      ]),
    );
    // Key 1 (a number) and key "1" stay apart: [1, 0] and ["1", 1].
    expect(sorted(evaluate('number_key_types'))).toEqual(
      sorted([
        ['number', 'number'],
        ['string', 'number'],
      ]),
    );
    expect(sorted(evaluate('number_keys'))).toEqual(
      sorted([
        [1, 0],
        ['1', 1],
      ]),
    );
  });

  it('IPv6, addresses and CIDRs in the second operand, no match', { timeout: 120_000 }, async () => {
    const evaluate = await load(false);
    // An IPv4-mapped IPv6 address is the IPv4 address, as for net.cidr_contains.
    expect(sorted(evaluate('ipv6'))).toEqual(
      sorted([
        [0, 0],
        [1, 2],
        [1, 3],
      ]),
    );
    expect(sorted(evaluate('cidr_in_cidr'))).toEqual(
      sorted([
        ['10.0.0.0/8', 0],
        ['10.0.0.0/8', 2],
      ]),
    );
    expect(evaluate('none')).toEqual([]);
  });

  it('`with` replaces it by a value or a function, as any builtin', { timeout: 120_000 }, async () => {
    const evaluate = await load(false);
    expect(evaluate('mocked')).toEqual([[['value', 0]], [['mocked', 1]]]);
  });

  it('the result is a set', { timeout: 120_000 }, async () => {
    const evaluate = await load(false);
    expect(evaluate('shape')).toEqual({ type: 'set', is_set: true, count: 2, member: true });
    expect(evaluate('input_type', { a: ['10.0.0.0/8'], b: ['10.0.0.1'] })).toBe('set');
  });

  it('operands from input; an undefined operand makes the call undefined', { timeout: 120_000 }, async () => {
    const evaluate = await load(false);
    expect(sorted(evaluate('from_input', { a: { k: ['10.0.0.0/8', 1] }, b: [['10.1.1.1', 'x'], '9.9.9.9'] }))).toEqual(
      sorted([['k', 0]]),
    );
    // Operands of another type contribute nothing (OPA's type checker refuses them when it knows the type).
    expect(evaluate('from_input', { a: 5, b: '10.0.0.1' })).toEqual([]);
    expect(evaluate('from_input', { a: '10.0.0.0/8', b: null })).toEqual([]);
    // Operand 2 is walked per element of operand 1: an empty operand 1 reaches none of its elements.
    expect(evaluate('from_input', { a: [], b: [1] })).toEqual([]);
    expect(evaluate('undefined_operand')).toBeUndefined();
    // Non-strict: a builtin error makes the call undefined.
    expect(evaluate('from_input', { a: [1], b: '10.0.0.1' })).toBeUndefined();
  });

  it("strict errors carry OPA's texts", { timeout: 120_000 }, async () => {
    const evaluate = await load(true);
    const error = (input: unknown): string => thrownMessage(() => evaluate('from_input', input));
    const at = 'cidrs.rego:32: ';
    expect(error({ a: [1], b: '10.0.0.1' })).toBe(
      `${at}eval_builtin_error: net.cidr_contains_matches: operand 1: element must be string or non-empty array`,
    );
    expect(error({ a: { k: [] }, b: '10.0.0.1' })).toBe(
      `${at}eval_builtin_error: net.cidr_contains_matches: operand 1: element must be string or non-empty array`,
    );
    expect(error({ a: ['10.0.0.0/8'], b: [[]] })).toBe(
      `${at}eval_builtin_error: net.cidr_contains_matches: operand 2: element must be string or non-empty array`,
    );
    expect(error({ a: '10.0.0.0/8', b: { x: true } })).toBe(
      `${at}eval_builtin_error: net.cidr_contains_matches: operand 2: element must be string or non-empty array`,
    );
    expect(error({ a: ['10.0.0.0'], b: '10.0.0.1' })).toBe(
      `${at}eval_builtin_error: net.cidr_contains_matches: invalid CIDR address: 10.0.0.0`,
    );
    expect(error({ a: '10.0.0.0/8', b: ['10.0.0.256'] })).toBe(
      `${at}eval_builtin_error: net.cidr_contains_matches: not a valid textual representation of an IP address or CIDR: 10.0.0.256`,
    );
    // The CIDR of an array element is its first element; net.cidr_contains names both operands "operand 1".
    expect(error({ a: [[1, 'x']], b: '10.0.0.1' })).toBe(
      `${at}eval_type_error: net.cidr_contains_matches: operand 1 must be string but got number`,
    );
    expect(error({ a: '10.0.0.0/8', b: [[2]] })).toBe(
      `${at}eval_type_error: net.cidr_contains_matches: operand 1 must be string but got number`,
    );
  });

  it('is type-checked against OPA declaration', async () => {
    const err = await compilePolicyWasm({
      sources: [{ file: 'p.rego', text: 'package p\n\nx := net.cidr_contains_matches(1, "10.0.0.1")\n' }],
      entrypoints: ['p/x'],
    }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(RegoErrors);
    expect((err as RegoErrors).errors[0].format()).toMatch(
      /^p\.rego:3:\d+: rego_type_error: net\.cidr_contains_matches: invalid argument\(s\)/,
    );
  });
});

describe('net.cidr_contains_matches and capabilities', () => {
  it('the capabilities document lists net.cidr_contains_matches, never its internal host builtin', () => {
    const doc = capabilitiesDocument();
    const entry = doc.builtins.find((b) => b.name === 'net.cidr_contains_matches');
    const cidrs = {
      type: 'any',
      of: [
        { type: 'string' },
        {
          type: 'array',
          dynamic: { type: 'any', of: [{ type: 'string' }, { type: 'array', dynamic: { type: 'any' } }] },
        },
        {
          type: 'object',
          dynamic: {
            key: { type: 'string' },
            value: { type: 'any', of: [{ type: 'string' }, { type: 'array', dynamic: { type: 'any' } }] },
          },
        },
        { type: 'set', of: { type: 'any', of: [{ type: 'string' }, { type: 'array', dynamic: { type: 'any' } }] } },
      ],
    };
    expect(JSON.parse(JSON.stringify(entry))).toEqual({
      name: 'net.cidr_contains_matches',
      decl: {
        type: 'function',
        args: [cidrs, cidrs],
        result: { type: 'set', of: { type: 'array', static: [{ type: 'any' }, { type: 'any' }] } },
      },
    });
    expect(doc.builtins.some((b) => b.name.startsWith('internal.cidr'))).toBe(false);
  });

  it('a document listing it allows the call; one without it does not; the internal name is refused', async () => {
    const doc = capabilitiesDocument();
    const text = 'package p\n\nx := net.cidr_contains_matches(input.a, input.b)\n';
    const listed = readCapabilities(doc);
    const { wasm } = await compilePolicyWasm({
      sources: [{ file: 'p.rego', text }],
      entrypoints: ['p/x'],
      capabilities: listed,
    });
    const policy = await instantiatePolicy(wasm, hostBuiltins());
    policy.setData({});
    expect(policy.evaluate({ a: ['10.0.0.0/8'], b: ['10.1.1.1'] }, 'p/x')).toEqual([{ result: [[0, 0]] }]);

    const without = readCapabilities({
      ...doc,
      builtins: doc.builtins.filter((b) => b.name !== 'net.cidr_contains_matches'),
    });
    const err = await compilePolicyWasm({
      sources: [{ file: 'p.rego', text }],
      entrypoints: ['p/x'],
      capabilities: without,
    }).catch((e: unknown) => e);
    expect((err as RegoErrors).errors[0].format()).toBe(
      'p.rego:3:6: rego_type_error: undefined function net.cidr_contains_matches',
    );

    expect(() =>
      readCapabilities({
        ...doc,
        builtins: [
          ...doc.builtins,
          { name: 'internal.cidr_contains_matches', decl: { type: 'function', args: [], result: { type: 'any' } } },
        ],
      }),
    ).toThrow(CapabilitiesError);
  });

  it('a policy cannot call the internal host builtin', async () => {
    const err = await compilePolicyWasm({
      sources: [{ file: 'p.rego', text: 'package p\n\nx := internal.cidr_contains_matches("a", [], "b", [])\n' }],
      entrypoints: ['p/x'],
    }).catch((e: unknown) => e);
    expect((err as RegoErrors).errors[0].format()).toBe(
      'p.rego:3:6: rego_type_error: undefined function internal.cidr_contains_matches',
    );
  });
});
