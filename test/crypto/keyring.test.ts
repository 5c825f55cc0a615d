// Key files, the keyring and rotation (docs/keys.md): real files in a temporary directory.
import { mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  createSignatureRegistry,
  generateKeyFile,
  KeyFileError,
  loadKeyring,
  parseKeyFile,
  retireKeyFile,
  writeKeyFiles,
  type KeyFileJson,
} from '../../src/crypto/index.ts';

let root: string;
beforeAll(() => {
  root = mkdtempSync(join(tmpdir(), 'acs-keys-'));
});
afterAll(() => {
  rmSync(root, { recursive: true, force: true });
});

const input = new TextEncoder().encode('{"method":"steps/userMessage"}');
const fresh = (name: string) => join(root, name);

describe('key files', () => {
  it('writes secrets mode 0600 and a public file without any secret', () => {
    const dir = fresh('write');
    for (const alg of ['ECDSA-P256', 'ML-DSA-65', 'ML-DSA-65+ECDSA-P256', 'HMAC-SHA256'] as const) {
      const file = generateKeyFile(alg, { keyId: `k-${alg.replace('+', '_')}` });
      const written = writeKeyFiles(dir, file);
      expect(statSync(written.privatePath!).mode & 0o777).toBe(0o600);
      const priv = JSON.parse(readFileSync(written.privatePath!, 'utf8'));
      expect(priv).toEqual(file);
      if (alg === 'HMAC-SHA256') {
        expect(written.publicPath).toBeUndefined();
        continue;
      }
      const pubText = readFileSync(written.publicPath!, 'utf8');
      expect(pubText).not.toContain('private_key');
      // A member name, not a substring: random base64 key material can spell "ikm".
      expect(pubText).not.toContain('"ikm"');
      for (const secret of [
        file.private_key,
        file.components?.pqc.private_key,
        file.components?.classical.private_key,
      ]) {
        if (secret) expect(pubText).not.toContain(secret);
      }
    }
    expect(statSync(dir).mode & 0o777).toBe(0o700);
  });

  it('never overwrites an existing key', () => {
    const dir = fresh('overwrite');
    writeKeyFiles(dir, generateKeyFile('ECDSA-P256', { keyId: 'same' }));
    const before = readFileSync(join(dir, 'same.key.json'), 'utf8');
    expect(() => writeKeyFiles(dir, generateKeyFile('ECDSA-P256', { keyId: 'same' }))).toThrow(/already exists/);
    expect(readFileSync(join(dir, 'same.key.json'), 'utf8')).toBe(before);
  });

  it('rejects malformed key files with a message naming the field and never the secret', () => {
    const good = generateKeyFile('ECDSA-P256', { keyId: 'good' });
    const cases: [Partial<KeyFileJson> | Record<string, unknown>, RegExp][] = [
      [{ ...good, format: 'x' }, /"format"/],
      [{ ...good, key_id: '../etc/passwd' }, /"key_id"/],
      [{ ...good, algorithm: 'ECDSA-P384' }, /"algorithm"/],
      [{ ...good, created_at: 'yesterday' }, /"created_at"/],
      [{ ...good, status: 'revoked' }, /"status"/],
      [{ ...good, public_key: 'not base64!' }, /"public_key"/],
      [{ ...good, private_key: 'AA' }, /"private_key"/],
      [{ ...generateKeyFile('HMAC-SHA256', { keyId: 'h' }), ikm: undefined }, /"ikm"/],
    ];
    for (const [value, message] of cases) {
      expect(() => parseKeyFile(value, 'test.json')).toThrow(message);
    }
    expect(() => parseKeyFile([], 'x.json')).toThrow(/x.json: key file must be a JSON object/);
  });

  it('refuses key material that does not fit the algorithm or does not match its public half', () => {
    const ec = generateKeyFile('ECDSA-P256', { keyId: 'ec' });
    const ec2 = generateKeyFile('ECDSA-P256', { keyId: 'ec2' });
    const ml = generateKeyFile('ML-DSA-65', { keyId: 'ml' });
    const err = (keys: unknown[]) => {
      try {
        loadKeyring({ keys });
      } catch (e) {
        expect(e).toBeInstanceOf(KeyFileError);
        return (e as Error).message;
      }
      return 'loaded';
    };
    expect(err([{ ...ec, private_key: ec2.private_key }])).toMatch(/does not match the public key/);
    expect(err([{ ...ml, private_key: generateKeyFile('ML-DSA-65', { keyId: 'x' }).private_key }])).toMatch(
      /does not match the public key/,
    );
    expect(err([{ ...ml, algorithm: 'ML-DSA-44' }])).toMatch(/ML-DSA-44 public key must be 1312 bytes/);
    expect(err([{ ...ec, algorithm: 'RSA-PSS-SHA256' }])).toMatch(/needs an RSA key/);
    const message = err([{ ...ec, private_key: ec2.private_key }]);
    expect(message).not.toContain(ec2.private_key!);
  });
});

describe('keyring sources', () => {
  it('loads a directory, merges a key with its public file, and refuses one key_id bound to two keys', () => {
    const dir = fresh('load');
    writeKeyFiles(dir, generateKeyFile('ML-DSA-65', { keyId: 'pq' }));
    writeKeyFiles(dir, generateKeyFile('RSA-PSS-SHA256', { keyId: 'rsa', rsaModulusBits: 2048 }));
    const keyring = loadKeyring({ dir });
    expect(keyring.summaries().map((s) => [s.keyId, s.algorithm, s.canSign])).toEqual([
      ['pq', 'ML-DSA-65', true],
      ['rsa', 'RSA-PSS-SHA256', true],
    ]);
    // A clashing definition of "pq" from config is refused, naming both sources.
    expect(() => loadKeyring({ dir, keys: [generateKeyFile('ML-DSA-65', { keyId: 'pq' })] })).toThrow(
      /"pq" is defined twice/,
    );
  });

  it('a directory with only public files verifies but cannot sign', async () => {
    const signing = fresh('signer');
    const verifying = fresh('verifier');
    const file = generateKeyFile('ML-DSA-44', { keyId: 'agent-key' });
    writeKeyFiles(signing, file);
    writeKeyFiles(verifying, file);
    rmSync(join(verifying, 'agent-key.key.json'));
    const signer = createSignatureRegistry({ dir: signing, workerPool: false });
    const verifier = createSignatureRegistry({ dir: verifying, workerPool: false });
    const sig = await signer.sign('ML-DSA-44', input, { sessionId: 's' });
    expect(await verifier.verify(sig, input, { sessionId: 's' })).toBe(true);
    expect(verifier.signingAlgorithms()).toEqual([]);
    await expect(verifier.sign('ML-DSA-44', input, { sessionId: 's' })).rejects.toThrow(/no active signing key/);
  });

  it('reads GUARDIAN_KEY_DIR, GUARDIAN_KEYS and GUARDIAN_HMAC_IKM from the given environment', async () => {
    const dir = fresh('env');
    writeKeyFiles(dir, generateKeyFile('ECDSA-P256', { keyId: 'from-dir' }));
    const inline = generateKeyFile('SLH-DSA-128f', { keyId: 'from-env' });
    const ikm = Buffer.alloc(32, 7).toString('base64');
    const r = createSignatureRegistry({
      env: { GUARDIAN_KEY_DIR: dir, GUARDIAN_KEYS: JSON.stringify([inline]), GUARDIAN_HMAC_IKM: ikm },
      workerPool: false,
    });
    expect(
      r.keyring
        .summaries()
        .map((s) => s.keyId)
        .sort(),
    ).toEqual(['default', 'from-dir', 'from-env']);
    const sig = await r.sign('HMAC-SHA256', input, { sessionId: 's1' });
    expect(sig.key_id).toBe('default');
    expect(await r.verify(sig, input, { sessionId: 's1' })).toBe(true);
    expect(() => loadKeyring({ env: { GUARDIAN_HMAC_IKM: 'short' } })).toThrow(/GUARDIAN_HMAC_IKM: not valid base64/);
    expect(() => loadKeyring({ env: { GUARDIAN_HMAC_IKM: Buffer.alloc(8).toString('base64') } })).toThrow(
      /at least 16 bytes/,
    );
    expect(() => loadKeyring({ env: { GUARDIAN_KEYS: '{' } })).toThrow(/GUARDIAN_KEYS: not valid JSON/);
    expect(() => loadKeyring({ dir: join(dir, 'missing') })).toThrow(/key directory .*missing/);
  });

  it('names the unreadable file', () => {
    const dir = fresh('broken');
    writeKeyFiles(dir, generateKeyFile('ECDSA-P256', { keyId: 'ok' }));
    writeFileSync(join(dir, 'zz.json'), '{ not json');
    expect(() => loadKeyring({ dir })).toThrow(/zz\.json: not readable JSON/);
  });
});

describe('rotation', () => {
  it('old keys still verify, the newest active key signs, and each signature records its key id', async () => {
    const dir = fresh('rotate');
    writeKeyFiles(
      dir,
      generateKeyFile('ML-DSA-65', { keyId: 'guardian-2026-10', createdAt: new Date('2026-10-01T00:00:00Z') }),
    );
    const before = createSignatureRegistry({ dir, workerPool: false });
    const oldSig = await before.sign('ML-DSA-65', input, { sessionId: 's' });
    expect(oldSig.key_id).toBe('guardian-2026-10');

    // Add a newer key: it signs from now on; the old one still verifies.
    writeKeyFiles(
      dir,
      generateKeyFile('ML-DSA-65', { keyId: 'guardian-2026-11', createdAt: new Date('2026-11-01T00:00:00Z') }),
    );
    const after = createSignatureRegistry({ dir, workerPool: false });
    const newSig = await after.sign('ML-DSA-65', input, { sessionId: 's' });
    expect(newSig.key_id).toBe('guardian-2026-11');
    expect(await after.verify(oldSig, input, { sessionId: 's' })).toBe(true);
    expect(await after.verify(newSig, input, { sessionId: 's' })).toBe(true);
    expect(await after.verify({ ...oldSig, key_id: 'guardian-2026-11' }, input, { sessionId: 's' })).toBe(false);

    // Retire the new one: the older active key signs again; signatures by the retired key keep verifying.
    const changed = retireKeyFile(dir, 'guardian-2026-11');
    expect(changed.map((p) => p.split('/').pop())).toEqual(['guardian-2026-11.key.json', 'guardian-2026-11.pub.json']);
    expect(statSync(join(dir, 'guardian-2026-11.key.json')).mode & 0o777).toBe(0o600);
    expect(readdirSync(dir).filter((n) => n.includes('.tmp-'))).toEqual([]);
    const retired = createSignatureRegistry({ dir, workerPool: false });
    expect((await retired.sign('ML-DSA-65', input, { sessionId: 's' })).key_id).toBe('guardian-2026-10');
    expect(await retired.verify(newSig, input, { sessionId: 's' })).toBe(true);
    await expect(retired.sign('ML-DSA-65', input, { sessionId: 's', keyId: 'guardian-2026-11' })).rejects.toThrow(
      /retired/,
    );
    expect(() => retireKeyFile(dir, 'nope')).toThrow(/no key "nope"/);
  });
});
