// Envelope signatures (ACS §10, §10.1). The canonical input is the RFC 8785 JCS text of the *entire* envelope with
// the one `signature` member removed (params.signature on requests, result.signature / error.signature on
// answers), UTF-8 encoded. Algorithms come from a registry keyed by the §10.1 name so asymmetric and PQC
// suites (src/crypto/) plug in without touching the pipeline.
import { canonicalJson, canonicalJsonWithout } from '../../chain/index.ts';
import { HmacSha256 } from '../../crypto/hmac-sha256.ts';
import type { EnvelopeSignature, SignatureAlgorithm, SigningContext } from '../../crypto/types.ts';

/**
 * What the pipeline needs for envelope signatures. `createSignatureRegistry()` from src/crypto (every §10.1
 * algorithm, key files, per-agent allow-lists) is adapted by `cryptoEnvelopeSignatures`; the interface is kept
 * this small so the pipeline never depends on key management.
 */
export interface EnvelopeSignatures {
  /** Advertised in ServerHello.signature_algorithms_supported: only what is verified. */
  supportedAlgorithms(): string[];
  /** True only for a well-formed, accepted signature that verifies over `input` (bytes, or text as UTF-8). Never throws. */
  verify(
    signature: unknown,
    input: Uint8Array | string,
    ctx: { sessionId: string; agentId?: string },
  ): Promise<boolean>;
  /**
   * Signs an answer for the session; `keyId` is the request's key_id, echoed on the answer (docs/conformance.md, interop choices), and
   * `algorithm` the request's algorithm, so an answer can be signed the way the request was (§10).
   */
  sign(input: Uint8Array | string, ctx: AnswerSigningContext): Promise<EnvelopeSignature>;
}

/** Whom an answer is signed for: the session, the request's key_id and (when known) the request's algorithm. */
export interface AnswerSigningContext extends SigningContext {
  algorithm?: string;
}

/** The crypto registry's shape (src/crypto/registry.ts), structurally. */
export interface CryptoSignatureRegistry {
  supportedAlgorithms(): SignatureAlgorithm[];
  verify(
    signature: unknown,
    input: Uint8Array | string,
    options: { sessionId: string; agentId?: string },
  ): Promise<boolean>;
  sign(
    algorithm: SignatureAlgorithm,
    input: Uint8Array | string,
    options: { sessionId: string; keyId?: string },
  ): Promise<EnvelopeSignature>;
  /** Algorithms the registry holds signing material for. */
  signingAlgorithms?(): SignatureAlgorithm[];
}

/**
 * Adapts the crypto registry. Answers are signed with `algorithm` when given; otherwise with the request's
 * algorithm when the registry can sign with it (an ML-DSA-65 session is answered in ML-DSA-65, acs-crypto), else
 * the HMAC-SHA256 baseline. The key is the request's key_id when the keyring holds its private part; otherwise
 * the default key for the algorithm. For HMAC the key is derived from the IKM and session_id whatever the key_id
 * (docs/conformance.md, interop choices), and key_id is outside the signed input, so the request's key_id is echoed.
 */
export function cryptoEnvelopeSignatures(
  registry: CryptoSignatureRegistry,
  fixedAlgorithm?: SignatureAlgorithm,
): EnvelopeSignatures {
  // The registry's signing set only changes with its keyring; read it per answer (cheap: a filter over keys).
  const answerAlgorithm = (requested: string | undefined): SignatureAlgorithm => {
    if (fixedAlgorithm) return fixedAlgorithm;
    const signable = registry.signingAlgorithms?.() ?? [];
    return requested !== undefined && (signable as string[]).includes(requested)
      ? (requested as SignatureAlgorithm)
      : 'HMAC-SHA256';
  };
  return {
    supportedAlgorithms: () => registry.supportedAlgorithms(),
    verify: (signature, input, ctx) => registry.verify(signature, input, ctx),
    async sign(input, ctx) {
      const algorithm = answerAlgorithm(ctx.algorithm);
      try {
        return await registry.sign(algorithm, input, { sessionId: ctx.sessionId, keyId: ctx.keyId });
      } catch {
        const sig = await registry.sign(algorithm, input, { sessionId: ctx.sessionId });
        return algorithm === 'HMAC-SHA256' ? { algorithm: sig.algorithm, key_id: ctx.keyId, value: sig.value } : sig;
      }
    },
  };
}

/** HMAC-SHA256 only, straight from an IKM (the ACS-Core baseline; used where no keyring is configured). */
export function hmacEnvelopeSignatures(ikm: Uint8Array): EnvelopeSignatures {
  const hmac = new HmacSha256(ikm);
  return {
    supportedAlgorithms: () => ['HMAC-SHA256'],
    async verify(signature, input, ctx) {
      const sig = signature as Record<string, unknown> | null;
      if (sig === null || typeof sig !== 'object' || sig.algorithm !== 'HMAC-SHA256' || typeof sig.key_id !== 'string')
        return false;
      const bytes = decodeSignatureValue(sig.value);
      return bytes !== null && hmac.verify(input, bytes, { sessionId: ctx.sessionId, keyId: sig.key_id });
    },
    async sign(input, ctx) {
      const bytes = await hmac.sign(input, ctx);
      return { algorithm: 'HMAC-SHA256', key_id: ctx.keyId, value: Buffer.from(bytes).toString('base64') };
    },
  };
}

export type SignatureLocation = 'params' | 'result' | 'error';

const utf8 = new TextEncoder();

/**
 * JCS(envelope minus `<location>.signature`) as text (signers hash its UTF-8), and `memberWith(signature)`: the JCS of the
 * `<location>` member with that signature, built from the same canonicalisation (the request's params as the
 * chain hashes them, the answer's result as the store keeps it). Throws when the envelope cannot be canonicalised.
 */
export function signingText(
  envelope: Record<string, unknown>,
  location: SignatureLocation,
): { input: string; memberWith(signature: unknown): string } {
  const member = envelope[location];
  // Methods, not arrow functions: tsx (esbuild keepNames) wraps every arrow assigned to a property in a
  // `__name` call (an Object.defineProperty per call), on every signature check and answer.
  if (member === null || typeof member !== 'object' || Array.isArray(member)) {
    return {
      input: canonicalJson(envelope),
      memberWith() {
        throw new TypeError(`${location} is not an object`);
      },
    };
  }
  const split = canonicalJsonWithout(member as Record<string, unknown>, 'signature');
  // The envelope is the member's text in the member's place among the envelope's other (small) members.
  const outer = canonicalJsonWithout(envelope, location);
  const text = outer.withMemberText(split.text);
  return {
    input: text,
    memberWith(signature) {
      return split.withMember(signature);
    },
  };
}

/** JCS(envelope minus `<location>.signature`) as UTF-8 bytes. Throws when the envelope cannot be canonicalised. */
export function signingInput(envelope: Record<string, unknown>, location: SignatureLocation): Uint8Array {
  return utf8.encode(signingText(envelope, location).input);
}

const STRICT_BASE64 = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/;
// The same with the padding bits zero: the last digit before `==` carries 2 data bits (A, Q, g, w), before `=` 4.
const CANONICAL_BASE64 = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/][AQgw]==|[A-Za-z0-9+/]{2}[AEIMQUYcgkosw048]=)?$/;

/** Standard padded base64 only; anything else (URL alphabet, whitespace, non-canonical bits) is null. */
export function decodeSignatureValue(value: unknown): Uint8Array | null {
  if (typeof value !== 'string' || value.length === 0 || !STRICT_BASE64.test(value)) return null;
  const bytes = Buffer.from(value, 'base64');
  if (bytes.toString('base64') !== value) return null;
  return new Uint8Array(bytes);
}

/** `decodeSignatureValue(value) !== null` without decoding (the pipeline's shape check needs no bytes). */
export function isSignatureValue(value: unknown): value is string {
  return typeof value === 'string' && value.length > 0 && CANONICAL_BASE64.test(value);
}

/** `memberJcs`: JCS of the signed member as received, signature included (a request's params: request_hash). */
export type VerifyOutcome =
  | { ok: true; signature: EnvelopeSignature; memberJcs: string }
  | { ok: false; reason: string; message: string };

/** Verifies the signature found at `<location>.signature`, with a precise reason on failure. Never throws. */
export async function verifyEnvelope(
  signatures: EnvelopeSignatures,
  envelope: Record<string, unknown>,
  location: SignatureLocation,
  ctx: { sessionId: string; agentId?: string },
): Promise<VerifyOutcome> {
  const member = envelope[location] as Record<string, unknown> | undefined;
  const sig = member?.signature as Record<string, unknown> | undefined;
  if (sig === undefined)
    return {
      ok: false,
      reason: 'signature_missing',
      message: 'a signature is required on every ACS-Core request (§10)',
    };
  if (
    sig === null ||
    typeof sig !== 'object' ||
    typeof sig.algorithm !== 'string' ||
    typeof sig.key_id !== 'string' ||
    typeof sig.value !== 'string'
  ) {
    return {
      ok: false,
      reason: 'signature_malformed',
      message: 'signature must be {algorithm, value, key_id} strings',
    };
  }
  if (!signatures.supportedAlgorithms().includes(sig.algorithm)) {
    return {
      ok: false,
      reason: 'algorithm_unsupported',
      message: `signature algorithm ${sig.algorithm} is not accepted here`,
    };
  }
  if (!isSignatureValue(sig.value))
    return { ok: false, reason: 'signature_malformed', message: 'signature value is not standard padded base64' };
  let signed: ReturnType<typeof signingText>;
  try {
    signed = signingText(envelope, location);
  } catch {
    return { ok: false, reason: 'not_canonicalizable', message: 'the envelope cannot be canonicalised (RFC 8785)' };
  }
  let valid = false;
  try {
    valid = await signatures.verify(sig, signed.input, ctx);
  } catch {
    valid = false;
  }
  if (!valid)
    return {
      ok: false,
      reason: 'signature_mismatch',
      message: 'signature does not verify over the canonical envelope',
    };
  return {
    ok: true,
    signature: { algorithm: sig.algorithm, value: sig.value, key_id: sig.key_id },
    memberJcs: signed.memberWith(sig),
  };
}

/** Returns a copy of the envelope with `<location>.signature` set over everything else. */
export async function signEnvelope<T extends Record<string, unknown>>(
  envelope: T,
  location: SignatureLocation,
  signatures: EnvelopeSignatures,
  ctx: AnswerSigningContext,
): Promise<T> {
  return (await signEnvelopeText(envelope, location, signatures, ctx)).envelope;
}

/** signEnvelope, also returning the JCS text of the signed member with its signature (what the store keeps). */
export async function signEnvelopeText<T extends Record<string, unknown>>(
  envelope: T,
  location: SignatureLocation,
  signatures: EnvelopeSignatures,
  ctx: AnswerSigningContext,
): Promise<{ envelope: T; memberJcs(): string }> {
  const text = signingText(envelope, location);
  const signature = await signatures.sign(text.input, ctx);
  const member = envelope[location] as Record<string, unknown>;
  // Copy, then add: members written after a leading spread in a literal take V8's slow path (Node 20).
  const signedMember: Record<string, unknown> = Object.assign({}, member);
  signedMember.signature = signature;
  const signedEnvelope = Object.assign({}, envelope) as Record<string, unknown>;
  signedEnvelope[location] = signedMember;
  return {
    envelope: signedEnvelope as T,
    memberJcs() {
      return text.memberWith(signature);
    },
  };
}
