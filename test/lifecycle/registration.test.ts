// Registration reads a bundle's manifest only (readBundleManifest: the archive is walked, no other file is
// parsed); a start-up bundle is unpacked once and registered only if it loads; bytes read from the store are
// hashed by the unpack worker, and bytes that are not what their key says are refused before any swap.
import { createHash } from 'node:crypto';
import { gzipSync } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BundleRegistry, LifecycleError, LifecycleNode } from '../../src/lifecycle/index.ts';
import { BundleUnpackThread } from '../../src/lifecycle/unpack-thread.ts';
import { readBundleManifest } from '../../src/lifecycle/unpack.ts';
import { readBundle } from '../../src/rego/bundle/index.ts';
import { writeTar } from '../../src/rego/bundle/tar.ts';
import { openStore } from '../../src/store/index.ts';
import type { DurableStore } from '../../src/store/types.ts';
import { buildDecisionModule } from '../acs/fixtures/decision-module.ts';
import { constantBundle } from './fixtures.ts';

const enc = new TextEncoder();
const MANIFEST = {
  revision: 'manifest-only',
  roots: [''],
  wasm: [{ entrypoint: 'acs/decision', module: '/policy.wasm' }],
};

function tarball(files: { name: string; data: string | Uint8Array }[]): Uint8Array {
  return new Uint8Array(
    gzipSync(
      writeTar(files.map((f) => ({ name: f.name, data: typeof f.data === 'string' ? enc.encode(f.data) : f.data }))),
    ),
  );
}

function refusal(fn: () => unknown): LifecycleError {
  try {
    fn();
  } catch (e) {
    expect(e).toBeInstanceOf(LifecycleError);
    expect((e as LifecycleError).code).toBe('invalid_bundle');
    return e as LifecycleError;
  }
  throw new Error('expected a refusal');
}

describe('registration reads the manifest only', () => {
  let wasm: Uint8Array;
  let store: DurableStore;
  const thread = new BundleUnpackThread();

  beforeAll(async () => {
    wasm = await buildDecisionModule({ constant: { decision: 'allow', reasoning: 'manifest' } });
    store = await openStore({ inMemory: true });
  });
  afterAll(async () => {
    await thread.close();
    await store?.close();
  });

  it('gives the manifest readBundle gives, without parsing the data files', async () => {
    const bundle = await constantBundle('same-as-readBundle', { data: { team: { name: 'x' } } });
    expect(readBundleManifest(bundle)).toEqual(readBundle(bundle).manifest);
    // Data no JSON parser accepts: readBundle refuses the bundle, the manifest is still read (the activation's
    // unpack refuses it later, naming the file).
    const malformedData = tarball([
      { name: '/.manifest', data: JSON.stringify(MANIFEST) },
      { name: '/data.json', data: '{"a": 1,}' },
      { name: '/policy.wasm', data: wasm },
    ]);
    expect(() => readBundle(malformedData)).toThrow('/data.json: invalid JSON');
    expect(readBundleManifest(malformedData)).toEqual(MANIFEST);
    expect(await thread.readManifest(malformedData)).toEqual(MANIFEST);
    const record = await new BundleRegistry(store).register(malformedData, 'test');
    expect(record.revision).toBe('manifest-only');
    // No manifest: an empty one, as readBundle (the registry then names the bundle by its sha256).
    const bare = tarball([{ name: '/policy.wasm', data: wasm }]);
    expect(readBundleManifest(bare)).toEqual({});
    expect((await new BundleRegistry(store).register(bare, 'test')).revision).toBe(
      `sha256:${createHash('sha256').update(bare).digest('hex')}`,
    );
  });

  it('refuses what readBundle refuses about the archive and the manifest', async () => {
    const good = tarball([
      { name: '/.manifest', data: JSON.stringify(MANIFEST) },
      { name: '/policy.wasm', data: wasm },
    ]);
    expect(refusal(() => readBundleManifest(good.subarray(0, good.length - 9))).message).toMatch(
      /^bundle is not a valid gzip stream: /,
    );
    expect(refusal(() => readBundleManifest(enc.encode('not a tarball'))).message).toMatch(
      /^bundle is not a valid gzip stream: /,
    );
    const tar = writeTar([
      { name: '/.manifest', data: enc.encode(JSON.stringify(MANIFEST)) },
      { name: '/policy.wasm', data: wasm },
    ]);
    const badChecksum = tar.slice();
    badChecksum[0] ^= 1;
    expect(refusal(() => readBundleManifest(new Uint8Array(gzipSync(badChecksum)))).message).toBe(
      'invalid tar header checksum',
    );
    const cases: [Uint8Array, string][] = [
      [
        tarball([
          { name: '/.manifest', data: '{"revision": "x",' },
          { name: '/policy.wasm', data: wasm },
        ]),
        '/.manifest: invalid JSON',
      ],
      [tarball([{ name: '/.manifest', data: '["x"]' }]), '/.manifest: must be a JSON object'],
      [
        tarball([{ name: '/.manifest', data: JSON.stringify({ wasm: { module: '/policy.wasm' } }) }]),
        '/.manifest: wasm must be a list',
      ],
      [
        tarball([
          { name: '/.manifest', data: JSON.stringify({ wasm: [{ module: '/policy.wasm' }] }) },
          { name: '/policy.wasm', data: wasm },
        ]),
        '/.manifest: wasm entries need entrypoint and module',
      ],
      [
        tarball([
          { name: '/.manifest', data: JSON.stringify(MANIFEST) },
          { name: '/data.json', data: '{}' },
        ]),
        '/.manifest: wasm module /policy.wasm not found in bundle',
      ],
      [
        tarball([
          {
            name: '/.manifest',
            data: JSON.stringify({ ...MANIFEST, wasm: [{ entrypoint: 'acs/decision', module: '/data.json' }] }),
          },
          { name: '/data.json', data: '{}' },
        ]),
        '/.manifest: wasm module /data.json not found in bundle',
      ],
      [
        tarball([
          { name: '/.manifest', data: '{}' },
          { name: './.manifest', data: '{}' },
        ]),
        'duplicate file in bundle: /.manifest',
      ],
    ];
    for (const [bytes, message] of cases) {
      // readBundle's own refusal is the reference.
      expect(() => readBundle(bytes)).toThrow(message);
      expect(refusal(() => readBundleManifest(bytes)).message).toContain(message);
      await expect(thread.readManifest(bytes)).rejects.toThrow(message);
      await expect(new BundleRegistry(store).register(bytes, 'test')).rejects.toThrow(message);
    }
  });
});

describe('start-up and store reads', () => {
  it('a start-up bundle that does not load is not registered; one that loads is registered once', async () => {
    const store = await openStore({ inMemory: true });
    /** A node that starts with `bytes` on this store (no polling). */
    const nodeStartingWith = (bytes: Uint8Array): LifecycleNode =>
      new LifecycleNode({ store, pollIntervalMs: 60_000, initialBundle: { bytes, source: 'test' } });
    try {
      const wasm = await buildDecisionModule({ constant: { decision: 'allow', reasoning: 'startup' } });
      const broken = tarball([
        { name: '/.manifest', data: JSON.stringify(MANIFEST) },
        { name: '/data.json', data: '["not an object"]' },
        { name: '/policy.wasm', data: wasm },
      ]);
      const refused = await nodeStartingWith(broken)
        .start()
        .catch((e: unknown) => e);
      expect((refused as LifecycleError).code).toBe('invalid_bundle');
      const failsSmoke = await constantBundle('smoke-fails', {
        smoke: { cases: [{ name: 'denies', input: {}, expect: { decision: 'deny' } }] },
      });
      const smokeRefused = await nodeStartingWith(failsSmoke)
        .start()
        .catch((e: unknown) => e);
      expect((smokeRefused as LifecycleError).code).toBe('smoke_failed');
      expect(await new BundleRegistry(store).list()).toEqual([]);
      expect(await new BundleRegistry(store).active()).toBeNull();

      const node = nodeStartingWith(await constantBundle('startup-1'));
      await node.start();
      try {
        expect(node.engine.revision).toBe('startup-1');
        const listed = await new BundleRegistry(store).list();
        expect(listed.map((b) => [b.revision, b.sha256, b.source])).toEqual([
          ['startup-1', node.engine.current.sha256, 'test'],
        ]);
        expect((await new BundleRegistry(store).active())?.sha256).toBe(node.engine.current.sha256);
      } finally {
        await node.stop();
      }
    } finally {
      await store.close();
    }
  });

  it('stored bytes that do not hash to their key are refused at activation; the old version stays in force', async () => {
    const store = await openStore({ inMemory: true });
    const node = new LifecycleNode({
      store,
      pollIntervalMs: 60_000,
      initialBundle: { bytes: await constantBundle('in-force'), source: 'test' },
    });
    await node.start();
    try {
      const registry = new BundleRegistry(store);
      const target = await registry.register(await constantBundle('target'), 'cli');
      // Another well-formed bundle's bytes under the target's key: they unpack, so only the hash can refuse them.
      const swapped = await constantBundle('impostor');
      await store.query(`UPDATE policy_bundles SET bytes = decode($1, 'base64') WHERE sha256 = $2`, [
        Buffer.from(swapped).toString('base64'),
        target.sha256,
      ]);
      const refused = await node.activate(target.sha256, 'ops').catch((e: unknown) => e);
      expect(refused).toBeInstanceOf(LifecycleError);
      expect((refused as LifecycleError).code).toBe('invalid_bundle');
      expect((refused as LifecycleError).message).toBe(`stored bundle ${target.sha256} does not match its sha256`);
      expect(node.engine.revision).toBe('in-force');
      expect((await registry.active())?.revision).toBe('in-force');
      // Not kept as the target's bytes: a second attempt reads the store again and is refused again.
      await expect(node.activate(target.sha256, 'ops')).rejects.toThrow('does not match its sha256');
      expect(node.engine.revision).toBe('in-force');
    } finally {
      await node.stop();
      await store.close();
    }
  });
});
