import { describe, expect, it, beforeAll } from 'vitest';
import { gzipSync } from 'node:zlib';
import tarStream from 'tar-stream';
import {
  createWasmPolicyEngine,
  PolicyEvaluationError,
  PolicyLoadError,
  type HostBuiltinFactory,
} from '../../src/policy/index.ts';
import type { PolicyInput } from '../../src/policy/types.ts';
import { buildAbiTestModule } from './abi-test-module.ts';

const echoBuiltin: HostBuiltinFactory = (clock) => ({
  'test.echo': (v) => ({ echoed: v ?? null, now: clock.now().toISOString() }),
});

async function tarGz(files: Record<string, string | Uint8Array>): Promise<Uint8Array> {
  const pack = tarStream.pack();
  for (const [name, content] of Object.entries(files)) pack.entry({ name }, Buffer.from(content));
  pack.finalize();
  const chunks: Buffer[] = [];
  for await (const c of pack) chunks.push(c as Buffer);
  return new Uint8Array(gzipSync(Buffer.concat(chunks)));
}

const input: PolicyInput = {
  method: 'steps/toolCallRequest',
  params: { payload: { tool: { name: 'shell' } } },
  session: { id: 's1' },
  client: { modify_capable: true, ask_capable: true },
  guardian: { now: '2026-01-01T00:00:00Z', policy_version: 'r1' },
};

async function rejection(p: Promise<unknown>): Promise<PolicyEvaluationError> {
  const err = await p.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(PolicyEvaluationError);
  return err as PolicyEvaluationError;
}

describe('createWasmPolicyEngine over a real OPA-ABI module', () => {
  let wasm: Uint8Array;
  beforeAll(async () => {
    wasm = await buildAbiTestModule({ burnIterations: 400_000_000 });
  });

  it('evaluates an entrypoint and returns its result object with the revision', async () => {
    const engine = await createWasmPolicyEngine({
      bundle: { wasm, manifest: { revision: 'rev-7' } },
      entrypoint: 'echo',
      hostBuiltins: echoBuiltin,
    });
    const res = await engine.evaluate(input);
    expect(res.decision).toEqual(input);
    expect(res.revision).toBe('rev-7');
    expect(res.durationMs).toBeGreaterThanOrEqual(0);
    expect(engine.entrypoints).toContain('echo');
  });

  it('returns decision undefined when the entrypoint is undefined', async () => {
    const engine = await createWasmPolicyEngine({ bundle: wasm, entrypoint: 'undefined', hostBuiltins: echoBuiltin });
    const res = await engine.evaluate(input);
    expect(res.decision).toBeUndefined();
    expect(engine.revision).toMatch(/^sha256:[0-9a-f]{64}$/);
  });

  it('loads a .tar.gz bundle: manifest revision, wasm entry and data.json', async () => {
    const bundle = await tarGz({
      '/.manifest': JSON.stringify({ revision: 'bundle-rev', wasm: [{ entrypoint: 'data', module: '/policy.wasm' }] }),
      '/policy.wasm': wasm,
      '/data.json': JSON.stringify({ acs: { limit: 3 } }),
      '/acs/pii/data.json': JSON.stringify({ patterns: ['x'] }),
    });
    const engine = await createWasmPolicyEngine({ bundle, entrypoint: 'data', hostBuiltins: echoBuiltin });
    expect(engine.revision).toBe('bundle-rev');
    const res = await engine.evaluateValue({ any: 1 });
    expect(res.value).toEqual({ acs: { limit: 3, pii: { patterns: ['x'] } } });
  });

  it('passes the evaluation time to host builtins and calls them with JSON arguments', async () => {
    const engine = await createWasmPolicyEngine({ bundle: wasm, entrypoint: 'builtin', hostBuiltins: echoBuiltin });
    const now = new Date('2030-05-06T07:08:09.000Z');
    const res = await engine.evaluateValue({ a: [1, 'b'] }, { now });
    expect(res.value).toEqual({ echoed: { a: [1, 'b'] }, now: now.toISOString() });
  });

  it('refuses input over maxInputBytes before evaluating', async () => {
    const engine = await createWasmPolicyEngine({
      bundle: wasm,
      entrypoint: 'echo',
      maxInputBytes: 100,
      hostBuiltins: echoBuiltin,
    });
    const err = await rejection(engine.evaluateValue({ blob: 'x'.repeat(200) }));
    expect(err.code).toBe('input_too_large');
    expect((await engine.evaluateValue({ small: true })).value).toEqual({ small: true });
  });

  it('rejects input that cannot be serialised', async () => {
    const engine = await createWasmPolicyEngine({ bundle: wasm, entrypoint: 'echo', hostBuiltins: echoBuiltin });
    const cyclic: Record<string, unknown> = {};
    cyclic.self = cyclic;
    expect((await rejection(engine.evaluateValue(cyclic))).code).toBe('input_not_serialisable');
    expect((await rejection(engine.evaluateValue(10n))).code).toBe('input_not_serialisable');
  });

  it('rejects an unknown entrypoint', async () => {
    const engine = await createWasmPolicyEngine({ bundle: wasm, entrypoint: 'echo', hostBuiltins: echoBuiltin });
    const err = await rejection(engine.evaluate(input, { entrypoint: 'nope/rule' }));
    expect(err.code).toBe('unknown_entrypoint');
  });

  it('turns a Rego runtime abort into policy_error and keeps serving', async () => {
    const engine = await createWasmPolicyEngine({ bundle: wasm, entrypoint: 'echo', hostBuiltins: echoBuiltin });
    const err = await rejection(engine.evaluate(input, { entrypoint: 'abort' }));
    expect(err.code).toBe('policy_error');
    expect(err.message).toContain('test.rego:3:1: eval_conflict_error');
    expect((await engine.evaluate(input)).decision).toEqual(input);
  });

  it('survives a module that runs out of memory and reloads the instance', async () => {
    const engine = await createWasmPolicyEngine({
      bundle: wasm,
      entrypoint: 'echo',
      maxMemoryPages: 64,
      hostBuiltins: echoBuiltin,
    });
    const before = engine.instanceRecycles;
    const err = await rejection(engine.evaluate(input, { entrypoint: 'oom' }));
    expect(err.code).toBe('module_aborted');
    expect(engine.instanceRecycles).toBe(before + 1);
    expect((await engine.evaluate(input)).decision).toEqual(input);
  });

  it('stops an evaluation at the deadline when it calls host builtins', async () => {
    const engine = await createWasmPolicyEngine({
      bundle: wasm,
      entrypoint: 'echo',
      timeoutMs: 30,
      hostBuiltins: echoBuiltin,
    });
    const started = Date.now();
    const err = await rejection(engine.evaluate(input, { entrypoint: 'spin' }));
    expect(err.code).toBe('timeout');
    expect(Date.now() - started).toBeLessThan(5_000);
    expect((await engine.evaluate(input)).decision).toEqual(input);
  });

  it('rejects a result that arrives after the deadline (pure-Wasm loop)', async () => {
    const engine = await createWasmPolicyEngine({
      bundle: wasm,
      entrypoint: 'echo',
      timeoutMs: 1,
      hostBuiltins: echoBuiltin,
    });
    const err = await rejection(engine.evaluate(input, { entrypoint: 'burn' }));
    expect(err.code).toBe('timeout');
  });

  it('refuses a module that needs a host builtin nobody provides', async () => {
    const needy = await buildAbiTestModule({ builtinName: 'acme.missing' });
    await expect(createWasmPolicyEngine({ bundle: needy, hostBuiltins: echoBuiltin })).rejects.toThrow(PolicyLoadError);
    await expect(createWasmPolicyEngine({ bundle: needy, hostBuiltins: echoBuiltin })).rejects.toThrow(/acme\.missing/);
  });

  it('refuses bundles that are not Wasm or tarballs, and keeps the old bundle on a failed swap', async () => {
    await expect(
      createWasmPolicyEngine({ bundle: new Uint8Array([1, 2, 3, 4]), hostBuiltins: echoBuiltin }),
    ).rejects.toThrow(PolicyLoadError);
    const noWasm = await tarGz({ '/data.json': '{}' });
    await expect(createWasmPolicyEngine({ bundle: noWasm, hostBuiltins: echoBuiltin })).rejects.toThrow(
      /no Wasm module/,
    );
    const engine = await createWasmPolicyEngine({
      bundle: { wasm, manifest: { revision: 'a' } },
      entrypoint: 'echo',
      hostBuiltins: echoBuiltin,
    });
    await expect(engine.replaceBundle(noWasm)).rejects.toThrow(PolicyLoadError);
    expect(engine.revision).toBe('a');
    await engine.replaceBundle({ wasm, manifest: { revision: 'b' } });
    expect(engine.revision).toBe('b');
    expect((await engine.evaluate(input)).revision).toBe('b');
  });

  it('keeps concurrent callers consistent while aborting evaluations force re-instantiation', async () => {
    const engine = await createWasmPolicyEngine({
      bundle: wasm,
      entrypoint: 'echo',
      maxMemoryPages: 64,
      hostBuiltins: echoBuiltin,
    });
    const kinds = Array.from({ length: 30 }, (_, i) => (i % 3 === 0 ? 'oom' : i % 3 === 1 ? 'abort' : 'echo'));
    const outcomes = await Promise.all(
      kinds.map((k, i) =>
        engine.evaluateValue({ i }, { entrypoint: k }).then(
          (r) => ({ k, ok: true as const, value: r.value, i }),
          (e: PolicyEvaluationError) => ({ k, ok: false as const, code: e.code, i }),
        ),
      ),
    );
    for (const o of outcomes) {
      if (o.k === 'echo')
        expect(JSON.stringify(o)).toBe(JSON.stringify({ k: o.k, ok: true, value: { i: o.i }, i: o.i }));
      else expect(o).toMatchObject({ ok: false, code: o.k === 'oom' ? 'module_aborted' : 'policy_error' });
    }
    expect((await engine.evaluateValue({ after: true })).value).toEqual({ after: true });
  });

  it('bounds the load-time warm-up of a default entrypoint that never finishes', async () => {
    const started = Date.now();
    const engine = await createWasmPolicyEngine({
      bundle: wasm,
      entrypoint: 'spin',
      timeoutMs: 20,
      hostBuiltins: echoBuiltin,
    });
    expect(Date.now() - started).toBeLessThan(10_000);
    expect((await rejection(engine.evaluateValue({ x: 1 }))).code).toBe('timeout');
  });

  it('classifies a strict host builtin error as a policy error', async () => {
    const strict: HostBuiltinFactory = () => ({
      'test.echo': () => {
        throw new Error('eval_builtin_error: test.echo: boom');
      },
    });
    const engine = await createWasmPolicyEngine({ bundle: wasm, entrypoint: 'builtin', hostBuiltins: strict });
    const err = await rejection(engine.evaluateValue({ x: 1 }));
    expect(err.code).toBe('policy_error');
    expect(err.message).toContain('test.echo: boom');
  });

  it('rejects a non-object decision from the decision entrypoint', async () => {
    const engine = await createWasmPolicyEngine({
      bundle: wasm,
      entrypoint: 'builtin',
      hostBuiltins: () => ({ 'test.echo': () => 'allow' }),
    });
    const err = await rejection(engine.evaluate(input));
    expect(err.code).toBe('invalid_result');
  });
});
