// The signature registry (ACS §10, §10.1, §10.2): maps an algorithm name + key_id to signing and verification.
// Verification resolves `key_id` through the keyring; a key is pinned to exactly one algorithm, so a signature
// cannot be re-labelled with another algorithm. verify() never throws: every malformed input is `false`.
import { HmacSha256 } from './hmac-sha256.ts';
import {
  isSignatureAlgorithm,
  PQC_PUBLIC_KEY_BYTES,
  PQC_SIGNATURE_BYTES,
  SIGNATURE_ALGORITHMS,
  type PqcAlgorithm,
} from './algorithms.ts';
import { decodeBase64Strict, encodeBase64 } from './base64.ts';
import { signClassical, verifyClassical } from './classical.ts';
import { decodeHybridSignature, encodeHybridSignature } from './hybrid-encoding.ts';
import { type Keyring, loadKeyring, type KeyringEntry, type KeyringSources } from './keyring.ts';
import { signPqc, verifyPqc } from './pqc.ts';
import type { EnvelopeSignature, SignatureAlgorithm, Signer, SigningContext, Verifier } from './types.ts';
import { PqcWorkerPool } from './worker-pool.ts';

/** Which algorithms (and optionally which key ids) one agent may sign its requests with. */
export interface AgentSignaturePolicy {
  algorithms?: readonly SignatureAlgorithm[];
  keyIds?: readonly string[];
}

export interface SignatureRegistryConfig extends KeyringSources {
  /** A ready keyring; when given, the KeyringSources fields are ignored. */
  keyring?: Keyring;
  /** Deployment-wide allow-list; default: every algorithm the keyring holds keys for. */
  acceptedAlgorithms?: readonly SignatureAlgorithm[];
  /** Per-agent allow-lists, keyed by `metadata.agent_id`. Agents not listed get the deployment-wide list. */
  agents?: Readonly<Record<string, AgentSignaturePolicy>>;
  /**
   * HMAC: accept a signature whose key_id names no keyring entry by deriving from the default HMAC IKM
   * (key id `hmacKeyId`, default "default"). Default true — conformance harnesses send "conformance",
   * "default" or the session id as key_id over one shared IKM (docs/keys.md); the pipeline binds key_id per session.
   */
  hmacAcceptAnyKeyId?: boolean;
  /** Run ML-DSA/SLH-DSA in worker threads (default true, size max(1, min(4, cores−1))); false = in-thread. */
  workerPool?: boolean | { size?: number; maxInFlight?: number };
}

export interface SignOptions {
  /** HMAC keys are derived per session (ACS §10). Required for HMAC; ignored by asymmetric algorithms. */
  sessionId: string;
  /** Key to sign with; default the newest active signing key of the algorithm (or the HMAC default key). */
  keyId?: string;
}

export interface VerifyOptions {
  sessionId: string;
  /** `metadata.agent_id` of the envelope: applies the per-agent allow-list and agent-bound keys. */
  agentId?: string;
}

/** A checkpoint / response signer bound to one algorithm and key (types.ts Signer + Verifier). */
export interface RegistrySigner extends Signer, Verifier {
  readonly keyId: string;
}

export interface SignatureRegistry {
  /** Algorithms this Guardian can verify (has keys for, and accepts): advertise as `signature_algorithms_supported`. */
  supportedAlgorithms(): SignatureAlgorithm[];
  /** Algorithms this Guardian can sign with (holds a private key / IKM for). */
  signingAlgorithms(): SignatureAlgorithm[];
  /** Algorithms `agentId` may sign requests with (deployment list ∩ agent policy). */
  acceptedAlgorithms(agentId?: string): SignatureAlgorithm[];
  /** Signs the canonical input; the returned key_id is the key actually used (recorded with every signature). */
  sign(algorithm: SignatureAlgorithm, input: Uint8Array | string, options: SignOptions): Promise<EnvelopeSignature>;
  /** True only for a well-formed, accepted signature that verifies. Never throws, never rejects. */
  verify(signature: unknown, input: Uint8Array | string, options: VerifyOptions): Promise<boolean>;
  /** A Signer for audit checkpoints or responses (e.g. ML-DSA-65 checkpoints while responses use HMAC). */
  signer(algorithm: SignatureAlgorithm, keyId?: string): RegistrySigner;
  /** True when the `acs-crypto` profile may be put in `profiles_accepted`: ML-DSA-65 can be both signed and verified. */
  acsCryptoAvailable(): boolean;
  readonly keyring: Keyring;
  /** Stops the worker threads (pending PQC jobs reject). Call on shutdown and in tests. */
  close(): Promise<void>;
}

/** Error for sign() misuse (unknown algorithm, no key, key of another algorithm). Messages carry no secrets. */
export class SignatureRegistryError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'SignatureRegistryError';
  }
}

function toBytes(input: Uint8Array | string): Uint8Array {
  return typeof input === 'string' ? new Uint8Array(Buffer.from(input, 'utf8')) : input;
}

export function createSignatureRegistry(config: SignatureRegistryConfig = {}): SignatureRegistry {
  const keyring = config.keyring ?? loadKeyring(config);
  const hmacDefaultKeyId = config.hmacKeyId ?? 'default';
  const hmacAcceptAny = config.hmacAcceptAnyKeyId ?? true;
  const poolSetting = config.workerPool ?? true;
  const pool = poolSetting === false ? null : new PqcWorkerPool(poolSetting === true ? {} : poolSetting);
  const hmacByKey = new Map<string, HmacSha256>();
  const accepted = config.acceptedAlgorithms ? new Set<string>(config.acceptedAlgorithms) : null;
  for (const a of config.acceptedAlgorithms ?? []) {
    if (!isSignatureAlgorithm(a))
      throw new SignatureRegistryError(`acceptedAlgorithms: unknown algorithm ${JSON.stringify(a)}`);
  }

  const hmacFor = (entry: KeyringEntry): HmacSha256 => {
    let h = hmacByKey.get(entry.keyId);
    if (!h && entry.material.kind === 'hmac') {
      h = new HmacSha256(entry.material.ikm);
      hmacByKey.set(entry.keyId, h);
    }
    if (!h) throw new SignatureRegistryError(`key "${entry.keyId}" is not an HMAC key`);
    return h;
  };

  const pqcSign = (alg: PqcAlgorithm, key: Uint8Array, input: Uint8Array): Promise<Uint8Array> =>
    pool ? pool.sign(alg, key, input) : Promise.resolve(signPqc(alg, key, input));
  const pqcVerify = async (
    alg: PqcAlgorithm,
    key: Uint8Array,
    input: Uint8Array,
    sig: Uint8Array,
  ): Promise<boolean> => {
    // Cheap length checks before a thread hop; verifyPqc repeats them in-thread.
    if (!pool) return verifyPqc(alg, key, input, sig);
    if (sig.length !== PQC_SIGNATURE_BYTES[alg] || key.length !== PQC_PUBLIC_KEY_BYTES[alg]) return false;
    try {
      return await pool.verify(alg, key, input, sig);
    } catch {
      // Pool saturated or a worker died: verify here rather than refuse a valid signature (verification costs
      // milliseconds, unlike SLH-DSA signing, so briefly blocking beats a spurious SIGNATURE_INVALID).
      return verifyPqc(alg, key, input, sig);
    }
  };

  const verifiable = (alg: SignatureAlgorithm): boolean => keyring.entries().some((e) => e.algorithm === alg);
  const signable = (alg: SignatureAlgorithm): boolean =>
    keyring.entries().some((e) => e.algorithm === alg && e.canSign && e.status === 'active');

  // verify() consults the accepted list on every request: cache it per agent until the keyring changes.
  const acceptedCache = new Map<string | undefined, SignatureAlgorithm[]>();
  let cachedVersion = -1;
  const acceptedAlgorithms = (agentId?: string): SignatureAlgorithm[] => {
    if (cachedVersion !== keyring.version) {
      acceptedCache.clear();
      cachedVersion = keyring.version;
    }
    const policy = agentId !== undefined ? config.agents?.[agentId] : undefined;
    const cacheKey = policy ? agentId : undefined;
    let list = acceptedCache.get(cacheKey);
    if (!list) {
      list = SIGNATURE_ALGORITHMS.filter(
        (a) =>
          verifiable(a) && (!accepted || accepted.has(a)) && (!policy?.algorithms || policy.algorithms.includes(a)),
      );
      acceptedCache.set(cacheKey, list);
    }
    return [...list];
  };

  const resolveSigningKey = (algorithm: SignatureAlgorithm, keyId: string | undefined): KeyringEntry => {
    if (!isSignatureAlgorithm(algorithm))
      throw new SignatureRegistryError(`unknown signature algorithm ${JSON.stringify(algorithm)}`);
    const entry =
      keyId !== undefined
        ? keyring.get(keyId)
        : algorithm === 'HMAC-SHA256'
          ? (keyring.get(hmacDefaultKeyId) ?? keyring.activeSigningKey(algorithm))
          : keyring.activeSigningKey(algorithm);
    if (!entry)
      throw new SignatureRegistryError(
        keyId !== undefined ? `no key with key_id "${keyId}"` : `no active signing key for ${algorithm}`,
      );
    if (entry.algorithm !== algorithm)
      throw new SignatureRegistryError(`key "${entry.keyId}" is a ${entry.algorithm} key, not ${algorithm}`);
    if (!entry.canSign)
      throw new SignatureRegistryError(`key "${entry.keyId}" has no private material (verification only)`);
    if (entry.status !== 'active')
      throw new SignatureRegistryError(`key "${entry.keyId}" is retired (verification only)`);
    return entry;
  };

  // HMAC takes a canonical text as it is (hashed as UTF-8); the other algorithms get its bytes.
  const signRaw = async (entry: KeyringEntry, text: Uint8Array | string, sessionId: string): Promise<Uint8Array> => {
    const m = entry.material;
    if (m.kind === 'hmac') {
      if (typeof sessionId !== 'string' || sessionId === '')
        throw new SignatureRegistryError('HMAC-SHA256 signing needs a sessionId');
      return hmacFor(entry).signSync(text, { sessionId, keyId: entry.keyId });
    }
    const input = toBytes(text);
    switch (m.kind) {
      case 'classical':
        return signClassical(m.algorithm, m.privateKey!, input);
      case 'pqc':
        return pqcSign(m.algorithm, m.signingKey!, input);
      case 'hybrid': {
        // ACS §10.2: both halves over the same canonical input; PQC in the pool while the classical half runs here.
        const pqc = pqcSign(m.pqc.algorithm, m.pqc.signingKey!, input);
        const classical = signClassical(m.classical.algorithm, m.classical.privateKey!, input);
        return encodeHybridSignature({ pqc: await pqc, classical });
      }
    }
  };

  const verifyRaw = async (
    entry: KeyringEntry,
    text: Uint8Array | string,
    sig: Uint8Array,
    sessionId: string,
  ): Promise<boolean> => {
    const m = entry.material;
    if (m.kind === 'hmac') {
      if (typeof sessionId !== 'string' || sessionId === '') return false;
      return hmacFor(entry).verify(text, sig, { sessionId, keyId: entry.keyId });
    }
    const input = toBytes(text);
    switch (m.kind) {
      case 'classical':
        return verifyClassical(m.algorithm, m.publicKey, input, sig);
      case 'pqc':
        return pqcVerify(m.algorithm, m.publicKey, input, sig);
      case 'hybrid': {
        const parts = decodeHybridSignature(sig);
        if (!parts) return false;
        // Both halves MUST verify (ACS §10.2); the classical one is cheap, so check it first.
        if (!verifyClassical(m.classical.algorithm, m.classical.publicKey, input, parts.classical)) return false;
        return pqcVerify(m.pqc.algorithm, m.pqc.publicKey, input, parts.pqc);
      }
    }
  };

  const verify = async (signature: unknown, input: Uint8Array | string, options: VerifyOptions): Promise<boolean> => {
    try {
      if (typeof signature !== 'object' || signature === null || Array.isArray(signature)) return false;
      const { algorithm, value, key_id: keyId } = signature as Record<string, unknown>;
      if (!isSignatureAlgorithm(algorithm) || typeof keyId !== 'string' || keyId === '') return false;
      if (typeof input !== 'string' && !(input instanceof Uint8Array)) return false;
      const agentId = options?.agentId;
      if (!acceptedAlgorithms(agentId).includes(algorithm)) return false;
      const sig = decodeBase64Strict(value);
      if (!sig) return false;
      let entry = keyring.get(keyId);
      if (!entry && algorithm === 'HMAC-SHA256' && hmacAcceptAny) entry = keyring.get(hmacDefaultKeyId);
      if (!entry || entry.algorithm !== algorithm) return false;
      // An agent-bound key verifies only that agent's envelopes; an agent key allow-list narrows further.
      if (entry.agentId !== undefined && entry.agentId !== agentId) return false;
      const policy = agentId !== undefined ? config.agents?.[agentId] : undefined;
      if (policy?.keyIds && !policy.keyIds.includes(keyId)) return false;
      return await verifyRaw(entry, input, sig, options?.sessionId);
    } catch {
      return false;
    }
  };

  const sign = async (
    algorithm: SignatureAlgorithm,
    input: Uint8Array | string,
    options: SignOptions,
  ): Promise<EnvelopeSignature> => {
    const entry = resolveSigningKey(algorithm, options?.keyId);
    const raw = await signRaw(entry, input, options?.sessionId);
    // Members in JCS order: the signed answer that carries this object is canonicalised without re-sorting it.
    return { algorithm, key_id: entry.keyId, value: encodeBase64(raw) };
  };

  return {
    keyring,
    supportedAlgorithms: () => acceptedAlgorithms(),
    signingAlgorithms: () => SIGNATURE_ALGORITHMS.filter(signable),
    acceptedAlgorithms,
    sign,
    verify,
    signer(algorithm: SignatureAlgorithm, keyId?: string): RegistrySigner {
      const entry = resolveSigningKey(algorithm, keyId);
      return {
        algorithm,
        keyId: entry.keyId,
        sign: (input: Uint8Array, ctx: SigningContext) => signRaw(entry, input, ctx.sessionId),
        verify: async (input: Uint8Array, signature: Uint8Array, ctx: SigningContext) => {
          try {
            return await verifyRaw(entry, input, signature, ctx.sessionId);
          } catch {
            return false;
          }
        },
      };
    },
    acsCryptoAvailable: () => signable('ML-DSA-65') && acceptedAlgorithms().includes('ML-DSA-65'),
    close: async () => {
      await pool?.close();
    },
  };
}
