// ML-DSA (FIPS 204) and SLH-DSA (FIPS 205) through @noble/post-quantum, in the calling thread. The registry runs
// these inside the worker pool (pq-worker.ts runs this module in the worker threads); this module is used for key
// generation, key loading and as the in-thread fallback when the pool is disabled.
// Pure ML-DSA / SLH-DSA with an empty context string; signing is hedged (fresh randomness), which FIPS 204 §3.4 prefers.
import { ml_dsa44, ml_dsa65, ml_dsa87 } from '@noble/post-quantum/ml-dsa.js';
import { slh_dsa_sha2_128f, slh_dsa_sha2_128s } from '@noble/post-quantum/slh-dsa.js';
import { PQC_PRIVATE_KEY_BYTES, PQC_PUBLIC_KEY_BYTES, PQC_SIGNATURE_BYTES, type PqcAlgorithm } from './algorithms.ts';

interface NobleSigner {
  keygen(seed?: Uint8Array): { secretKey: Uint8Array; publicKey: Uint8Array };
  getPublicKey(secretKey: Uint8Array): Uint8Array;
  sign(msg: Uint8Array, secretKey: Uint8Array): Uint8Array;
  verify(sig: Uint8Array, msg: Uint8Array, publicKey: Uint8Array): boolean;
  lengths: { seed?: number };
}

const NOBLE: Record<PqcAlgorithm, NobleSigner> = {
  'ML-DSA-44': ml_dsa44 as unknown as NobleSigner,
  'ML-DSA-65': ml_dsa65 as unknown as NobleSigner,
  'ML-DSA-87': ml_dsa87 as unknown as NobleSigner,
  'SLH-DSA-128s': slh_dsa_sha2_128s as unknown as NobleSigner,
  'SLH-DSA-128f': slh_dsa_sha2_128f as unknown as NobleSigner,
};

/** A PQC key pair in the forms the registry uses: `signingKey` is what noble's sign() takes. */
export interface PqcKeyPair {
  /** What key files store (ML-DSA: 32-byte seed ξ; SLH-DSA: 64-byte secret key). */
  privateKey: Uint8Array;
  publicKey: Uint8Array;
  /** Expanded secret key for signing (ML-DSA: 2560/4032/4896 bytes; SLH-DSA: = privateKey). */
  signingKey: Uint8Array;
}

export function isMlDsa(algorithm: PqcAlgorithm): boolean {
  return algorithm.startsWith('ML-DSA');
}

/** Generates a key pair; `seed` (ML-DSA: 32 bytes, SLH-DSA: 48 bytes) makes it deterministic. */
export function generatePqcKeyPair(algorithm: PqcAlgorithm, seed?: Uint8Array): PqcKeyPair {
  const noble = NOBLE[algorithm];
  if (isMlDsa(algorithm)) {
    const xi = seed ?? crypto.getRandomValues(new Uint8Array(32));
    if (xi.length !== 32) throw new Error(`${algorithm} key-generation seed must be 32 bytes`);
    const { secretKey, publicKey } = noble.keygen(xi);
    return { privateKey: Uint8Array.from(xi), publicKey, signingKey: secretKey };
  }
  if (seed && seed.length !== noble.lengths.seed)
    throw new Error(`${algorithm} key-generation seed must be ${noble.lengths.seed} bytes`);
  const { secretKey, publicKey } = noble.keygen(seed);
  return { privateKey: secretKey, publicKey, signingKey: secretKey };
}

/** Rebuilds the signing key from stored private material and checks it matches the stored public key. */
export function loadPqcPrivateKey(
  algorithm: PqcAlgorithm,
  privateKey: Uint8Array,
  expectedPublicKey?: Uint8Array,
): PqcKeyPair {
  if (privateKey.length !== PQC_PRIVATE_KEY_BYTES[algorithm]) {
    throw new Error(
      `${algorithm} private key must be ${PQC_PRIVATE_KEY_BYTES[algorithm]} bytes, got ${privateKey.length}`,
    );
  }
  const noble = NOBLE[algorithm];
  let pair: PqcKeyPair;
  if (isMlDsa(algorithm)) {
    const { secretKey, publicKey } = noble.keygen(privateKey);
    pair = { privateKey, publicKey, signingKey: secretKey };
  } else {
    pair = { privateKey, publicKey: noble.getPublicKey(privateKey), signingKey: privateKey };
  }
  if (expectedPublicKey && !bytesEqual(expectedPublicKey, pair.publicKey)) {
    throw new Error(`${algorithm} private key does not match the public key stored with it`);
  }
  return pair;
}

export function checkPqcPublicKey(algorithm: PqcAlgorithm, publicKey: Uint8Array): void {
  if (publicKey.length !== PQC_PUBLIC_KEY_BYTES[algorithm]) {
    throw new Error(
      `${algorithm} public key must be ${PQC_PUBLIC_KEY_BYTES[algorithm]} bytes, got ${publicKey.length}`,
    );
  }
}

export function signPqc(algorithm: PqcAlgorithm, signingKey: Uint8Array, input: Uint8Array): Uint8Array {
  return NOBLE[algorithm].sign(input, signingKey);
}

/** Never throws: wrong lengths and anything noble rejects are a failed verification. */
export function verifyPqc(
  algorithm: PqcAlgorithm,
  publicKey: Uint8Array,
  input: Uint8Array,
  signature: Uint8Array,
): boolean {
  if (signature.length !== PQC_SIGNATURE_BYTES[algorithm] || publicKey.length !== PQC_PUBLIC_KEY_BYTES[algorithm])
    return false;
  try {
    return NOBLE[algorithm].verify(signature, input, publicKey) === true;
  } catch {
    return false;
  }
}

function bytesEqual(a: Uint8Array, b: Uint8Array): boolean {
  return a.length === b.length && a.every((x, i) => x === b[i]);
}
