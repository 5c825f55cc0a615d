// Signed bundles (OPA docs: Bundles, signing): sign/verify round trip, OPA's verification matrix, tampering,
// wrong keys, scope, whitespace-independent JSON hashing, and refusal at activation with the old version kept.
import { generateKeyPairSync } from 'node:crypto';
import { gunzipSync, gzipSync } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  LifecycleError,
  type LifecycleNode,
  signBundle,
  verifyBundleSignature,
  hashBundleFile,
  type BundleVerificationConfig,
} from '../../src/lifecycle/index.ts';
import { readBundle } from '../../src/rego/bundle/index.ts';
import { readTar, writeTar } from '../../src/rego/bundle/tar.ts';
import type { DurableStore } from '../../src/store/types.ts';
import { constantBundle, startMemoryNode } from './fixtures.ts';

const pem = () => {
  const { publicKey, privateKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' });
  return {
    pub: publicKey.export({ type: 'spki', format: 'pem' }).toString(),
    priv: privateKey.export({ type: 'pkcs8', format: 'pem' }).toString(),
  };
};
const good = pem();
const other = pem();
const verification = (keyId?: string): BundleVerificationConfig => ({
  keys: { release: { algorithm: 'ES256', key: good.pub } },
  ...(keyId ? { keyId } : {}),
});

async function expectRefused(p: Promise<unknown>, code: string, text: RegExp): Promise<void> {
  const err = await p.then(
    () => null,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(LifecycleError);
  expect((err as LifecycleError).code).toBe(code);
  expect((err as LifecycleError).message).toMatch(text);
}

/** Rewrites one file of a bundle tarball (keeps .signatures.json as it was). */
function rewriteFile(bytes: Uint8Array, path: string, edit: (old: Uint8Array) => Uint8Array): Uint8Array {
  const raw = gunzipSync(bytes);
  const entries = readTar(new Uint8Array(raw), { maxEntries: 1000, maxEntryBytes: 1e9, maxTotalBytes: 1e9 });
  const out = entries.map((e) => (e.name === path ? { name: e.name, data: edit(e.data) } : e));
  return new Uint8Array(gzipSync(writeTar(out)));
}

let unsigned: Uint8Array;
let signed: Uint8Array;
beforeAll(async () => {
  unsigned = await constantBundle('sig-v1', { data: { roles: { admin: ['alice'] }, z: 1, a: 2 } });
  signed = await signBundle(unsigned, { key: { algorithm: 'ES256', key: good.priv }, keyId: 'release' });
});

describe('bundle signatures', () => {
  it('a signed bundle verifies with the configured key (header kid and pinned key id)', async () => {
    const b = readBundle(signed);
    expect(b.signatures?.signatures).toHaveLength(1);
    expect(await verifyBundleSignature(b, verification())).toEqual({ status: 'verified', keyId: 'release' });
    expect(await verifyBundleSignature(b, verification('release'))).toEqual({ status: 'verified', keyId: 'release' });
    const payload = JSON.parse(Buffer.from(b.signatures!.signatures[0].split('.')[1], 'base64url').toString()) as {
      files: { name: string; algorithm: string }[];
    };
    expect(payload.files.map((f) => f.name).sort()).toEqual(['.manifest', 'data.json', 'policy.wasm']);
    expect(new Set(payload.files.map((f) => f.algorithm))).toEqual(new Set(['SHA-256']));
  });

  it('unsigned bundles are refused when verification is configured, with or without a pinned key id (OPA #8531)', async () => {
    await expectRefused(
      verifyBundleSignature(readBundle(unsigned), verification()),
      'signature_required',
      /not signed/,
    );
    await expectRefused(
      verifyBundleSignature(readBundle(unsigned), verification('release')),
      'signature_required',
      /not signed/,
    );
    // Nothing configured and nothing signed: accepted as unsigned (OPA's default).
    expect(await verifyBundleSignature(readBundle(unsigned), undefined)).toEqual({ status: 'unsigned' });
  });

  it('signatures present but no key configured → refused', async () => {
    await expectRefused(
      verifyBundleSignature(readBundle(signed), undefined),
      'signature_unexpected',
      /no verification key/,
    );
  });

  it('a tampered file is refused naming the file', async () => {
    const tampered = rewriteFile(signed, '/data.json', () =>
      new TextEncoder().encode('{"roles":{"admin":["mallory"]},"z":1,"a":2}'),
    );
    await expectRefused(
      verifyBundleSignature(readBundle(tampered), verification()),
      'signature_invalid',
      /\/data\.json: digest mismatch/,
    );
    const extra = rewriteFile(signed, '/policy.wasm', (w) => new Uint8Array([...w, 0]));
    await expectRefused(
      verifyBundleSignature(readBundle(extra), verification()),
      'signature_invalid',
      /\/policy\.wasm: digest mismatch/,
    );
  });

  it('reformatted JSON (whitespace, key order) still verifies: JSON files are hashed structurally', async () => {
    const pretty = rewriteFile(signed, '/data.json', (d) => {
      const v = JSON.parse(new TextDecoder().decode(d)) as Record<string, unknown>;
      const reordered = Object.fromEntries(Object.entries(v).reverse());
      return new TextEncoder().encode(JSON.stringify(reordered, null, 4));
    });
    expect((await verifyBundleSignature(readBundle(pretty), verification())).status).toBe('verified');
    // The structural digest: `{` sorted "key":value pairs `}` (OPA bundle/hash.go), no HTML escaping.
    const f = { path: '/x.json', bytes: new TextEncoder().encode('{ "b": [1, "<&>"], "a": {"d": null, "c": true} }') };
    const { createHash } = await import('node:crypto');
    expect(hashBundleFile(f)).toBe(
      createHash('sha256').update('{"a":{"c":true,"d":null},"b":[1,"<&>"]}').digest('hex'),
    );
    // Numbers as OPA decodes them (json.Number) and its encoder writes them: their literal text, not a double's.
    const n = {
      path: '/data.json',
      bytes: new TextEncoder().encode('{"v": 1.0, "p": 1.50, "n": 12345678901234567890, "e": 1e3, "i": 7}'),
    };
    expect(hashBundleFile(n)).toBe(
      createHash('sha256').update('{"e":1e3,"i":7,"n":12345678901234567890,"p":1.50,"v":1.0}').digest('hex'),
    );
  });

  it('wrong key, unknown kid and a pinned key id that differs from the signer are refused', async () => {
    const byOther = await signBundle(unsigned, { key: { algorithm: 'ES256', key: other.priv }, keyId: 'release' });
    await expectRefused(
      verifyBundleSignature(readBundle(byOther), verification()),
      'signature_invalid',
      /does not verify with key release/,
    );
    const unknownKid = await signBundle(unsigned, { key: { algorithm: 'ES256', key: other.priv }, keyId: 'attacker' });
    await expectRefused(
      verifyBundleSignature(readBundle(unknownKid), verification()),
      'unknown_key',
      /"attacker" is not a configured verification key/,
    );
    // Pinned key id: the header kid is ignored, so a bundle signed by another key claiming kid "release" fails.
    await expectRefused(
      verifyBundleSignature(readBundle(unknownKid), verification('release')),
      'signature_invalid',
      /does not verify/,
    );
  });

  it('a file added after signing, a signed file removed, and a scope mismatch are refused', async () => {
    const raw = gunzipSync(signed);
    const entries = readTar(new Uint8Array(raw), { maxEntries: 1000, maxEntryBytes: 1e9, maxTotalBytes: 1e9 });
    const added = new Uint8Array(
      gzipSync(writeTar([...entries, { name: '/evil.rego', data: new TextEncoder().encode('package evil') }])),
    );
    await expectRefused(
      verifyBundleSignature(readBundle(added), verification()),
      'signature_invalid',
      /\/evil\.rego: file is not covered/,
    );
    const removed = new Uint8Array(gzipSync(writeTar(entries.filter((e) => e.name !== '/data.json'))));
    await expectRefused(
      verifyBundleSignature(readBundle(removed), verification()),
      'signature_invalid',
      /missing from the bundle: data\.json/,
    );
    await expectRefused(
      verifyBundleSignature(readBundle(signed), { ...verification(), scope: 'prod' }),
      'signature_invalid',
      /scope/,
    );
    const scoped = await signBundle(unsigned, {
      key: { algorithm: 'ES256', key: good.priv },
      keyId: 'release',
      scope: 'prod',
    });
    expect((await verifyBundleSignature(readBundle(scoped), { ...verification(), scope: 'prod' })).status).toBe(
      'verified',
    );
  });

  it('HS256 shared-secret signatures verify; a different secret does not', async () => {
    const secret = new TextEncoder().encode('a-shared-secret-of-32-bytes-long!!');
    const hs = await signBundle(unsigned, { key: { algorithm: 'HS256', key: secret }, keyId: 'hs' });
    expect(
      (await verifyBundleSignature(readBundle(hs), { keys: { hs: { algorithm: 'HS256', key: secret } } })).status,
    ).toBe('verified');
    await expectRefused(
      verifyBundleSignature(readBundle(hs), {
        keys: { hs: { algorithm: 'HS256', key: new TextEncoder().encode('another-secret-another-secret-xx') } },
      }),
      'signature_invalid',
      /does not verify/,
    );
  });
});

describe('activation with verification required', () => {
  let store: DurableStore;
  let node: LifecycleNode;
  beforeAll(async () => {
    ({ store, node } = await startMemoryNode(signed, { verification: verification('release') }));
  });
  afterAll(async () => {
    await node.stop();
    await store.close();
  });

  it('unsigned, tampered and wrong-key bundles are refused with the reason; the signed version stays in force', async () => {
    expect(node.engine.revision).toBe('sig-v1');
    const v2 = await constantBundle('sig-v2');
    await expectRefused(
      node.push(v2, { source: 'test', activate: true, by: 'tester' }),
      'signature_required',
      /not signed/,
    );
    const tampered = rewriteFile(
      await signBundle(v2, { key: { algorithm: 'ES256', key: good.priv }, keyId: 'release' }),
      '/data.json',
      () => new TextEncoder().encode('{"owner":"mallory"}'),
    );
    await expectRefused(
      node.push(tampered, { source: 'test', activate: true, by: 'tester' }),
      'signature_invalid',
      /digest mismatch/,
    );
    const wrongKey = await signBundle(v2, { key: { algorithm: 'ES256', key: other.priv }, keyId: 'release' });
    await expectRefused(
      node.push(wrongKey, { source: 'test', activate: true, by: 'tester' }),
      'signature_invalid',
      /does not verify/,
    );
    expect(node.engine.revision).toBe('sig-v1');
    expect((await node.registry.active())?.revision).toBe('sig-v1');
    const audit = await node.registry.auditLog();
    expect(audit.filter((a) => a.action === 'activate' && a.outcome === 'refused')).toHaveLength(3);

    const ok = await node.push(
      await signBundle(v2, { key: { algorithm: 'ES256', key: good.priv }, keyId: 'release' }),
      { source: 'test', activate: true, by: 'tester' },
    );
    expect(ok.activation?.signature).toBe('verified');
    expect(node.engine.revision).toBe('sig-v2');
  });
});
