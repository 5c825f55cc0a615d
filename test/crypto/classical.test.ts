// ECDSA-P256 and RSA-PSS-SHA256 encodings (ACS §10.1) pinned and cross-checked against an independent
// implementation: @noble/curves (installed as a dependency of @noble/post-quantum) for P-256, and node:crypto
// with explicitly different PSS parameters for RSA.
import { constants, generateKeyPairSync, sign as nodeSign, type KeyObject } from 'node:crypto';
import { p256 } from '@noble/curves/nist.js';
import { beforeAll, describe, expect, it } from 'vitest';
import {
  exportPkcs8Der,
  exportSpkiDer,
  importClassicalPrivateKey,
  importClassicalPublicKey,
  signClassical,
  verifyClassical,
} from '../../src/crypto/classical.ts';

const input = new TextEncoder().encode('{"id":1,"jsonrpc":"2.0","method":"steps/toolCallRequest"}');

function nobleKeysOf(privateKey: KeyObject): { secretKey: Uint8Array; publicKey: Uint8Array } {
  const jwk = privateKey.export({ format: 'jwk' });
  const b = (s: string | undefined) => new Uint8Array(Buffer.from(s!, 'base64url'));
  const publicKey = new Uint8Array(65);
  publicKey[0] = 0x04;
  publicKey.set(b(jwk.x), 1);
  publicKey.set(b(jwk.y), 33);
  return { secretKey: b(jwk.d), publicKey };
}

describe('ECDSA-P256: IEEE P1363 r‖s over SHA-256', () => {
  let priv: KeyObject;
  let pub: KeyObject;
  beforeAll(() => {
    const pair = generateKeyPairSync('ec', { namedCurve: 'prime256v1' });
    priv = importClassicalPrivateKey('ECDSA-P256', exportPkcs8Der(pair.privateKey));
    pub = importClassicalPublicKey('ECDSA-P256', exportSpkiDer(pair.publicKey));
  });

  it('node:crypto signatures are 64 bytes and verify with @noble/curves', () => {
    const noble = nobleKeysOf(priv);
    for (let i = 0; i < 5; i++) {
      const sig = signClassical('ECDSA-P256', priv, input);
      expect(sig.length).toBe(64);
      // node:crypto may emit high-S signatures; P1363 allows both, so lowS is relaxed here.
      expect(p256.verify(sig, input, noble.publicKey, { lowS: false })).toBe(true);
      expect(verifyClassical('ECDSA-P256', pub, input, sig)).toBe(true);
    }
  });

  it('@noble/curves signatures (RFC 6979, compact r‖s) verify through our node:crypto path', () => {
    const noble = nobleKeysOf(priv);
    const sig = p256.sign(input, noble.secretKey);
    expect(sig.length).toBe(64);
    expect(verifyClassical('ECDSA-P256', pub, input, sig)).toBe(true);
    const other = new Uint8Array(input);
    other[0] ^= 1;
    expect(verifyClassical('ECDSA-P256', pub, other, sig)).toBe(false);
  });

  it('refuses DER-encoded signatures and wrong lengths without throwing', () => {
    const der = nodeSign('sha256', input, { key: priv, dsaEncoding: 'der' });
    expect(verifyClassical('ECDSA-P256', pub, input, new Uint8Array(der))).toBe(false);
    expect(verifyClassical('ECDSA-P256', pub, input, new Uint8Array(63))).toBe(false);
    expect(verifyClassical('ECDSA-P256', pub, input, new Uint8Array(64))).toBe(false);
    expect(verifyClassical('ECDSA-P256', pub, input, new Uint8Array(0))).toBe(false);
  });

  it('refuses keys on another curve', () => {
    const p384 = generateKeyPairSync('ec', { namedCurve: 'secp384r1' });
    expect(() => importClassicalPublicKey('ECDSA-P256', exportSpkiDer(p384.publicKey))).toThrow(/P-256/);
  });
});

describe('RSA-PSS-SHA256: SHA-256, MGF1-SHA-256, salt 32', () => {
  let priv: KeyObject;
  let pub: KeyObject;
  beforeAll(() => {
    const pair = generateKeyPairSync('rsa', { modulusLength: 2048 });
    priv = importClassicalPrivateKey('RSA-PSS-SHA256', exportPkcs8Der(pair.privateKey));
    pub = importClassicalPublicKey('RSA-PSS-SHA256', exportSpkiDer(pair.publicKey));
  });

  it('signs with salt length 32 (checked by a verifier that demands exactly 32)', () => {
    const sig = signClassical('RSA-PSS-SHA256', priv, input);
    expect(sig.length).toBe(256);
    expect(verifyClassical('RSA-PSS-SHA256', pub, input, sig)).toBe(true);
  });

  it('refuses a PSS signature made with another salt length or SHA-1, and PKCS#1 v1.5', () => {
    const salt64 = nodeSign('sha256', input, { key: priv, padding: constants.RSA_PKCS1_PSS_PADDING, saltLength: 64 });
    expect(verifyClassical('RSA-PSS-SHA256', pub, input, new Uint8Array(salt64))).toBe(false);
    const sha1 = nodeSign('sha1', input, { key: priv, padding: constants.RSA_PKCS1_PSS_PADDING, saltLength: 32 });
    expect(verifyClassical('RSA-PSS-SHA256', pub, input, new Uint8Array(sha1))).toBe(false);
    const v15 = nodeSign('sha256', input, { key: priv, padding: constants.RSA_PKCS1_PADDING });
    expect(verifyClassical('RSA-PSS-SHA256', pub, input, new Uint8Array(v15))).toBe(false);
    expect(verifyClassical('RSA-PSS-SHA256', pub, input, new Uint8Array(255))).toBe(false);
  });

  it('refuses moduli below 2048 bits and non-RSA keys', () => {
    const small = generateKeyPairSync('rsa', { modulusLength: 1024 });
    expect(() => importClassicalPublicKey('RSA-PSS-SHA256', exportSpkiDer(small.publicKey))).toThrow(/at least 2048/);
    const ec = generateKeyPairSync('ec', { namedCurve: 'prime256v1' });
    expect(() => importClassicalPublicKey('RSA-PSS-SHA256', exportSpkiDer(ec.publicKey))).toThrow(/needs an RSA key/);
  });
});
