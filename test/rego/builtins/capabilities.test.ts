// Capabilities and custom builtins (`opa build --capabilities`): a capabilities document restricts the
// builtins policies may call and declares custom ones with their types; a custom builtin compiles to a host
// call listed in the module's `builtins()` export, and the unmodified opa-wasm SDK calls the JavaScript
// implementation supplied as its `customBuiltins`, surfacing a throw unchanged (npm-opa-wasm _builtinCall).
import { describe, expect, it } from 'vitest';
import {
  CapabilitiesError,
  compileBundle,
  compilePolicyWasm,
  evaluateEntrypoint,
  evaluateQuery,
  hostBuiltins,
  instantiatePolicy,
  loadBundle,
  readCapabilities,
  RegoErrors,
  withCustomBuiltins,
  type RegoSource,
} from '../../../src/rego/index.ts';
import { capabilitiesDocument } from '../../../src/rego/builtins/capabilities.ts';

/** Our own capabilities plus two custom builtins, as a user extends `guardian policy capabilities`. */
function capabilitiesWithCustom() {
  const doc = capabilitiesDocument();
  return {
    ...doc,
    builtins: [
      ...doc.builtins,
      {
        name: 'custom.func',
        decl: { type: 'function', args: [{ type: 'string' }, { type: 'number' }], result: { type: 'string' } },
      },
      {
        name: 'custom.tags',
        // `name`/`description` as OPA's documented argument types carry them.
        decl: {
          type: 'function',
          args: [{ name: 'user', description: 'who', type: 'string' }],
          result: { type: 'set', of: { type: 'string' } },
        },
      },
    ],
  };
}

const POLICY: RegoSource = {
  file: 'authz.rego',
  text: `package authz

greeting := custom.func(input.name, 2)

admin if "admin" in custom.tags(input.name)

# A set result is a set in Rego (the host returns a JSON array): set union applies.
tag_count := count(custom.tags(input.name) | {"extra"})
`,
};

const custom = {
  'custom.func': (name: unknown, times: unknown) => `hello ${String(name)}`.repeat(Number(times)),
  'custom.tags': (user: unknown) => (user === 'ada' ? ['admin', 'staff'] : user === 'nobody' ? undefined : ['staff']),
};

function result(rs: unknown[]): unknown {
  return rs.length ? (rs[0] as { result: unknown }).result : undefined;
}

describe('capabilities: custom builtins compiled to host calls, run in opa-wasm', () => {
  it('a policy calling custom.func builds with the capabilities and evaluates with a JS implementation', async () => {
    const capabilities = readCapabilities(capabilitiesWithCustom());
    expect([...capabilities.custom].sort()).toEqual(['custom.func', 'custom.tags']);
    const { bundle, plan } = await compileBundle({
      sources: [POLICY],
      entrypoints: ['authz/greeting', 'authz/admin', 'authz/tag_count'],
      capabilities,
    });
    // The plan declares the custom builtins with the capabilities' types, as OPA's planner does.
    expect(plan.static?.builtin_funcs?.find((b) => b.name === 'custom.func')?.decl).toEqual({
      args: [{ type: 'string' }, { type: 'number' }],
      result: { type: 'string' },
      type: 'function',
    });
    const loaded = await loadBundle(bundle, { customBuiltins: custom });
    expect(result(evaluateEntrypoint(loaded, 'authz/greeting', { name: 'ada' }))).toBe('hello adahello ada');
    expect(result(evaluateEntrypoint(loaded, 'authz/admin', { name: 'ada' }))).toBe(true);
    expect(result(evaluateEntrypoint(loaded, 'authz/admin', { name: 'bob' }))).toBeUndefined();
    expect(result(evaluateEntrypoint(loaded, 'authz/tag_count', { name: 'ada' }))).toBe(3);
    // A custom builtin returning undefined makes the call undefined.
    expect(evaluateEntrypoint(loaded, 'authz/tag_count', { name: 'nobody' })).toEqual([]);
  });

  it("the bare module lists custom.func in its builtins() export and opa-wasm's customBuiltins supply it", async () => {
    const { wasm } = await compilePolicyWasm({
      sources: [POLICY],
      entrypoints: ['authz/greeting'],
      capabilities: readCapabilities(capabilitiesWithCustom()),
    });
    // Without the implementation opa-wasm refuses the call with its own text.
    const bare = await instantiatePolicy(wasm, hostBuiltins());
    bare.setData({});
    expect(() => bare.evaluate({ name: 'ada' }, 'authz/greeting')).toThrow(
      /not implemented: built-in function \d+: custom\.func/,
    );
    const policy = await instantiatePolicy(wasm, withCustomBuiltins(hostBuiltins(), custom));
    policy.setData({});
    expect(evaluateEntrypoint(policy, 'authz/greeting', { name: 'bo' })).toEqual([{ result: 'hello bohello bo' }]);
  });

  it('a custom builtin that throws: the error propagates out of evaluate unchanged, as from opa-wasm', async () => {
    const boom = new RangeError('directory unavailable');
    const { bundle } = await compileBundle({
      sources: [POLICY],
      entrypoints: ['authz/greeting'],
      capabilities: readCapabilities(capabilitiesWithCustom()),
    });
    const loaded = await loadBundle(bundle, {
      customBuiltins: {
        'custom.func': () => {
          throw boom;
        },
      },
    });
    let thrown: unknown;
    try {
      evaluateEntrypoint(loaded, 'authz/greeting', { name: 'ada' });
    } catch (e) {
      thrown = e;
    }
    expect(thrown).toBe(boom);
    // The instance stays usable: the next evaluation starts from a fresh heap.
    expect(() => evaluateEntrypoint(loaded, 'authz/greeting', { name: 'ada' })).toThrow(boom);
  });

  it('a custom builtin returning a Promise is an error, never a decision on {}', async () => {
    const rs = evaluateQuery({
      sources: [],
      query: 'x := custom.func("a", 1)',
      capabilities: readCapabilities(capabilitiesWithCustom()),
      customBuiltins: { 'custom.func': async () => 'late' },
    });
    await expect(rs).rejects.toThrow('custom builtin custom.func returned a Promise; builtins must return their value');
  });

  it('a custom builtin may return a bigint: the module gets the exact integer', async () => {
    const rs = await evaluateQuery({
      sources: [],
      query: 'exact := custom.func("a", 1) == 18446744073709551616; off := custom.func("a", 1) == 18446744073709551617',
      capabilities: readCapabilities(capabilitiesWithCustom()),
      customBuiltins: { 'custom.func': () => 2n ** 64n },
    });
    expect(rs).toEqual([{ exact: true, off: false }]);
  });

  it('custom builtins are type-checked against their declared decl', async () => {
    const err = await compileBundle({
      sources: [{ file: 'bad.rego', text: 'package bad\n\nx := custom.func(1, 2)\n' }],
      entrypoints: ['bad/x'],
      capabilities: readCapabilities(capabilitiesWithCustom()),
    }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(RegoErrors);
    expect((err as RegoErrors).errors[0].format()).toBe(
      'bad.rego:3:18: rego_type_error: custom.func: invalid argument(s)\n\thave: (number, number)\n\twant: (string, number)',
    );
  });
});

describe('capabilities: restricting builtins', () => {
  it("a builtin the capabilities do not list is refused with OPA's text", async () => {
    const doc = capabilitiesDocument();
    const capabilities = readCapabilities({ ...doc, builtins: doc.builtins.filter((b) => b.name !== 'upper') });
    const err = await compilePolicyWasm({
      sources: [{ file: 'p.rego', text: 'package p\n\nx := upper(input.s)\n' }],
      entrypoints: ['p/x'],
      capabilities,
    }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(RegoErrors);
    expect((err as RegoErrors).errors.map((e) => e.format())).toEqual([
      'p.rego:3:6: rego_type_error: undefined function upper',
    ]);
    // Other builtins stay callable.
    const ok = await compilePolicyWasm({
      sources: [{ file: 'p.rego', text: 'package p\n\nx := lower(input.s)\n' }],
      entrypoints: ['p/x'],
      capabilities,
    });
    expect(ok.wasm.length).toBeGreaterThan(0);
  });

  it('without capabilities a custom builtin is an undefined function', async () => {
    const err = await compilePolicyWasm({ sources: [POLICY], entrypoints: ['authz/greeting'] }).catch(
      (e: unknown) => e,
    );
    expect((err as RegoErrors).errors[0].format()).toBe(
      'authz.rego:3:13: rego_type_error: undefined function custom.func',
    );
  });

  it('an empty builtin list leaves operators undefined too, as in OPA', async () => {
    const err = await compilePolicyWasm({
      sources: [{ file: 'p.rego', text: 'package p\n\nx := 1 + 2\n' }],
      entrypoints: ['p/x'],
      capabilities: readCapabilities({ builtins: [] }),
    }).catch((e: unknown) => e);
    expect((err as RegoErrors).errors[0].message).toBe('undefined function plus');
  });

  it('refused builtins stay refused when a capabilities document lists them', async () => {
    const capabilities = readCapabilities({
      builtins: [{ name: 'http.send', decl: { type: 'function', args: [{ type: 'any' }], result: { type: 'any' } } }],
    });
    expect(capabilities.builtins.has('http.send')).toBe(false);
    const err = await compilePolicyWasm({
      sources: [{ file: 'p.rego', text: 'package p\n\nx := http.send({})\n' }],
      entrypoints: ['p/x'],
      capabilities,
    }).catch((e: unknown) => e);
    expect((err as RegoErrors).errors[0].message).toMatch(/^http\.send is not allowed in Guardian policies/);
  });
});

describe('readCapabilities and withCustomBuiltins refuse what they cannot honour', () => {
  it.each([
    [[], 'capabilities: expected a JSON object'],
    [{ builtins: {} }, 'capabilities: builtins must be an array'],
    [
      { builtins: [{ name: 'a b', decl: { type: 'function' } }] },
      'capabilities: builtins[0]: invalid builtin name "a b"',
    ],
    [
      { builtins: [{ name: 'f', decl: { type: 'rule' } }] },
      'capabilities: builtins[0] (f).decl: expected a function type',
    ],
    [
      { builtins: [{ name: 'f', decl: { type: 'function', args: [{ type: 'bytes' }] } }] },
      'capabilities: builtins[0] (f).decl.args[0]: unknown type "bytes"',
    ],
    [
      {
        builtins: [
          { name: 'f', decl: { type: 'function' } },
          { name: 'f', decl: { type: 'function' } },
        ],
      },
      'capabilities: builtins[1]: f is listed twice',
    ],
    [
      { builtins: [{ name: 'f', decl: { type: 'function', variadic: { type: 'any' } } }] },
      'capabilities: builtins[0]: custom builtin f cannot be variadic',
    ],
    [
      { builtins: [{ name: 'f', decl: { type: 'function', args: Array(5).fill({ type: 'any' }) } }] },
      'capabilities: builtins[0]: custom builtin f takes more than 4 arguments',
    ],
  ])('%j', (doc, message) => {
    expect(() => readCapabilities(doc)).toThrow(CapabilitiesError);
    expect(() => readCapabilities(doc)).toThrow(message);
  });

  it('our own document reads back as every toolchain builtin and no custom one', () => {
    const caps = readCapabilities(JSON.parse(JSON.stringify(capabilitiesDocument())));
    expect(caps.custom.size).toBe(0);
    expect(caps.builtins.size).toBe(capabilitiesDocument().builtins.length);
  });

  it('a custom implementation may not replace a toolchain builtin, and must be a function', () => {
    expect(() => withCustomBuiltins(hostBuiltins(), { upper: () => 'X' })).toThrow(
      'custom builtin upper: the toolchain implements upper',
    );
    expect(() => withCustomBuiltins(hostBuiltins(), { 'guardian.sprintf': () => 'X' })).toThrow(
      'custom builtin guardian.sprintf: the toolchain implements guardian.sprintf',
    );
    expect(() => withCustomBuiltins(hostBuiltins(), { 'custom.func': 'nope' })).toThrow(
      'custom builtin custom.func: expected a function',
    );
  });
});
