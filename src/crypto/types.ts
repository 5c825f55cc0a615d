// One interface per concern (agt-go style): a Signer produces signatures, a Verifier checks them, and the
// SignatureRegistry maps an ACS §10.1 algorithm name to both. Keys are resolved per session and key_id.

/** The ACS §10.1 signature registry names. */
export type SignatureAlgorithm =
  | 'HMAC-SHA256'
  | 'ECDSA-P256'
  | 'RSA-PSS-SHA256'
  | 'ML-DSA-44'
  | 'ML-DSA-65'
  | 'ML-DSA-87'
  | 'SLH-DSA-128s'
  | 'SLH-DSA-128f'
  | 'ML-DSA-65+ECDSA-P256'
  | 'ML-DSA-65+RSA-PSS-SHA256';

/** The signature member of an ACS envelope (ACS §10). `value` is standard base64 with padding. */
export interface EnvelopeSignature {
  algorithm: SignatureAlgorithm | string;
  value: string;
  key_id: string;
}

/** Whom a signature is made for: the session (HMAC keys are derived per session) and the key id. */
export interface SigningContext {
  sessionId: string;
  keyId: string;
}

export interface Signer {
  readonly algorithm: SignatureAlgorithm;
  /** Signs the canonical input bytes (JCS of the envelope minus its signature member). */
  sign(input: Uint8Array, ctx: SigningContext): Promise<Uint8Array>;
}

export interface Verifier {
  readonly algorithm: SignatureAlgorithm;
  /** True when `signature` is valid over `input` for the key `ctx.keyId` resolves to. Never throws on bad input. */
  verify(input: Uint8Array, signature: Uint8Array, ctx: SigningContext): Promise<boolean>;
}
