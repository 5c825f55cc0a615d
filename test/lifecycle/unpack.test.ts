// Activation unpacks bundles in a worker thread and hands the engine the base document as JSON text
// (src/lifecycle/unpack.ts, unpack-thread.ts). A compiled Rego policy that reads data proves the document reaches
// the module intact (root data.json and a mounted sub-directory data.json), and the revisions match what the
// engine reports when it reads the same tarball itself.
import { gzipSync } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BundleRegistry, LifecycleError, type LifecycleNode } from '../../src/lifecycle/index.ts';
import { BundleUnpackThread } from '../../src/lifecycle/unpack-thread.ts';
import { unpackBundle } from '../../src/lifecycle/unpack.ts';
import { createWasmPolicyEngine } from '../../src/policy/engine.ts';
import type { PolicyInput } from '../../src/policy/types.ts';
import { compileBundle } from '../../src/rego/index.ts';
import { writeTar } from '../../src/rego/bundle/tar.ts';
import type { DurableStore } from '../../src/store/types.ts';
import { startMemoryNode } from './fixtures.ts';

const POLICY = `package acs

decision := {"decision": data.verdict.value, "reasoning": data.team.name}
`;

const input: PolicyInput = {
  method: 'steps/toolCallRequest',
  params: {},
  session: {},
  client: { modify_capable: true, ask_capable: true },
  guardian: { now: '2026-01-01T00:00:00Z', policy_version: '' },
};
const enc = new TextEncoder();

/** A bundle whose manifest has no revision and whose data comes from two files (root and /team mount). */
function bundleWithoutRevision(wasm: Uint8Array, verdict: string, team: string): Uint8Array {
  const files = [
    {
      name: '/.manifest',
      data: enc.encode(JSON.stringify({ roots: [''], wasm: [{ entrypoint: 'acs/decision', module: '/policy.wasm' }] })),
    },
    { name: '/data.json', data: enc.encode(JSON.stringify({ verdict: { value: verdict } })) },
    { name: '/policy.wasm', data: wasm },
    { name: '/team/data.json', data: enc.encode(JSON.stringify({ name: team })) },
  ];
  return new Uint8Array(gzipSync(writeTar(files)));
}

describe('bundle unpacking off the event loop', () => {
  let wasm: Uint8Array;
  let store: DurableStore;
  let node: LifecycleNode;
  const thread = new BundleUnpackThread();

  beforeAll(async () => {
    const compiled = await compileBundle({
      sources: [{ file: 'acs.rego', text: POLICY }],
      entrypoints: ['acs/decision'],
      data: { verdict: { value: 'allow' }, team: { name: 'platform' } },
      revision: 'data-1',
    });
    wasm = compiled.wasm;
    ({ store, node } = await startMemoryNode(compiled.bundle, { replicaId: 'unpack' }));
  }, 120_000);
  afterAll(async () => {
    await node?.stop();
    await store?.close();
    await thread.close();
  });

  it('the base document reaches the policy: root data.json', async () => {
    expect(node.engine.revision).toBe('data-1');
    expect((await node.engine.evaluate(input)).decision).toEqual({ decision: 'allow', reasoning: 'platform' });
  });

  it('mounted data files and the default revision (no manifest revision) match the engine reading the tarball itself', async () => {
    const bytes = bundleWithoutRevision(wasm, 'deny', 'security');
    const own = await createWasmPolicyEngine({ bundle: bytes });
    const result = await node.push(bytes, { source: 'test', activate: true, by: 'ops' });
    expect(result.activation?.revision).toBe(own.revision);
    expect(node.engine.revision).toBe(own.revision);
    const evaluation = await node.engine.evaluate(input);
    expect(evaluation).toMatchObject({ decision: { decision: 'deny', reasoning: 'security' }, revision: own.revision });
    expect((await own.evaluate(input)).decision).toEqual(evaluation.decision);
  });

  it('the worker and this thread unpack identically; refusals keep their code across the thread boundary', async () => {
    const bytes = bundleWithoutRevision(wasm, 'ask', 'ops');
    const here = await unpackBundle(bytes, undefined);
    const there = await thread.unpack(bytes, undefined);
    expect(there.sha256).toBe(here.sha256);
    expect(there.revision).toBe(here.revision);
    expect(there.manifest).toEqual(here.manifest);
    expect(Buffer.from(there.parts?.dataJson ?? []).toString()).toBe(
      Buffer.from(here.parts?.dataJson ?? []).toString(),
    );
    expect(Buffer.from(there.parts?.wasm ?? []).equals(Buffer.from(wasm))).toBe(true);

    const refused = await thread.unpack(bytes.subarray(0, bytes.length - 20), undefined).catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(LifecycleError);
    expect((refused as LifecycleError).code).toBe('invalid_bundle');
    // The thread keeps serving after a refusal.
    expect((await thread.unpack(bytes, undefined)).sha256).toBe(here.sha256);
  });

  it('a sole /data.json reaches the engine as its own text (not re-serialised): a 23-digit number stays exact; a BOM is dropped', async () => {
    // JSON.parse + JSON.stringify would turn the number into 1.2345678901234568e+22.
    const text = '{"verdict": {"value": "allow"},\n "team": {"name": "exact"}, "n": 12345678901234567890123}';
    const manifest = { revision: 'raw-1', roots: [''], wasm: [{ entrypoint: 'acs/decision', module: '/policy.wasm' }] };
    const tarball = (data: Uint8Array): Uint8Array =>
      new Uint8Array(
        gzipSync(
          writeTar([
            { name: '/.manifest', data: enc.encode(JSON.stringify(manifest)) },
            { name: '/data.json', data },
            { name: '/policy.wasm', data: wasm },
          ]),
        ),
      );
    const plain = await thread.unpack(tarball(enc.encode(text)), undefined);
    expect(Buffer.from(plain.parts?.dataJson ?? []).toString()).toBe(text);
    const withBom = await unpackBundle(tarball(new Uint8Array([0xef, 0xbb, 0xbf, ...enc.encode(text)])), undefined);
    expect(Buffer.from(withBom.parts?.dataJson ?? []).toString()).toBe(text);
    const activation = await node.push(tarball(new Uint8Array([0xef, 0xbb, 0xbf, ...enc.encode(text)])), {
      source: 'test',
      activate: true,
      by: 'ops',
    });
    expect(activation.activation?.revision).toBe('raw-1');
    expect((await node.engine.evaluate(input)).decision).toEqual({ decision: 'allow', reasoning: 'exact' });
  });

  it('a bundle pushed or loaded here before is not unpacked again when activated (push → activate, rollback); its smoke cases still run', async () => {
    const withSmoke = (verdict: string): Uint8Array => {
      const smoke = { cases: [{ name: `decides ${verdict}`, input, expect: { decision: verdict } }] };
      const manifest = {
        revision: `smoke-${verdict}`,
        roots: [''],
        wasm: [{ entrypoint: 'acs/decision', module: '/policy.wasm' }],
      };
      return new Uint8Array(
        gzipSync(
          writeTar([
            { name: '/.manifest', data: enc.encode(JSON.stringify(manifest)) },
            {
              name: '/data.json',
              data: enc.encode(JSON.stringify({ verdict: { value: verdict }, team: { name: verdict } })),
            },
            { name: '/policy.wasm', data: wasm },
            { name: '/smoke.json', data: enc.encode(JSON.stringify(smoke)) },
          ]),
        ),
      );
    };
    // Pushed (checked: unpacked here), then activated: not unpacked again.
    const pushed = await node.push(withSmoke('deny'), { source: 'test', by: 'ops' });
    const first = await node.activate(pushed.record.sha256, 'ops');
    expect(first).toMatchObject({ revision: 'smoke-deny', smokeCases: 1, phasesMs: { unpack: 0 } });
    // Pushed with activation: loaded and smoke-tested once, before registration; the activation swaps that engine in.
    const second = (await node.push(withSmoke('ask'), { source: 'test', activate: true, by: 'ops' })).activation;
    expect(second).toMatchObject({ revision: 'smoke-ask', smokeCases: 1 });
    expect(second?.phasesMs.unpack).toBeGreaterThan(0);
    expect((await node.engine.evaluate(input)).decision).toEqual({ decision: 'ask', reasoning: 'ask' });
    const back = await node.rollback('ops');
    expect(back).toMatchObject({
      revision: 'smoke-deny',
      smokeCases: 1,
      phasesMs: { read: expect.any(Number), unpack: 0 },
    });
    expect((await node.engine.evaluate(input)).decision).toEqual({ decision: 'deny', reasoning: 'deny' });
    // Registered by another process (CLI push): this node has never read it, so it is unpacked and checked here.
    const other = await new BundleRegistry(store).register(withSmoke('allow'), 'cli');
    const cold = await node.activate(other.sha256, 'ops');
    expect(cold).toMatchObject({ revision: 'smoke-allow', smokeCases: 1 });
    expect(cold.phasesMs.unpack).toBeGreaterThan(0);
    expect((await node.engine.evaluate(input)).decision).toEqual({ decision: 'allow', reasoning: 'allow' });
  });

  it("a first activation leaves the sole /data.json to the engine's parser; malformed data is refused naming the file and the old version stays in force", async () => {
    const manifest = {
      revision: 'malformed-1',
      roots: [''],
      wasm: [{ entrypoint: 'acs/decision', module: '/policy.wasm' }],
    };
    const tarball = (data: string | Uint8Array): Uint8Array =>
      new Uint8Array(
        gzipSync(
          writeTar([
            { name: '/.manifest', data: enc.encode(JSON.stringify(manifest)) },
            { name: '/data.json', data: typeof data === 'string' ? enc.encode(data) : data },
            { name: '/policy.wasm', data: wasm },
          ]),
        ),
      );
    const good = '{"verdict": {"value": "ask"}, "team": {"name": "text"}}';
    // Activation path: the text is not parsed in the unpack (the engine parses it next), and says so.
    const unparsed = await thread.unpack(tarball(good), undefined, { soleDataAsText: true });
    expect(unparsed.unparsedDataFile).toBe('/data.json');
    expect(Buffer.from(unparsed.parts?.dataJson ?? []).toString()).toBe(good);
    expect((await unpackBundle(tarball(good), undefined)).unparsedDataFile).toBeUndefined();

    const before = node.engine.revision;
    const decisionBefore = (await node.engine.evaluate(input)).decision;
    const registry = new BundleRegistry(store);
    const refusals: [string, RegExp][] = [
      ['{"verdict": {"value": "deny"}, "team": {"name": "x"},}', /^\/data\.json: invalid JSON: /],
      ['{"verdict": {"value": "deny"}} trailing', /^\/data\.json: invalid JSON: /],
      ['["not", "an", "object"]', /^bundle load failed on \/data\.json: root value must be object$/],
    ];
    for (const [data, reason] of refusals) {
      // In the store without a check here (the registry's own read would refuse it: give it the manifest): this node
      // has never read it, so this is its first activation here.
      const other = await registry.register(tarball(data), 'cli', manifest);
      const refused = await node.activate(other.sha256, 'ops').catch((e: unknown) => e);
      expect(refused).toBeInstanceOf(LifecycleError);
      expect((refused as LifecycleError).code).toBe('invalid_bundle');
      expect((refused as LifecycleError).message).toMatch(reason);
      expect(node.engine.revision).toBe(before);
      expect((await node.engine.evaluate(input)).decision).toEqual(decisionBefore);
    }
    const invalidUtf8 = await registry.register(
      tarball(new Uint8Array([0x7b, 0x22, 0xff, 0x22, 0x3a, 0x31, 0x7d])),
      'cli',
      manifest,
    );
    await expect(node.activate(invalidUtf8.sha256, 'ops')).rejects.toThrow('/data.json: not valid UTF-8');
    expect(node.engine.revision).toBe(before);
    // A push without activation has no engine load after it: it parses, and refuses before registering.
    const pushed = await node.push(tarball('{"verdict": 1,}'), { source: 'test', by: 'ops' }).catch((e: unknown) => e);
    expect((pushed as LifecycleError).code).toBe('invalid_bundle');
    expect((pushed as LifecycleError).message).toMatch(/^\/data\.json: invalid JSON: /);
    // With activation the engine's parser refuses it (the unpack does not parse the data), before registering too.
    const registered = (await registry.list()).length;
    const pushedActive = await node
      .push(tarball('{"verdict": 2,}'), { source: 'test', activate: true, by: 'ops' })
      .catch((e: unknown) => e);
    expect((pushedActive as LifecycleError).code).toBe('invalid_bundle');
    expect((pushedActive as LifecycleError).message).toMatch(/^\/data\.json: invalid JSON: /);
    expect(await registry.list()).toHaveLength(registered);
    expect(node.engine.revision).toBe(before);

    // The same well-formed text activates from the store and decides with its data.
    const fine = await registry.register(tarball(good), 'cli');
    const cold = await node.activate(fine.sha256, 'ops');
    expect(cold.phasesMs.unpack).toBeGreaterThan(0);
    expect((await node.engine.evaluate(input)).decision).toEqual({ decision: 'ask', reasoning: 'text' });
  });

  it('an activation reports where its time went', async () => {
    const other = await new BundleRegistry(store).register(bundleWithoutRevision(wasm, 'allow', 'phases'), 'cli');
    const activation = await node.activate(other.sha256, 'ops');
    const phases = activation.phasesMs;
    const steps = Object.values(phases);
    expect(steps).toHaveLength(6);
    for (const ms of steps) expect(ms).toBeGreaterThanOrEqual(0);
    expect(phases.unpack).toBeGreaterThan(0);
    expect(phases.engine).toBeGreaterThan(0);
    expect(steps.reduce((a, b) => a + b, 0)).toBeLessThanOrEqual(activation.durationMs);
  });
});
