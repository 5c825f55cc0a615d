// The worker-thread engine pool: real workers, real opa-wasm, the project's host builtins.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createPolicyEnginePool, type PolicyEnginePool } from '../../src/policy/pool/pool.ts';
import { PolicyEvaluationError, PolicyLoadError } from '../../src/policy/index.ts';
import type { PolicyInput } from '../../src/policy/types.ts';
import { buildAbiTestModule } from './abi-test-module.ts';
import { buildDecisionModule } from '../acs/fixtures/decision-module.ts';
import { writeBundle } from '../../src/rego/bundle/index.ts';

/** A bundle whose decision's reasoning names its revision, so a result shows which version produced it. */
async function revisionBundle(revision: string): Promise<Uint8Array> {
  const wasm = await buildDecisionModule({ constant: { decision: 'allow', reasoning: revision } });
  return writeBundle({
    manifest: { revision, wasm: [{ entrypoint: 'acs/decision', module: '/policy.wasm' }] },
    wasm,
    data: {},
    sources: [],
  });
}

const input: PolicyInput = {
  method: 'steps/toolCallRequest',
  params: { payload: { n: 1 } },
  session: { id: 's' },
  client: { modify_capable: true, ask_capable: true },
  guardian: { now: '2026-01-01T00:00:00Z', policy_version: 'r' },
};

describe('createPolicyEnginePool', () => {
  let pool: PolicyEnginePool;
  let wasm: Uint8Array;
  beforeAll(async () => {
    // `lower` is a real project host builtin; the module's burn loop never calls the host.
    wasm = await buildAbiTestModule({ builtinName: 'lower', burnIterations: 2_000_000_000 });
    // Grace of 1 s: on a loaded machine 20 queued evaluations may take longer than a tight hard bound.
    pool = await createPolicyEnginePool({
      bundle: wasm,
      size: 2,
      entrypoint: 'echo',
      timeoutMs: 50,
      terminateGraceMs: 1000,
    });
  }, 120_000);
  afterAll(async () => {
    await pool?.close();
  });

  it('evaluates in workers and reports the revision', async () => {
    const results = await Promise.all(
      Array.from({ length: 20 }, (_, i) => pool.evaluate({ ...input, session: { id: `s${i}` } })),
    );
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
    // Its own pool with a short grace: the burn loop must outlast the hard bound even at full speed, or the
    // worker would finish it and report the overrun itself, without being terminated.
    const preempting = await createPolicyEnginePool({
      bundle: wasm,
      size: 1,
      entrypoint: 'echo',
      timeoutMs: 50,
      terminateGraceMs: 150,
    });
    try {
      const before = preempting.workerRestarts;
      const started = Date.now();
      const err = await preempting.evaluate(input, { entrypoint: 'burn' }).catch((e: unknown) => e);
      expect((err as PolicyEvaluationError).code).toBe('timeout');
      expect(Date.now() - started).toBeLessThan(5_000);
      expect(preempting.workerRestarts).toBe(before + 1);
      const after = await Promise.all([
        preempting.evaluate(input),
        preempting.evaluate(input),
        preempting.evaluate(input),
      ]);
      for (const r of after) expect(r.decision).toEqual(input);
    } finally {
      await preempting.close();
    }
  }, 60_000);

  it('swaps versions: evaluations sent before a swap finish on the old version, later ones use the new, the old is unloaded', async () => {
    const versioned = await createPolicyEnginePool({ bundle: await revisionBundle('v1'), size: 2, timeoutMs: 5_000 });
    try {
      const v1 = versioned.current;
      const before = Array.from({ length: 40 }, () => versioned.evaluate(input));
      // Loaded but not current yet: new evaluations still go to v1.
      const v2 = await versioned.loadVersion(await revisionBundle('v2'));
      expect(versioned.loadedVersions).toBe(2);
      const stillV1 = versioned.evaluate(input);
      await versioned.replaceBundle(await revisionBundle('v3'));
      v2.retire();
      const after = Array.from({ length: 40 }, () => versioned.evaluate(input));
      for (const r of [...(await Promise.all(before)), await stillV1])
        expect(r).toMatchObject({ revision: 'v1', decision: { reasoning: 'v1' } });
      for (const r of await Promise.all(after))
        expect(r).toMatchObject({ revision: 'v3', decision: { reasoning: 'v3' } });
      expect(versioned.revision).toBe('v3');
      // v1 answered everything it was sent, so it (and the never-used v2) left the workers.
      expect(v1.inFlight).toBe(0);
      expect(v1.unloaded && v2.unloaded).toBe(true);
      expect(versioned.loadedVersions).toBe(1);
      // A handle of a retired version refuses new work instead of evaluating on a version no longer in force.
      await expect(v1.evaluate(input)).rejects.toThrow(/retired/);
    } finally {
      await versioned.close();
    }
  }, 120_000);

  it('a version that does not load leaves the current one in force', async () => {
    const versioned = await createPolicyEnginePool({ bundle: await revisionBundle('good'), size: 2 });
    try {
      await expect(versioned.replaceBundle(new Uint8Array([0, 97, 115, 109, 9, 9]))).rejects.toThrow(PolicyLoadError);
      expect(versioned.loadedVersions).toBe(1);
      expect(await versioned.evaluate(input)).toMatchObject({ revision: 'good', decision: { reasoning: 'good' } });
    } finally {
      await versioned.close();
    }
  }, 120_000);

  it('a worker replaced after an overrun reloads every live version', async () => {
    const wasm = await buildAbiTestModule({ builtinName: 'lower', burnIterations: 2_000_000_000 });
    const versioned = await createPolicyEnginePool({
      bundle: wasm,
      size: 1,
      entrypoint: 'echo',
      timeoutMs: 50,
      terminateGraceMs: 200,
      revision: 'first',
    });
    try {
      const first = versioned.current;
      const second = await versioned.loadVersion(wasm, { revision: 'second' });
      const err = await versioned.evaluate(input, { entrypoint: 'burn' }).catch((e: unknown) => e);
      expect((err as PolicyEvaluationError).code).toBe('timeout');
      expect(versioned.workerRestarts).toBe(1);
      expect(await first.evaluate(input)).toMatchObject({ revision: 'first', decision: input });
      expect(await second.evaluate(input)).toMatchObject({ revision: 'second', decision: input });
    } finally {
      await versioned.close();
    }
  }, 120_000);

  it('loads extracted parts (module + base document as JSON text) as a version, without a tarball', async () => {
    const versioned = await createPolicyEnginePool({ bundle: await revisionBundle('tarball'), size: 2 });
    try {
      const wasm = await buildDecisionModule({ constant: { decision: 'deny', reasoning: 'from parts' } });
      const dataJson = new TextEncoder().encode('{"unused": [1, 2, 3]}');
      const parts = await versioned.loadVersion({ wasm, dataJson, manifest: { revision: 'parts-1' } });
      expect(await parts.evaluate(input)).toMatchObject({
        revision: 'parts-1',
        decision: { decision: 'deny', reasoning: 'from parts' },
      });
      // Malformed data text is refused by every worker; nothing stays loaded.
      await expect(versioned.loadVersion({ wasm, dataJson: new TextEncoder().encode('[1]') })).rejects.toThrow(
        PolicyLoadError,
      );
      expect(versioned.loadedVersions).toBe(2);
    } finally {
      await versioned.close();
    }
  }, 120_000);

  it('refuses a bundle the workers cannot load', async () => {
    await expect(createPolicyEnginePool({ bundle: new Uint8Array([0, 97, 115, 109, 9, 9]), size: 1 })).rejects.toThrow(
      PolicyLoadError,
    );
  });
});
