import { createHmac, hkdfSync, timingSafeEqual } from 'node:crypto';
import type { Signer, SigningContext, Verifier } from './types.ts';

/**
 * Per-session HMAC key: HKDF-SHA256(IKM, salt = empty, info = UTF-8 session_id, L = 32).
 * The spec leaves the derivation open; this is the interop choice of every implementation (GUIDE §7).
 */
export function deriveSessionKey(ikm: Uint8Array, sessionId: string): Uint8Array {
  return new Uint8Array(hkdfSync('sha256', ikm, new Uint8Array(0), Buffer.from(sessionId, 'utf8'), 32));
}

/** HMAC-SHA256, the ACS-Core baseline (ACS §10.1). Keys are derived per session from one IKM. */
export class HmacSha256 implements Signer, Verifier {
  readonly algorithm = 'HMAC-SHA256' as const;
  readonly #ikm: Uint8Array;
  readonly #keys = new Map<string, Uint8Array>();

  constructor(ikm: Uint8Array) {
    if (ikm.length < 16) throw new Error('HMAC input key material must be at least 16 bytes');
    this.#ikm = ikm;
  }

  #sessionKey(sessionId: string): Uint8Array {
    let key = this.#keys.get(sessionId);
    if (!key) {
      key = deriveSessionKey(this.#ikm, sessionId);
      // Bounded cache: a flood of new session ids must not grow memory without limit.
      if (this.#keys.size >= 10_000) this.#keys.clear();
      this.#keys.set(sessionId, key);
    }
    return key;
  }

  async sign(input: Uint8Array, ctx: SigningContext): Promise<Uint8Array> {
    return this.signSync(input, ctx);
  }

  signSync(input: Uint8Array, ctx: SigningContext): Uint8Array {
    return new Uint8Array(createHmac('sha256', this.#sessionKey(ctx.sessionId)).update(input).digest());
  }

  async verify(input: Uint8Array, signature: Uint8Array, ctx: SigningContext): Promise<boolean> {
    const expected = this.signSync(input, ctx);
    return signature.length === expected.length && timingSafeEqual(signature, expected);
  }
}
