// The worker-thread engine pool: real workers, real opa-wasm, the project's host builtins.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createPolicyEnginePool, type PolicyEnginePool } from '../../src/policy/pool/pool.ts';
import { PolicyEvaluationError, PolicyLoadError } from '../../src/policy/index.ts';
import type { PolicyInput } from '../../src/policy/types.ts';
import { buildAbiTestModule } from './abi-test-module.ts';

const input: PolicyInput = {
  method: 'steps/toolCallRequest',
  params: { payload: { n: 1 } },
  session: { id: 's' },
  client: { modify_capable: true, ask_capable: true },
  guardian: { now: '2026-01-01T00:00:00Z', policy_version: 'r' },
};

describe('createPolicyEnginePool', () => {
  let pool: PolicyEnginePool;
  beforeAll(async () => {
    // `lower` is a real project host builtin; the module's burn loop never calls the host.
    const wasm = await buildAbiTestModule({ builtinName: 'lower', burnIterations: 2_000_000_000 });
    pool = await createPolicyEnginePool({ bundle: wasm, size: 2, entrypoint: 'echo', timeoutMs: 50, terminateGraceMs: 200 });
  }, 120_000);
  afterAll(async () => {
    await pool?.close();
  });

  it('evaluates in workers and reports the revision', async () => {
    const results = await Promise.all(Array.from({ length: 20 }, (_, i) => pool.evaluate({ ...input, session: { id: `s${i}` } })));
    results.forEach((r, i) => expect(r.decision).toEqual({ ...input, session: { id: `s${i}` } }));
    expect(results[0].revision).toMatch(/^sha256:/);
    expect(pool.revision).toBe(results[0].revision);
  });

  it('passes policy errors through with their code', async () => {
    const err = await pool.evaluate(input, { entrypoint: 'abort' }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(PolicyEvaluationError);
    expect((err as PolicyEvaluationError).code).toBe('policy_error');
  });

  it('pre-empts a pure-Wasm loop by terminating its worker, then keeps serving', async () => {
    const before = pool.workerRestarts;
    const started = Date.now();
    const err = await pool.evaluate(input, { entrypoint: 'burn' }).catch((e: unknown) => e);
    expect((err as PolicyEvaluationError).code).toBe('timeout');
    expect(Date.now() - started).toBeLessThan(5_000);
    expect(pool.workerRestarts).toBe(before + 1);
    const after = await Promise.all([pool.evaluate(input), pool.evaluate(input), pool.evaluate(input)]);
    for (const r of after) expect(r.decision).toEqual(input);
  });

  it('refuses a bundle the workers cannot load', async () => {
    await expect(createPolicyEnginePool({ bundle: new Uint8Array([0, 97, 115, 109, 9, 9]), size: 1 })).rejects.toThrow(PolicyLoadError);
  });
});
