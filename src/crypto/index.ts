/**
 * ACS-Crypto: every ACS §10.1 signature algorithm behind one registry.
 *
 * How the request pipeline uses it:
 *
 *   import { createSignatureRegistry, envelopeSigningInput } from '../crypto/index.ts';
 *
 *   const registry = createSignatureRegistry({
 *     hmacIkm,                       // Uint8Array ≥ 16 bytes (or env GUARDIAN_HMAC_IKM, base64, with `env: process.env`)
 *     dir: '/etc/guardian/keys',     // optional: key files (docs/keys.md); or env GUARDIAN_KEY_DIR / GUARDIAN_KEYS
 *     env: process.env,              // optional
 *     agents: { 'agent-7': { algorithms: ['ML-DSA-65'] } },   // optional per-agent allow-lists
 *   });
 *   registry.supportedAlgorithms()   // → ServerHello `signature_algorithms_supported`
 *   registry.acsCryptoAvailable()    // → may `acs-crypto` go in `profiles_accepted`? (ML-DSA-65 signable + verifiable)
 *
 *   // Requests (ACS §10): input = JCS of the envelope without params.signature.
 *   const ok = await registry.verify(params.signature, envelopeSigningInput(envelope), { sessionId, agentId });
 *   //   never throws; false for missing/malformed/unknown key/unaccepted algorithm/bad signature → -32004
 *
 *   // Responses: sign the JCS of the response envelope without result.signature, then put the result at result.signature.
 *   result.signature = await registry.sign('HMAC-SHA256', envelopeSigningInput(response), { sessionId, keyId });
 *   //   keyId optional: default = HMAC key "default" / newest active key of the algorithm. Throws
 *   //   SignatureRegistryError when no such key exists, or it is retired / verify-only (a configuration error,
 *   //   not a client error); PqcPoolSaturatedError when the PQC pool already holds maxInFlight jobs.
 *
 *   // Audit checkpoints signed with ML-DSA-65 while responses use HMAC:
 *   const checkpointSigner = registry.signer('ML-DSA-65');   // types.ts Signer + Verifier, with .keyId
 *   const raw = await checkpointSigner.sign(bytes, { sessionId, keyId: checkpointSigner.keyId });
 *
 *   await registry.close();          // on shutdown: stops the PQC worker threads
 *
 * ML-DSA / SLH-DSA sign and verify run in a node:worker_threads pool, so the event loop never blocks on them.
 * Key files, rotation and the `guardian keys` commands are described in docs/keys.md.
 */
import { canonicalJson } from '../chain/index.ts';

export type { EnvelopeSignature, SignatureAlgorithm, Signer, SigningContext, Verifier } from './types.ts';
export { HmacSha256, deriveSessionKey } from './hmac-sha256.ts';
export {
  SIGNATURE_ALGORITHMS,
  isSignatureAlgorithm,
  isPqcAlgorithm,
  isHybridAlgorithm,
  isClassicalAlgorithm,
  hybridComponents,
  PQC_SIGNATURE_BYTES,
  PQC_PUBLIC_KEY_BYTES,
  ECDSA_P256_SIGNATURE_BYTES,
  RSA_PSS_SALT_BYTES,
  type PqcAlgorithm,
  type ClassicalAlgorithm,
  type HybridAlgorithm,
  type AsymmetricAlgorithm,
} from './algorithms.ts';
export { decodeBase64Strict, encodeBase64 } from './base64.ts';
export { encodeHybridSignature, decodeHybridSignature, type HybridParts } from './hybrid-encoding.ts';
export {
  createSignatureRegistry,
  SignatureRegistryError,
  type SignatureRegistry,
  type SignatureRegistryConfig,
  type AgentSignaturePolicy,
  type SignOptions,
  type VerifyOptions,
  type RegistrySigner,
} from './registry.ts';
export {
  Keyring,
  loadKeyring,
  loadKeyFile,
  readKeyDirectory,
  publicKeyFingerprint,
  type KeyringEntry,
  type KeyringEntrySummary,
  type KeyringSources,
} from './keyring.ts';
export {
  KEY_FILE_FORMAT,
  KeyFileError,
  generateKeyFile,
  parseKeyFile,
  publicPart,
  hasSecretMaterial,
  isValidKeyId,
  type KeyFileJson,
  type KeyStatus,
  type GenerateKeyOptions,
} from './key-files.ts';
export { writeKeyFiles, retireKeyFile, type WrittenKeyFiles } from './key-store.ts';
export { PqcWorkerPool, PqcPoolSaturatedError, defaultPoolSize, type PqcWorkerPoolOptions } from './worker-pool.ts';

/**
 * The ACS §10 signed input: RFC 8785 JCS of the whole envelope with the `signature` member removed from
 * `params`, `result` or `error` (wherever it sits), UTF-8 encoded. The envelope itself is not modified.
 */
export function envelopeSigningInput(envelope: unknown): Uint8Array {
  let copy = envelope;
  if (typeof envelope === 'object' && envelope !== null && !Array.isArray(envelope)) {
    const outer: Record<string, unknown> = { ...(envelope as Record<string, unknown>) };
    for (const member of ['params', 'result', 'error']) {
      const inner = outer[member];
      if (typeof inner === 'object' && inner !== null && !Array.isArray(inner) && 'signature' in inner) {
        const { signature: _omit, ...rest } = inner as Record<string, unknown>;
        outer[member] = rest;
      }
    }
    copy = outer;
  }
  return new Uint8Array(Buffer.from(canonicalJson(copy), 'utf8'));
}
