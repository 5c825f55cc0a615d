// The ACS §10.1 algorithm registry as data: which names exist, what family each belongs to, and the exact
// signature lengths a verifier checks before doing any work (a wrong length is a failed verify, never a throw).
import type { SignatureAlgorithm } from './types.ts';

/** Every ACS §10.1 registry name, in the order the spec's table lists them. */
export const SIGNATURE_ALGORITHMS: readonly SignatureAlgorithm[] = [
  'HMAC-SHA256',
  'ECDSA-P256',
  'RSA-PSS-SHA256',
  'ML-DSA-65',
  'ML-DSA-44',
  'ML-DSA-87',
  'SLH-DSA-128s',
  'SLH-DSA-128f',
  'ML-DSA-65+ECDSA-P256',
  'ML-DSA-65+RSA-PSS-SHA256',
];

/** Single (non-hybrid) asymmetric algorithms computed in-process with node:crypto. */
export type ClassicalAlgorithm = 'ECDSA-P256' | 'RSA-PSS-SHA256';
/** Post-quantum algorithms computed with @noble/post-quantum (off the event loop, see worker-pool.ts). */
export type PqcAlgorithm = 'ML-DSA-44' | 'ML-DSA-65' | 'ML-DSA-87' | 'SLH-DSA-128s' | 'SLH-DSA-128f';
/** ACS §10.2 composites `<PQC>+<CLASSICAL>`. */
export type HybridAlgorithm = 'ML-DSA-65+ECDSA-P256' | 'ML-DSA-65+RSA-PSS-SHA256';
/** Every algorithm that needs a key pair (all but HMAC). */
export type AsymmetricAlgorithm = ClassicalAlgorithm | PqcAlgorithm | HybridAlgorithm;

export function isSignatureAlgorithm(name: unknown): name is SignatureAlgorithm {
  return typeof name === 'string' && (SIGNATURE_ALGORITHMS as readonly string[]).includes(name);
}
export function isClassicalAlgorithm(name: string): name is ClassicalAlgorithm {
  return name === 'ECDSA-P256' || name === 'RSA-PSS-SHA256';
}
export function isPqcAlgorithm(name: string): name is PqcAlgorithm {
  return name in PQC_SIGNATURE_BYTES;
}
export function isHybridAlgorithm(name: string): name is HybridAlgorithm {
  return name === 'ML-DSA-65+ECDSA-P256' || name === 'ML-DSA-65+RSA-PSS-SHA256';
}

/** The two halves of a hybrid, in wire order (PQC first, ACS §10.2). */
export function hybridComponents(algorithm: HybridAlgorithm): { pqc: 'ML-DSA-65'; classical: ClassicalAlgorithm } {
  return { pqc: 'ML-DSA-65', classical: algorithm === 'ML-DSA-65+ECDSA-P256' ? 'ECDSA-P256' : 'RSA-PSS-SHA256' };
}

/**
 * Exact signature sizes (FIPS 204 Table 2, FIPS 205 Table 2). SLH-DSA here is the SHA2 instantiation
 * (SLH-DSA-SHA2-128s / -128f): the ACS name does not say which hash, and SHA2 is the faster one in pure JS.
 */
export const PQC_SIGNATURE_BYTES: Readonly<Record<PqcAlgorithm, number>> = {
  'ML-DSA-44': 2420,
  'ML-DSA-65': 3309,
  'ML-DSA-87': 4627,
  'SLH-DSA-128s': 7856,
  'SLH-DSA-128f': 17088,
};

/** Raw public key sizes (FIPS 204 / FIPS 205 encodings). */
export const PQC_PUBLIC_KEY_BYTES: Readonly<Record<PqcAlgorithm, number>> = {
  'ML-DSA-44': 1312,
  'ML-DSA-65': 1952,
  'ML-DSA-87': 2592,
  'SLH-DSA-128s': 32,
  'SLH-DSA-128f': 32,
};

/**
 * Private key material as stored in key files: ML-DSA keeps the 32-byte FIPS 204 key-generation seed ξ
 * (the expanded secret key is re-derived at load); SLH-DSA keeps its 64-byte secret key (SK.seed‖SK.prf‖PK.seed‖PK.root).
 */
export const PQC_PRIVATE_KEY_BYTES: Readonly<Record<PqcAlgorithm, number>> = {
  'ML-DSA-44': 32,
  'ML-DSA-65': 32,
  'ML-DSA-87': 32,
  'SLH-DSA-128s': 64,
  'SLH-DSA-128f': 64,
};

/** ECDSA-P256 signatures are IEEE P1363 `r‖s`, 32 bytes each. */
export const ECDSA_P256_SIGNATURE_BYTES = 64;
/** RSA-PSS salt length in bytes (= SHA-256 output length). */
export const RSA_PSS_SALT_BYTES = 32;
/** Smallest RSA modulus accepted for signing or verification. */
export const RSA_MIN_MODULUS_BITS = 2048;
