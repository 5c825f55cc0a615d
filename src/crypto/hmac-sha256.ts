import { createHmac, createSecretKey, hkdfSync, timingSafeEqual, type KeyObject } from 'node:crypto';
import type { Signer, SigningContext, Verifier } from './types.ts';

/**
 * Per-session HMAC key: HKDF-SHA256(IKM, salt = empty, info = UTF-8 session_id, L = 32).
 * The spec leaves the derivation open; this is the interop choice of every implementation (ACS §10; docs/conformance.md, interop choices).
 */
export function deriveSessionKey(ikm: Uint8Array, sessionId: string): Uint8Array {
  return new Uint8Array(hkdfSync('sha256', ikm, new Uint8Array(0), Buffer.from(sessionId, 'utf8'), 32));
}

/** HMAC-SHA256, the ACS-Core baseline (ACS §10.1). Keys are derived per session from one IKM. */
export class HmacSha256 implements Signer, Verifier {
  readonly algorithm = 'HMAC-SHA256' as const;
  readonly #ikm: Uint8Array;
  /** Session keys as KeyObjects: createHmac with raw bytes imports the key again on every call. */
  readonly #keys = new Map<string, KeyObject>();

  constructor(ikm: Uint8Array) {
    if (ikm.length < 16) throw new Error('HMAC input key material must be at least 16 bytes');
    this.#ikm = ikm;
  }

  #sessionKey(sessionId: string): KeyObject {
    let key = this.#keys.get(sessionId);
    if (!key) {
      key = createSecretKey(deriveSessionKey(this.#ikm, sessionId));
      // Bounded cache: a flood of new session ids must not grow memory without limit.
      if (this.#keys.size >= 10_000) this.#keys.clear();
      this.#keys.set(sessionId, key);
    }
    return key;
  }

  /** `input`: the canonical bytes, or the canonical text (hashed as its UTF-8, without a copy to bytes first). */
  async sign(input: Uint8Array | string, ctx: SigningContext): Promise<Uint8Array> {
    return this.signSync(input, ctx);
  }

  signSync(input: Uint8Array | string, ctx: SigningContext): Uint8Array {
    const mac = createHmac('sha256', this.#sessionKey(ctx.sessionId));
    return new Uint8Array(typeof input === 'string' ? mac.update(input, 'utf8').digest() : mac.update(input).digest());
  }

  async verify(input: Uint8Array | string, signature: Uint8Array, ctx: SigningContext): Promise<boolean> {
    const expected = this.signSync(input, ctx);
    return signature.length === expected.length && timingSafeEqual(signature, expected);
  }
}
