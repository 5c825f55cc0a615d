// The engine's own host-call path (directBuiltins, the default) against opa-wasm's (directBuiltins: false):
// the same answers, errors and host calls over compiled Rego that calls host builtins (regex.*, to_number),
// with arguments that repeat, change, and carry non-ASCII text; and fresh object arguments per call.
import { beforeAll, describe, expect, it } from 'vitest';
import { compileBundle } from '../../src/rego/index.ts';
import {
  createWasmPolicyEngine,
  PolicyEvaluationError,
  projectHostBuiltins,
  type HostBuiltinFactory,
  type WasmPolicyEngine,
} from '../../src/policy/index.ts';
import type { Json } from '../../src/json.ts';
import { buildAbiTestModule } from './abi-test-module.ts';

const SOURCE = `package t

matches := regex.match(input.pattern, input.subject)

constant_match := regex.match("^(?:rm\\\\s+-rf|mkfs|dd\\\\s+if=)", input.subject)

found := regex.find_n(input.pattern, input.subject, input.n)

number := to_number(input.s)

data_found := regex.find_n(data.cfg.pattern, input.subject, -1)

several := [regex.find_n("[0-9]+", input.subject, -1), regex.find_n("[a-z]+", input.subject, -1), regex.find_n("[A-Z]+", concat("", [input.subject, "!"]), -1)]
`;
const ENTRYPOINTS = ['t/matches', 't/constant_match', 't/found', 't/number', 't/data_found', 't/several'];

async function build(strict: boolean, pattern = '[0-9]+'): Promise<Uint8Array> {
  const compiled = await compileBundle({
    sources: [{ file: 't.rego', text: SOURCE }],
    entrypoints: ENTRYPOINTS,
    data: { cfg: { pattern } },
    revision: strict ? 'strict' : `lenient ${pattern}`,
    ...(strict ? { strictBuiltinErrors: true, metadata: { strict_builtin_errors: true } } : {}),
  });
  return compiled.bundle;
}

/** The project's builtins, recording every call (name and arguments) the module makes. */
function recording(calls: [string, Json[]][]): HostBuiltinFactory {
  return (clock) =>
    Object.fromEntries(
      Object.entries(projectHostBuiltins(clock)).map(([name, fn]) => [
        name,
        (...args: Json[]) => (calls.push([name, args]), fn(...args)),
      ]),
    );
}

describe('host-call path: engine-linked imports against opa-wasm', () => {
  let lenient: Uint8Array;
  let strict: Uint8Array;
  const calls = { direct: [] as [string, Json[]][], reference: [] as [string, Json[]][] };
  let direct: WasmPolicyEngine;
  let reference: WasmPolicyEngine;
  beforeAll(async () => {
    [lenient, strict] = await Promise.all([build(false), build(true)]);
    direct = await createWasmPolicyEngine({
      bundle: lenient,
      timeoutMs: 10_000,
      warmupRuns: 0,
      hostBuiltins: recording(calls.direct),
    });
    reference = await createWasmPolicyEngine({
      bundle: lenient,
      timeoutMs: 10_000,
      warmupRuns: 0,
      hostBuiltins: recording(calls.reference),
      directBuiltins: false,
    });
  }, 120_000);

  const both = async (entrypoint: string, input: Json) => {
    const [a, b] = [
      await direct.evaluateValue(input, { entrypoint }),
      await reference.evaluateValue(input, { entrypoint }),
    ];
    expect(a.value).toEqual(b.value);
    return a.value;
  };

  it('answers like opa-wasm when a repeated argument slot changes value (no stale reuse)', async () => {
    const cases: [string, string, boolean][] = [
      ['^a+$', 'aaa', true],
      ['^a+$', 'aab', false],
      ['^b+$', 'aab', false],
      ['^b+$', 'bbb', true],
      ['^a+$', 'aaa', true],
    ];
    for (const [pattern, subject, expected] of cases) {
      expect(await both('t/matches', { pattern, subject })).toBe(expected);
    }
    // An invalid pattern is an error: undefined when lenient, on both paths.
    expect(await both('t/matches', { pattern: '^(a', subject: 'a' })).toBeUndefined();
    for (const subject of ['rm -rf /', 'ls -la', 'mkfs /dev/sda', 'rm -rf /tmp', 'echo rm']) {
      expect(await both('t/constant_match', { subject })).toBe(/^(?:rm\s+-rf|mkfs|dd\s+if=)/.test(subject));
    }
  });

  it('passes arguments and returns results that are not ASCII, and numbers that change', async () => {
    expect(await both('t/found', { pattern: '[é日本]+', subject: 'café 日本語 naïve', n: -1 })).toEqual(['é', '日本']);
    expect(await both('t/found', { pattern: '[a-z]+', subject: 'one two three', n: 2 })).toEqual(['one', 'two']);
    expect(await both('t/found', { pattern: '[a-z]+', subject: 'one two three', n: 1 })).toEqual(['one']);
    expect(await both('t/number', { s: '12.5' })).toBe(12.5);
    expect(await both('t/number', { s: 'abc' })).toBeUndefined();
  });

  it('makes the same host calls with the same arguments as opa-wasm', async () => {
    calls.direct.length = 0;
    calls.reference.length = 0;
    await both('t/found', { pattern: '\\d+', subject: 'a1 b22 c333', n: -1 });
    await both('t/matches', { pattern: 'x', subject: 'yxz' });
    expect(calls.direct.length).toBeGreaterThan(0);
    expect(calls.direct).toEqual(calls.reference);
  });

  it('reuses a base-document argument by address only within the instance that holds that document', async () => {
    for (const subject of ['a1 b22', 'no digits', 'x333']) {
      expect(await both('t/data_found', { subject })).toEqual(subject.match(/[0-9]+/g) ?? []);
    }
    const swapping = await createWasmPolicyEngine({
      bundle: lenient,
      entrypoint: 't/data_found',
      timeoutMs: 10_000,
      warmupRuns: 0,
    });
    expect((await swapping.evaluateValue({ subject: 'ab 12' })).value).toEqual(['12']);
    await swapping.replaceBundle(await build(false, '[a-z]+'));
    expect((await swapping.evaluateValue({ subject: 'ab 12' })).value).toEqual(['ab']);
    expect((await swapping.evaluateValue({ subject: 'cd 34 ef' })).value).toEqual(['cd', 'ef']);
  });

  it('hands several calls of one evaluation the same input text, and each evaluation its own (same-length subjects share addresses)', async () => {
    for (const subject of ['ab 12 CD', 'xy 34 EF', 'zz 99 QQ', 'ab 12 CD']) {
      const expected = [subject.match(/[0-9]+/g), subject.match(/[a-z]+/g), `${subject}!`.match(/[A-Z]+/g)];
      expect(await both('t/several', { subject })).toEqual(expected);
    }
  });

  it('raises a strict builtin error as policy_error on the engine path, then keeps serving', async () => {
    const engine = await createWasmPolicyEngine({
      bundle: strict,
      entrypoint: 't/number',
      timeoutMs: 10_000,
      warmupRuns: 0,
    });
    const err = await engine.evaluateValue({ s: 'abc' }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(PolicyEvaluationError);
    expect((err as PolicyEvaluationError).code).toBe('policy_error');
    expect((err as PolicyEvaluationError).message).toMatch(/^t\.rego:9: eval_builtin_error: to_number: /);
    expect((await engine.evaluateValue({ s: '7' })).value).toBe(7);
  });
});

describe('host-call path over the hand-written ABI module', () => {
  it('hands each call a fresh object argument, so a builtin that mutates it cannot leak into the next call', async () => {
    const wasm = await buildAbiTestModule();
    const seen: Json[] = [];
    const mutating: HostBuiltinFactory = () => ({
      'test.echo': (arg: Json) => {
        seen.push(JSON.parse(JSON.stringify(arg)) as Json);
        (arg as Record<string, Json>).touched = true;
        return arg;
      },
    });
    const engine = await createWasmPolicyEngine({
      bundle: wasm,
      entrypoint: 'builtin',
      timeoutMs: 10_000,
      warmupRuns: 0,
      hostBuiltins: mutating,
    });
    expect((await engine.evaluateValue({ a: 1 })).value).toEqual({ a: 1, touched: true });
    expect((await engine.evaluateValue({ a: 1 })).value).toEqual({ a: 1, touched: true });
    expect(seen).toEqual([{ a: 1 }, { a: 1 }]);
  });

  it('turns a builtin result that is not JSON into a module abort, then keeps serving', async () => {
    const wasm = await buildAbiTestModule();
    let answer: unknown = () => 0;
    const engine = await createWasmPolicyEngine({
      bundle: wasm,
      entrypoint: 'builtin',
      timeoutMs: 10_000,
      warmupRuns: 0,
      hostBuiltins: () => ({ 'test.echo': () => answer as Json }),
    });
    const err = await engine.evaluateValue({ a: 1 }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(PolicyEvaluationError);
    expect((err as PolicyEvaluationError).code).toBe('module_aborted');
    answer = 'déjà vu';
    expect((await engine.evaluateValue({ a: 1 })).value).toBe('déjà vu');
    answer = undefined;
    expect((await engine.evaluateValue({ a: 1 })).value).toBeUndefined();
  });
});
