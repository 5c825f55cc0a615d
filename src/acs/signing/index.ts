// Envelope signatures (ACS §10, §10.1). The canonical input is the RFC 8785 JCS text of the *entire* envelope with
// the one `signature` member removed (params.signature on requests, result.signature / error.signature on
// answers), UTF-8 encoded. Algorithms come from a registry keyed by the §10.1 name so asymmetric and PQC
// suites (src/crypto/) plug in without touching the pipeline.
import { canonicalJson } from '../../chain/index.ts';
import { HmacSha256 } from '../../crypto/hmac-sha256.ts';
import type { EnvelopeSignature, Signer, SigningContext, Verifier } from '../../crypto/types.ts';

/** What the pipeline needs from a signature algorithm: a verifier always, a signer when the Guardian signs with it. */
export interface SignatureSuite {
  readonly algorithm: string;
  readonly verifier: Verifier;
  readonly signer?: Signer;
}

/** Signer/verifier registry keyed by ACS §10.1 algorithm name. */
export class SignatureRegistry {
  readonly #suites = new Map<string, SignatureSuite>();

  register(suite: SignatureSuite): this {
    this.#suites.set(suite.algorithm, suite);
    return this;
  }
  get(algorithm: string): SignatureSuite | undefined {
    return this.#suites.get(algorithm);
  }
  /** Advertised in ServerHello.signature_algorithms_supported: only what this registry verifies. */
  algorithms(): string[] {
    return [...this.#suites.keys()];
  }
}

/** The ACS-Core baseline: HMAC-SHA256 with the per-session HKDF key (GUIDE §7). */
export function hmacRegistry(ikm: Uint8Array): SignatureRegistry {
  const hmac = new HmacSha256(ikm);
  return new SignatureRegistry().register({ algorithm: hmac.algorithm, verifier: hmac, signer: hmac });
}

export type SignatureLocation = 'params' | 'result' | 'error';

/** JCS(envelope minus `<location>.signature`) as UTF-8 bytes. Throws when the envelope cannot be canonicalised. */
export function signingInput(envelope: Record<string, unknown>, location: SignatureLocation): Uint8Array {
  const member = envelope[location];
  let stripped: Record<string, unknown> = envelope;
  if (member !== null && typeof member === 'object' && !Array.isArray(member)) {
    const { signature: _sig, ...rest } = member as Record<string, unknown>;
    stripped = { ...envelope, [location]: rest };
  }
  return new TextEncoder().encode(canonicalJson(stripped));
}

const STRICT_BASE64 = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/;

/** Standard padded base64 only; anything else (URL alphabet, whitespace, non-canonical bits) is null. */
export function decodeSignatureValue(value: unknown): Uint8Array | null {
  if (typeof value !== 'string' || value.length === 0 || !STRICT_BASE64.test(value)) return null;
  const bytes = Buffer.from(value, 'base64');
  if (bytes.toString('base64') !== value) return null;
  return new Uint8Array(bytes);
}

export type VerifyOutcome = { ok: true; signature: EnvelopeSignature } | { ok: false; reason: string; message: string };

/** Verifies the signature found at `<location>.signature`. Never throws. */
export async function verifyEnvelope(
  registry: SignatureRegistry,
  envelope: Record<string, unknown>,
  location: SignatureLocation,
  sessionId: string,
): Promise<VerifyOutcome> {
  const member = envelope[location] as Record<string, unknown> | undefined;
  const sig = member?.signature as Record<string, unknown> | undefined;
  if (sig === undefined) return { ok: false, reason: 'signature_missing', message: 'a signature is required on every ACS-Core request (§10)' };
  if (sig === null || typeof sig !== 'object' || typeof sig.algorithm !== 'string' || typeof sig.key_id !== 'string' || typeof sig.value !== 'string') {
    return { ok: false, reason: 'signature_malformed', message: 'signature must be {algorithm, value, key_id} strings' };
  }
  const suite = registry.get(sig.algorithm);
  if (!suite) return { ok: false, reason: 'algorithm_unsupported', message: `signature algorithm ${sig.algorithm} is not supported here` };
  const bytes = decodeSignatureValue(sig.value);
  if (!bytes) return { ok: false, reason: 'signature_malformed', message: 'signature value is not standard padded base64' };
  let input: Uint8Array;
  try {
    input = signingInput(envelope, location);
  } catch {
    return { ok: false, reason: 'not_canonicalizable', message: 'the envelope cannot be canonicalised (RFC 8785)' };
  }
  const ctx: SigningContext = { sessionId, keyId: sig.key_id };
  let valid = false;
  try {
    valid = await suite.verifier.verify(input, bytes, ctx);
  } catch {
    valid = false;
  }
  if (!valid) return { ok: false, reason: 'signature_mismatch', message: 'signature does not verify over the canonical envelope' };
  return { ok: true, signature: { algorithm: sig.algorithm, value: sig.value, key_id: sig.key_id } };
}

/** Returns a copy of the envelope with `<location>.signature` set over everything else. */
export async function signEnvelope<T extends Record<string, unknown>>(
  envelope: T,
  location: SignatureLocation,
  signer: Signer,
  ctx: SigningContext,
): Promise<T> {
  const bytes = await signer.sign(signingInput(envelope, location), ctx);
  const member = envelope[location] as Record<string, unknown>;
  const signature: EnvelopeSignature = { algorithm: signer.algorithm, value: Buffer.from(bytes).toString('base64'), key_id: ctx.keyId };
  return { ...envelope, [location]: { ...member, signature } };
}
