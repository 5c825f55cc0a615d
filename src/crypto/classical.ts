// ECDSA-P256 and RSA-PSS-SHA256 through node:crypto (ACS §10.1). Encodings are pinned here and in docs/keys.md:
// - ECDSA-P256: ECDSA over SHA-256 on prime256v1, signature = IEEE P1363 r‖s (exactly 64 bytes, no DER).
// - RSA-PSS-SHA256: RSASSA-PSS (RFC 8017) with SHA-256, MGF1-SHA-256, salt length 32; modulus ≥ 2048 bits.
import {
  constants,
  createPrivateKey,
  createPublicKey,
  sign as nodeSign,
  verify as nodeVerify,
  type KeyObject,
} from 'node:crypto';
import {
  ECDSA_P256_SIGNATURE_BYTES,
  RSA_MIN_MODULUS_BITS,
  RSA_PSS_SALT_BYTES,
  type ClassicalAlgorithm,
} from './algorithms.ts';

/** Imports an SPKI (DER) public key and checks it fits the algorithm (curve / RSA size). */
export function importClassicalPublicKey(algorithm: ClassicalAlgorithm, spkiDer: Uint8Array): KeyObject {
  const key = createPublicKey({ key: Buffer.from(spkiDer), format: 'der', type: 'spki' });
  assertKeyFits(algorithm, key);
  return key;
}

/** Imports a PKCS#8 (DER) private key and checks it fits the algorithm. */
export function importClassicalPrivateKey(algorithm: ClassicalAlgorithm, pkcs8Der: Uint8Array): KeyObject {
  const key = createPrivateKey({ key: Buffer.from(pkcs8Der), format: 'der', type: 'pkcs8' });
  assertKeyFits(algorithm, key);
  return key;
}

function assertKeyFits(algorithm: ClassicalAlgorithm, key: KeyObject): void {
  const details = key.asymmetricKeyDetails ?? {};
  if (algorithm === 'ECDSA-P256') {
    if (key.asymmetricKeyType !== 'ec' || details.namedCurve !== 'prime256v1') {
      throw new Error(
        `ECDSA-P256 needs a P-256 (prime256v1) EC key, got ${key.asymmetricKeyType ?? 'unknown'} ${details.namedCurve ?? ''}`.trim(),
      );
    }
    return;
  }
  // RSA-PSS-SHA256 accepts plain "rsa" keys and "rsa-pss" keys; the PSS parameters are fixed at sign/verify time.
  if (key.asymmetricKeyType !== 'rsa' && key.asymmetricKeyType !== 'rsa-pss') {
    throw new Error(`RSA-PSS-SHA256 needs an RSA key, got ${key.asymmetricKeyType ?? 'unknown'}`);
  }
  if ((details.modulusLength ?? 0) < RSA_MIN_MODULUS_BITS) {
    throw new Error(
      `RSA-PSS-SHA256 needs a modulus of at least ${RSA_MIN_MODULUS_BITS} bits, got ${details.modulusLength ?? 0}`,
    );
  }
}

export function exportSpkiDer(key: KeyObject): Uint8Array {
  return new Uint8Array(key.export({ format: 'der', type: 'spki' }));
}
export function exportPkcs8Der(key: KeyObject): Uint8Array {
  return new Uint8Array(key.export({ format: 'der', type: 'pkcs8' }));
}

export function signClassical(algorithm: ClassicalAlgorithm, privateKey: KeyObject, input: Uint8Array): Uint8Array {
  if (algorithm === 'ECDSA-P256') {
    return new Uint8Array(nodeSign('sha256', input, { key: privateKey, dsaEncoding: 'ieee-p1363' }));
  }
  return new Uint8Array(
    nodeSign('sha256', input, {
      key: privateKey,
      padding: constants.RSA_PKCS1_PSS_PADDING,
      saltLength: RSA_PSS_SALT_BYTES,
    }),
  );
}

/** Never throws: wrong lengths or a signature node:crypto cannot parse are a failed verification. */
export function verifyClassical(
  algorithm: ClassicalAlgorithm,
  publicKey: KeyObject,
  input: Uint8Array,
  signature: Uint8Array,
): boolean {
  try {
    if (algorithm === 'ECDSA-P256') {
      if (signature.length !== ECDSA_P256_SIGNATURE_BYTES) return false;
      return nodeVerify('sha256', input, { key: publicKey, dsaEncoding: 'ieee-p1363' }, signature);
    }
    const modulusBytes = Math.ceil((publicKey.asymmetricKeyDetails?.modulusLength ?? 0) / 8);
    if (signature.length !== modulusBytes) return false;
    return nodeVerify(
      'sha256',
      input,
      { key: publicKey, padding: constants.RSA_PKCS1_PSS_PADDING, saltLength: RSA_PSS_SALT_BYTES },
      signature,
    );
  } catch {
    return false;
  }
}
