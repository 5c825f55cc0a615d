// The engine's input path: the input JSON written straight into the module's memory (ABI 1.2 `opa_eval`) and
// params spliced in from their JCS text must give the module the same document as the reference path
// (opa-wasm's own `evaluate` over JSON.stringify of the input), over varied inputs.
import { beforeAll, describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { canonicalJson } from '../../src/chain/index.ts';
import { compileBundle } from '../../src/rego/index.ts';
import {
  advanceSessionState,
  createWasmPolicyEngine,
  initialSessionState,
  PolicyEvaluationError,
  type PolicyInput,
  type WasmPolicyEngine,
} from '../../src/policy/index.ts';
import { buildPolicyInput, policyParams, policyParamsJson } from '../../src/policy/input.ts';
import { POLICY_PARAMS_JSON } from '../../src/policy/types.ts';
import { buildLibraryBundle } from '../../src/policy/library.ts';
import type { Json } from '../../src/json.ts';

const json = fc.jsonValue({ maxDepth: 3 }) as fc.Arbitrary<Json>;
const signature = fc.oneof(
  json,
  fc.record({
    algorithm: fc.constantFrom('HMAC-SHA256', 'Ed25519'),
    value: fc.string(),
    key_id: fc.string(),
  }) as fc.Arbitrary<Json>,
);
const extraKeys = fc.dictionary(
  fc.constantFrom('aa', 'zz', 'signature_x', 'sig', 'timestamp2', 'signature'),
  fc.oneof(json, fc.record({ signature: json }) as fc.Arbitrary<Json>),
);
/** ACS-shaped params (signature included), with extra members before and after `signature` in JCS order. */
const acsParams = fc
  .tuple(
    fc.record({
      acs_version: fc.constant('0.1.0'),
      request_id: fc.string(),
      timestamp: fc.string(),
      metadata: json,
      payload: fc.oneof(json, fc.record({ signature: json, text: fc.string() }) as fc.Arbitrary<Json>),
    }),
    fc.option(signature, { nil: undefined }),
    extraKeys,
  )
  .map(([base, sig, extra]) => ({ ...extra, ...base, ...(sig === undefined ? {} : { signature: sig }) }) as Json);

function withoutParamsText(input: PolicyInput): PolicyInput {
  const { [POLICY_PARAMS_JSON]: _text, ...plain } = input;
  return plain;
}

describe('policyParamsJson', () => {
  it('is the JCS of the params minus signature, or undefined (then the engine stringifies)', () => {
    fc.assert(
      fc.property(acsParams, (params) => {
        const text = policyParamsJson(canonicalJson(params));
        const expected = canonicalJson(policyParams(params));
        if (text !== undefined) expect(text).toBe(expected);
        // Only a later member carrying a "signature" token can defeat the cut (a fallback, never a wrong text).
        const jcs = canonicalJson(params);
        const sigAt = jcs.indexOf(',"signature":');
        if (text === undefined) expect(jcs.slice(Math.max(0, sigAt) + 1)).toContain('"signature"');
      }),
      { numRuns: 400 },
    );
  });

  it('cuts the member wherever it sits and refuses nested or malformed candidates', () => {
    expect(policyParamsJson('{"signature":{"a":[1,"}"]}}')).toBe('{}');
    expect(policyParamsJson('{"signature":1,"z":2}')).toBe('{"z":2}');
    expect(policyParamsJson('{"a":"x\\",\\"signature\\":","signature":"s\\\\","t":"}"}')).toBe(
      '{"a":"x\\",\\"signature\\":","t":"}"}',
    );
    expect(policyParamsJson('{"a":1,"signature":{"k":"v"},"z":{"signature":2}}')).toBeUndefined();
    expect(policyParamsJson('{"a":{"signature":2}}')).toBeUndefined();
    expect(policyParamsJson('{"a":"signature"}')).toBeUndefined();
    expect(policyParamsJson('{"a":1}')).toBe('{"a":1}');
    expect(policyParamsJson('[1]')).toBeUndefined();
    expect(policyParamsJson('{"a":1,"signature":{"k":"v"}')).toBeUndefined();
  });
});

describe('engine input: direct write + params splice vs the reference path', () => {
  let whole: { direct: WasmPolicyEngine; reference: WasmPolicyEngine };
  let projected: { direct: WasmPolicyEngine; reference: WasmPolicyEngine };
  beforeAll(async () => {
    const echoWhole = await compileBundle({
      sources: [{ file: 'p.rego', text: 'package p\n\necho := input\n' }],
      entrypoints: ['p/echo'],
      recordInputPaths: true,
    });
    const echoProjected = await compileBundle({
      sources: [
        {
          file: 'p.rego',
          text: 'package p\n\necho := {"params": input.params, "method": input.method, "index": input.session.step_index}\n',
        },
      ],
      entrypoints: ['p/echo'],
      recordInputPaths: true,
    });
    expect(echoProjected.manifest.metadata?.input_paths).toContainEqual(['params']);
    const pair = async (bundle: Uint8Array) => ({
      direct: await createWasmPolicyEngine({ bundle, entrypoint: 'p/echo', timeoutMs: 10_000 }),
      reference: await createWasmPolicyEngine({ bundle, entrypoint: 'p/echo', timeoutMs: 10_000, directInput: false }),
    });
    whole = await pair(echoWhole.bundle);
    projected = await pair(echoProjected.bundle);
  }, 120_000);

  it('the module receives the same document', async () => {
    await fc.assert(
      fc.asyncProperty(
        acsParams,
        fc.constantFrom('steps/toolCallRequest', 'steps/userMessage', 'x/unknown'),
        async (params, method) => {
          const state = advanceSessionState(initialSessionState({ session_id: 's', agent_id: 'a' }), method, params);
          const input = buildPolicyInput(
            method,
            params,
            state,
            { modify_capable: true, ask_capable: false },
            { now: 'n', policy_version: 'v' },
            canonicalJson(params),
          );
          const plain = withoutParamsText(input);
          for (const { direct, reference } of [whole, projected]) {
            const got = (await direct.evaluateValue(input)).value;
            const want = (await reference.evaluateValue(plain)).value;
            expect(canonicalJson(got)).toBe(canonicalJson(want));
          }
          expect(canonicalJson((await whole.direct.evaluateValue(input)).value)).toBe(canonicalJson(plain));
        },
      ),
      { numRuns: 150 },
    );
  });

  it('ACS params with a top-level signature carry their text, and the module never sees the signature', async () => {
    const params = {
      acs_version: '0.1.0',
      request_id: 'r1',
      timestamp: 't',
      metadata: { turn_id: 'x' },
      payload: { text: 'é ✓ 𝄞' },
      signature: { algorithm: 'HMAC-SHA256', value: 'sig', key_id: 'k' },
    };
    const state = initialSessionState({ session_id: 's', agent_id: 'a' });
    const input = buildPolicyInput(
      'steps/userMessage',
      params,
      state,
      { modify_capable: true, ask_capable: true },
      { now: 'n', policy_version: 'v' },
      canonicalJson(params),
    );
    expect(input[POLICY_PARAMS_JSON]).toBe(canonicalJson(policyParams(params)));
    const echoed = (await whole.direct.evaluateValue(input)).value as { params: Record<string, Json> };
    expect(echoed.params).toEqual(policyParams(params));
    expect('signature' in echoed.params).toBe(false);
  });

  it('counts UTF-8 bytes against maxInputBytes, grows memory for large inputs, and keeps serving', async () => {
    const echo = await compileBundle({
      sources: [{ file: 'p.rego', text: 'package p\n\necho := count(input.s)\n' }],
      entrypoints: ['p/echo'],
    });
    const engine = await createWasmPolicyEngine({
      bundle: echo.bundle,
      entrypoint: 'p/echo',
      maxInputBytes: 3_000_000,
      timeoutMs: 10_000,
    });
    // 900 000 code units, 2.7 MB of UTF-8: fits the limit, not the module's initial memory.
    expect((await engine.evaluateValue({ s: '€'.repeat(900_000) })).value).toBe(900_000);
    // 1.2 M code units under the limit by length, 3.6 MB of UTF-8: refused, and the instance still serves.
    const err = await engine.evaluateValue({ s: '€'.repeat(1_200_000) }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(PolicyEvaluationError);
    expect((err as PolicyEvaluationError).code).toBe('input_too_large');
    expect((await engine.evaluateValue({ s: 'abc' })).value).toBe(3);
    expect(engine.instanceRecycles).toBe(0);
  });
});

describe('engine input: projection through wildcard paths (manifest input_paths with null)', () => {
  // Reads under dynamic keys: every member of `r` (objects, arrays, scalars, `__proto__`), nested arrays.
  const source = `package p

origins := {k: o | some k; o := input.r[k].origin}

nested := [[k, i, v] | v := input.r[k].items[i].v]

fixed := [x | x := input.r.fixed.extra]

xs := [[i, x] | x := input.a[i].x]

echo := {"origins": origins, "nested": nested, "fixed": fixed, "xs": xs, "m": [m | m := input.m]}
`;
  let projected: WasmPolicyEngine;
  let whole: WasmPolicyEngine;
  beforeAll(async () => {
    const built = await compileBundle({
      sources: [{ file: 'p.rego', text: source }],
      entrypoints: ['p/echo'],
      recordInputPaths: true,
    });
    const { readBundle } = await import('../../src/rego/bundle/index.ts');
    const read = readBundle(built.bundle);
    expect(read.manifest.metadata?.input_paths).toEqual([
      ['a', null, 'x'],
      ['m'],
      ['r', null, 'items', null, 'v'],
      ['r', null, 'origin'],
      ['r', 'fixed', 'extra'],
    ]);
    projected = await createWasmPolicyEngine({ bundle: built.bundle, entrypoint: 'p/echo', timeoutMs: 10_000 });
    const { input_paths: _paths, ...metadata } = read.manifest.metadata ?? {};
    whole = await createWasmPolicyEngine({
      bundle: { wasm: read.wasm!, data: {}, manifest: { ...read.manifest, metadata } },
      entrypoint: 'p/echo',
      timeoutMs: 10_000,
    });
  }, 120_000);

  it('decides as on the whole input', async () => {
    const leaf = fc.jsonValue({ maxDepth: 2 }) as fc.Arbitrary<Json>;
    const item = fc.oneof(fc.record({ v: leaf, w: leaf }, { requiredKeys: [] }), leaf);
    const member = fc.oneof(
      fc.record(
        { origin: leaf, items: fc.oneof(fc.array(item, { maxLength: 3 }), leaf), extra: leaf, junk: leaf },
        { requiredKeys: [] },
      ),
      fc.array(item, { maxLength: 2 }),
      leaf,
    );
    const r = fc.oneof(
      fc.dictionary(fc.constantFrom('fixed', '__proto__', 'k1', 'k2', 'origin', 'constructor'), member),
      fc.array(member, { maxLength: 2 }),
      leaf,
    );
    const a = fc.oneof(
      fc.array(fc.oneof(fc.record({ x: leaf, y: leaf }, { requiredKeys: [] }), leaf), { maxLength: 3 }),
      fc.dictionary(fc.constantFrom('x', '0'), leaf),
      leaf,
    );
    await fc.assert(
      fc.asyncProperty(fc.record({ r, a, m: leaf, unread: leaf }, { requiredKeys: [] }), async (input) => {
        // JSON round trip: `__proto__` as an own member, as it arrives from a request.
        const doc = JSON.parse(JSON.stringify(input)) as Json;
        expect(canonicalJson((await projected.evaluateValue(doc)).value)).toBe(
          canonicalJson((await whole.evaluateValue(doc)).value),
        );
      }),
      { numRuns: 300 },
    );
  });

  it('sends only what the paths name: unread members of wildcard-matched records do not count against maxInputBytes', async () => {
    const big = 'x'.repeat(5_000);
    const input = JSON.parse(
      `{"r":{"__proto__":{"origin":"o1","junk":"${big}"},"k1":{"origin":"o2","items":[{"v":1,"w":"${big}"}]}},"a":[{"x":1,"y":"${big}"}]}`,
    ) as Json;
    const small = await createWasmPolicyEngine({
      bundle: (
        await compileBundle({
          sources: [{ file: 'p.rego', text: source }],
          entrypoints: ['p/echo'],
          recordInputPaths: true,
        })
      ).bundle,
      entrypoint: 'p/echo',
      timeoutMs: 10_000,
      maxInputBytes: 1_000,
    });
    expect((await small.evaluateValue(input)).value).toEqual(
      JSON.parse('{"origins":{"__proto__":"o1","k1":"o2"},"nested":[["k1",0,1]],"fixed":[],"xs":[[0,1]],"m":[]}'),
    );
    expect((await whole.evaluateValue(input)).value).toEqual((await small.evaluateValue(input)).value);
  });
});

describe('library decisions: direct + splice vs reference', () => {
  it('decide identically over ACS steps', async () => {
    const built = await buildLibraryBundle({});
    const direct = await createWasmPolicyEngine({ bundle: built.bundle, timeoutMs: 10_000 });
    const reference = await createWasmPolicyEngine({ bundle: built.bundle, timeoutMs: 10_000, directInput: false });
    const prov = (id: string, origin: string) => ({ provenance_id: id, origin });
    const toolArgs = fc.dictionary(
      fc.constantFrom('path', 'command', 'to', 'body', 'url'),
      fc.record({
        value: fc.oneof(fc.string(), fc.constantFrom('rm -rf /', 'x@evil.test', '/etc/passwd', 'jane.doe@example.com')),
        provenance: fc.constantFrom(prov('u1', 'user_input'), prov('r1', 'retrieved'), prov('o1', 'tool_output')),
      }),
    );
    const step = fc.oneof(
      fc.record({
        method: fc.constant('steps/toolCallRequest'),
        payload: fc.record({
          tool: fc.record({ name: fc.constantFrom('read_file', 'shell', 'email.send', 'http.get') }),
          arguments: toolArgs,
        }),
      }),
      fc.record({
        method: fc.constant('steps/userMessage'),
        payload: fc.record({
          content: fc.array(
            fc.record({
              type: fc.constant('text'),
              value: fc.oneof(fc.string(), fc.constant('card 4111 1111 1111 1111')),
              provenance: fc.constant(prov('u2', 'user_input')),
            }),
            { maxLength: 2 },
          ),
        }),
      }),
    );
    let seq = 0;
    await fc.assert(
      fc.asyncProperty(fc.array(step, { minLength: 1, maxLength: 4 }), async (steps) => {
        let state = initialSessionState({ session_id: 's', agent_id: 'agent-7' });
        for (const { method, payload } of steps) {
          const params = {
            acs_version: '0.1.0',
            request_id: `req-${++seq}`,
            timestamp: '2026-11-29T12:00:00.000Z',
            metadata: { agent_id: 'agent-7', session_id: 's', turn_id: 't1' },
            payload,
            signature: { algorithm: 'HMAC-SHA256', value: 'x', key_id: 'k1' },
          } as unknown as Json;
          state = advanceSessionState(state, method, params);
          const input = buildPolicyInput(
            method,
            params,
            state,
            { modify_capable: true, ask_capable: true },
            { now: '2026-11-29T12:00:00.000Z', policy_version: direct.revision },
            canonicalJson(params),
          );
          expect(input[POLICY_PARAMS_JSON]).toBeTypeOf('string');
          const now = new Date('2026-11-29T12:00:00.000Z');
          const got = await direct.evaluate(input, { now });
          const want = await reference.evaluate(withoutParamsText(input), { now });
          expect(canonicalJson(got.decision)).toBe(canonicalJson(want.decision));
        }
      }),
      { numRuns: 40 },
    );
  }, 120_000);
});
