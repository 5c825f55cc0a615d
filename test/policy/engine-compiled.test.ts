// The engine host over modules produced by our own Rego compiler (compileBundle), with the project's
// host builtins: runtime errors, the pinned clock, bundle data and revisions.
import { beforeAll, describe, expect, it } from 'vitest';
import { compileBundle } from '../../src/rego/index.ts';
import { createWasmPolicyEngine, PolicyEvaluationError, type WasmPolicyEngine } from '../../src/policy/index.ts';

const SOURCE = `package acs

default decision := {"decision": "allow", "reasoning": "default"}

decision := {"decision": "deny", "reasoning": sprintf("over limit %d", [data.acs_config.limit])} if input.n > data.acs_config.limit

conflict := 1 if input.a

conflict := 2 if input.b

now_ns := time.now_ns()

year := time.date(time.now_ns())[0]

quotient := input.x / input.y
`;

describe('engine over compiled Rego', () => {
  let engine: WasmPolicyEngine;
  beforeAll(async () => {
    const compiled = await compileBundle({
      sources: [{ file: 'acs.rego', text: SOURCE }],
      entrypoints: ['acs/decision', 'acs/conflict', 'acs/now_ns', 'acs/year', 'acs/quotient'],
      data: { acs_config: { limit: 3 } },
      revision: 'compiled-1',
    });
    engine = await createWasmPolicyEngine({ bundle: compiled.bundle, timeoutMs: 10_000 });
  }, 120_000);

  it('evaluates the decision entrypoint with bundle data', async () => {
    const base = {
      method: 'm',
      params: {},
      session: {},
      client: { modify_capable: true, ask_capable: true },
      guardian: { now: 'x', policy_version: 'v' },
    };
    expect((await engine.evaluate({ ...base, params: { n: 1 } } as never)).decision).toEqual({
      decision: 'allow',
      reasoning: 'default',
    });
    const denied = await engine.evaluateValue({ n: 5 });
    expect(denied.value).toEqual({ decision: 'deny', reasoning: 'over limit 3' });
    expect(engine.revision).toBe('compiled-1');
  });

  it("turns OPA's var assignment conflict into policy_error with the Rego location, and keeps serving", async () => {
    const err = await engine
      .evaluateValue({ a: true, b: true }, { entrypoint: 'acs/conflict' })
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(PolicyEvaluationError);
    expect((err as PolicyEvaluationError).code).toBe('policy_error');
    expect((err as PolicyEvaluationError).message).toMatch(/acs\.rego:\d+:\d+: var assignment conflict$/);
    expect((await engine.evaluateValue({ a: true }, { entrypoint: 'acs/conflict' })).value).toBe(1);
  });

  it('pins time.now_ns to the evaluation time it is given (replay)', async () => {
    const now = new Date('2031-07-04T12:00:00.000Z');
    expect((await engine.evaluateValue({}, { entrypoint: 'acs/now_ns', now })).value).toBe(now.getTime() * 1_000_000);
    expect((await engine.evaluateValue({}, { entrypoint: 'acs/year', now })).value).toBe(2031);
  });

  it('leaves a builtin error undefined (OPA default, non-strict)', async () => {
    expect((await engine.evaluateValue({ x: 1, y: 0 }, { entrypoint: 'acs/quotient' })).value).toBeUndefined();
    expect((await engine.evaluateValue({ x: 6, y: 3 }, { entrypoint: 'acs/quotient' })).value).toBe(2);
  });

  it('host builtins follow the strictness the bundle in force was built with (manifest strict_builtin_errors)', async () => {
    const text = 'package acs\n\nn := to_number(input.s)\n';
    const build = (strict: boolean) =>
      compileBundle({
        sources: [{ file: 'n.rego', text }],
        entrypoints: ['acs/n'],
        revision: strict ? 'strict' : 'lenient',
        ...(strict ? { strictBuiltinErrors: true, metadata: { strict_builtin_errors: true } } : {}),
      });
    const swapping = await createWasmPolicyEngine({
      bundle: (await build(true)).bundle,
      entrypoint: 'acs/n',
      timeoutMs: 10_000,
    });
    const err = await swapping.evaluateValue({ s: 'abc' }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(PolicyEvaluationError);
    expect((err as PolicyEvaluationError).message).toMatch(/eval_builtin_error: to_number/);
    expect((await swapping.evaluateValue({ s: '12' })).value).toBe(12);
    await swapping.replaceBundle((await build(false)).bundle);
    expect((await swapping.evaluateValue({ s: 'abc' })).value).toBeUndefined();
  });

  it('sends a bundle declaring metadata.input_paths only the members its policies read', async () => {
    const compiled = await compileBundle({
      sources: [
        {
          file: 'p.rego',
          text: 'package p\n\nseen := {"turn": input.session.turn, "method": input.method, "keys": object.keys(input.session)}\n',
        },
      ],
      entrypoints: ['p/seen'],
      recordInputPaths: true,
    });
    expect(compiled.manifest.metadata).toEqual({ input_paths: [['method'], ['session']] });
    const narrow = await compileBundle({
      sources: [
        { file: 'p.rego', text: 'package p\n\nseen := {"index": input.session.turn.index, "method": input.method}\n' },
      ],
      entrypoints: ['p/seen'],
      recordInputPaths: true,
    });
    expect(narrow.manifest.metadata).toEqual({ input_paths: [['method'], ['session', 'turn', 'index']] });
    const input = {
      method: 'steps/x',
      session: { turn: { index: 2, id: 't2' }, recent_steps: ['x'.repeat(400)] },
      client: { big: 'y'.repeat(400) },
    };
    // maxInputBytes applies to what the module receives: the unread 400-byte members are never serialised.
    const engine = await createWasmPolicyEngine({
      bundle: narrow.bundle,
      entrypoint: 'p/seen',
      maxInputBytes: 200,
      timeoutMs: 10_000,
    });
    expect((await engine.evaluateValue(input)).value).toEqual({ index: 2, method: 'steps/x' });
    // After a swap to a bundle that reads all of input.session, it gets all of it (and the limit counts it).
    await engine.replaceBundle(compiled.bundle);
    expect(await engine.evaluateValue(input).catch((e: PolicyEvaluationError) => e.code)).toBe('input_too_large');
    const wide = await createWasmPolicyEngine({ bundle: compiled.bundle, entrypoint: 'p/seen', timeoutMs: 10_000 });
    expect((await wide.evaluateValue(input)).value).toEqual({
      turn: { index: 2, id: 't2' },
      method: 'steps/x',
      keys: ['recent_steps', 'turn'],
    });
  });
});

// A bundle's data.json is decoded as OPA decodes data files (json.Number): 12345678901234567890 keeps its digits
// on the way to the module, whether the engine reads the tarball or takes the parts the lifecycle unpacked.
describe('engine over a bundle whose data has numbers a double would change', () => {
  it('keeps them exactly, with one default revision however the bundle was read', async () => {
    const { DecimalText } = await import('../../src/rego/json.ts');
    const { readBundle, writeBundle } = await import('../../src/rego/bundle/index.ts');
    const { unpackBundle } = await import('../../src/lifecycle/unpack.ts');
    const compiled = await compileBundle({
      sources: [
        {
          file: 'p.rego',
          text: 'package p\n\nchecks := [data.n == 12345678901234567890, data.n + 1 == 12345678901234567891, data.n != 12345678901234567168]\n',
        },
      ],
      entrypoints: ['p/checks'],
      data: { n: new DecimalText('12345678901234567890') },
    });
    const read = readBundle(compiled.bundle);
    // No manifest revision: the engine names the bundle by module + data text.
    const bundle = writeBundle({
      manifest: { ...read.manifest, revision: '' },
      wasm: read.wasm,
      data: read.data,
      sources: read.sources,
    });
    const fromTarball = await createWasmPolicyEngine({ bundle, entrypoint: 'p/checks', timeoutMs: 10_000 });
    expect((await fromTarball.evaluateValue({})).value).toEqual([true, true, true]);
    const revisions = [fromTarball.revision];
    for (const soleDataAsText of [false, true]) {
      const unpacked = await unpackBundle(bundle, undefined, { soleDataAsText });
      const engine = await createWasmPolicyEngine({
        bundle: { ...unpacked.parts!, manifest: unpacked.manifest },
        entrypoint: 'p/checks',
        timeoutMs: 10_000,
      });
      expect((await engine.evaluateValue({})).value).toEqual([true, true, true]);
      revisions.push(unpacked.revision, engine.revision);
    }
    expect(new Set(revisions).size).toBe(1);
    expect(revisions[0]).toMatch(/^sha256:[0-9a-f]{64}$/);
  }, 120_000);
});
