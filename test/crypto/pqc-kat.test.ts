// Known-answer tests for the PQC key generation the keyring relies on. Vectors: NIST ACVP-Server
// gen-val/json-files ML-DSA-keyGen-FIPS204 (tcId 1, 26, 51; pk given as SHA-256 of the 1312/1952/2592-byte key)
// and SLH-DSA-keyGen-FIPS205 (SHA2-128s tcId 1, SHA2-128f tcId 21). @noble/post-quantum ships no vectors in its
// npm package, so they are transcribed here.
import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { generatePqcKeyPair, loadPqcPrivateKey, signPqc, verifyPqc } from '../../src/crypto/pqc.ts';
import { PQC_PUBLIC_KEY_BYTES, PQC_SIGNATURE_BYTES } from '../../src/crypto/algorithms.ts';

const hex = (h: string) => new Uint8Array(Buffer.from(h, 'hex'));
const sha256 = (b: Uint8Array) => createHash('sha256').update(b).digest('hex').toUpperCase();

const ML_DSA_KEYGEN = [
  {
    algorithm: 'ML-DSA-44',
    seed: 'D71361C000F9A7BC99DFB425BCB6BB27C32C36AB444FF3708B2D93B4E66D5B5B',
    pkPrefix: 'B845FA2881407A59183071629B08223128116014FB58FF6BB4C8C9FE19CF5B0B',
    pkSha256: '451A808C522218FADBDAB146FC12004B0741C7D069F238F43AD77216159F6A34',
  },
  {
    algorithm: 'ML-DSA-65',
    seed: '1BD67DC782B2958E189E315C040DD1F64C8AB232A6A170E1A7A52C33F10851B1',
    pkPrefix: '43AD6560D3BB684667A559EE6EC7C816020E5B65671F270F2353A8C912B6C26B',
    pkSha256: '6FB1146B85539FB5C53D35B66DAE94202FCD5575A537172CF1156220476F7920',
  },
  {
    algorithm: 'ML-DSA-87',
    seed: 'F7052FBB921759CD8716773BA6355630121D6927899FDDA5768E2BC240FCCB7B',
    pkPrefix: '18DFF392DEF5756EA23519A240E6B5CDCF912D89CD94DEC9DC71E53F8CDF37D9',
    pkSha256: '40298270777D3306D2FCB6B4691D7A7AB799CD1069EEA88F843CF0EC26D4B01F',
  },
] as const;

const SLH_DSA_KEYGEN = [
  {
    algorithm: 'SLH-DSA-128s',
    skSeed: '173D04C938C1C36BF289C3C022D04B14',
    skPrf: '63AE23C41AA546DA589774AC20B745C4',
    pkSeed: '0D794777914C99766827F0F09CA972BE',
    pk: '0D794777914C99766827F0F09CA972BE0162C10219D422ADBA1359E6AA65299C',
  },
  {
    algorithm: 'SLH-DSA-128f',
    skSeed: 'C42BCB3B5A6F331F5CCE899253C6D9E2',
    skPrf: '9FF2B7EAD7A04BAB1794DB8CC659C3B4',
    pkSeed: 'A868F1BD5DEBC12D4C9FAD66AABD0A94',
    pk: 'A868F1BD5DEBC12D4C9FAD66AABD0A94B546DF247BE4C457F3D467CDFCFABD39',
  },
] as const;

describe('ML-DSA key generation matches NIST ACVP (FIPS 204)', () => {
  for (const v of ML_DSA_KEYGEN) {
    it(`${v.algorithm}: seed ξ → public key`, () => {
      const pair = generatePqcKeyPair(v.algorithm, hex(v.seed));
      expect(pair.publicKey.length).toBe(PQC_PUBLIC_KEY_BYTES[v.algorithm]);
      expect(Buffer.from(pair.publicKey.subarray(0, 32)).toString('hex').toUpperCase()).toBe(v.pkPrefix);
      expect(sha256(pair.publicKey)).toBe(v.pkSha256);
      // The key file stores only ξ: reloading it must give the same key and refuse a foreign public key.
      expect(Buffer.from(loadPqcPrivateKey(v.algorithm, pair.privateKey, pair.publicKey).signingKey)).toEqual(
        Buffer.from(pair.signingKey),
      );
      const other = generatePqcKeyPair(v.algorithm, new Uint8Array(32).fill(9)).publicKey;
      expect(() => loadPqcPrivateKey(v.algorithm, pair.privateKey, other)).toThrow(/does not match/);
    });
  }
});

describe('SLH-DSA key generation matches NIST ACVP (FIPS 205, SHA2 instantiation)', () => {
  for (const v of SLH_DSA_KEYGEN) {
    it(`${v.algorithm}: SK.seed‖SK.prf‖PK.seed → public key`, () => {
      const pair = generatePqcKeyPair(v.algorithm, hex(v.skSeed + v.skPrf + v.pkSeed));
      expect(Buffer.from(pair.publicKey).toString('hex').toUpperCase()).toBe(v.pk);
      // The 64-byte secret key embeds the public key, so loading needs no tree computation.
      expect(
        Buffer.from(loadPqcPrivateKey(v.algorithm, pair.privateKey, pair.publicKey).publicKey)
          .toString('hex')
          .toUpperCase(),
      ).toBe(v.pk);
    });
  }
});

describe('deterministic-seed round trips', () => {
  it('ML-DSA-65: the same seed gives the same key; signatures verify and are refused for another message or key', () => {
    const seed = hex('00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff');
    const a = generatePqcKeyPair('ML-DSA-65', seed);
    const b = generatePqcKeyPair('ML-DSA-65', seed);
    expect(Buffer.from(a.publicKey)).toEqual(Buffer.from(b.publicKey));
    const msg = new TextEncoder().encode('{"jsonrpc":"2.0"}');
    const sig = signPqc('ML-DSA-65', a.signingKey, msg);
    expect(sig.length).toBe(PQC_SIGNATURE_BYTES['ML-DSA-65']);
    expect(verifyPqc('ML-DSA-65', b.publicKey, msg, sig)).toBe(true);
    expect(verifyPqc('ML-DSA-65', b.publicKey, new TextEncoder().encode('{"jsonrpc":"2.1"}'), sig)).toBe(false);
    const other = generatePqcKeyPair('ML-DSA-65', new Uint8Array(32).fill(1));
    expect(verifyPqc('ML-DSA-65', other.publicKey, msg, sig)).toBe(false);
    // Wrong lengths are a failed verify, not an exception.
    expect(verifyPqc('ML-DSA-65', b.publicKey, msg, sig.subarray(1))).toBe(false);
    expect(verifyPqc('ML-DSA-65', b.publicKey.subarray(1), msg, sig)).toBe(false);
  });

  it('refuses seeds and private keys of the wrong size with a precise error', () => {
    expect(() => generatePqcKeyPair('ML-DSA-44', new Uint8Array(31))).toThrow(/32 bytes/);
    expect(() => generatePqcKeyPair('SLH-DSA-128f', new Uint8Array(32))).toThrow(/48 bytes/);
    expect(() => loadPqcPrivateKey('ML-DSA-87', new Uint8Array(33))).toThrow(/32 bytes, got 33/);
    expect(() => loadPqcPrivateKey('SLH-DSA-128s', new Uint8Array(32))).toThrow(/64 bytes, got 32/);
  });
});
