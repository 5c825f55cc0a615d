import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { canonicalJson } from '../../src/chain/index.ts';
import { HmacSha256, deriveSessionKey } from '../../src/crypto/hmac-sha256.ts';

const v = JSON.parse(readFileSync(new URL('../fixtures/acs/envelope-signing-vectors.json', import.meta.url), 'utf8'));
const ikm = Buffer.from(v.ikm_hex, 'hex');

function withoutSignature(envelope: { params?: Record<string, unknown>; result?: Record<string, unknown> }) {
  const copy = structuredClone(envelope);
  if (copy.params) delete copy.params.signature;
  if (copy.result) delete copy.result.signature;
  return copy;
}

describe('HMAC-SHA256 envelope signatures (ACS §10)', () => {
  it('derives the per-session key with HKDF-SHA256, empty salt, info = session_id', () => {
    expect(Buffer.from(deriveSessionKey(ikm, v.session_id)).toString('hex')).toBe(v.session_key_hex);
  });

  for (const side of ['request', 'response'] as const) {
    it(`reproduces the ${side} vector's signing input and signature`, async () => {
      const signed = v[side].signed;
      const input = canonicalJson(withoutSignature(signed));
      expect(input).toBe(v[side].signing_input);
      const hmac = new HmacSha256(ikm);
      const sig = await hmac.sign(Buffer.from(input), { sessionId: v.session_id, keyId: v.key_id });
      const expected = (signed.params ?? signed.result).signature.value;
      expect(Buffer.from(sig).toString('base64')).toBe(expected);
      expect(
        await hmac.verify(Buffer.from(input), Buffer.from(expected, 'base64'), {
          sessionId: v.session_id,
          keyId: v.key_id,
        }),
      ).toBe(true);
      expect(
        await hmac.verify(Buffer.from(input + ' '), Buffer.from(expected, 'base64'), {
          sessionId: v.session_id,
          keyId: v.key_id,
        }),
      ).toBe(false);
    });
  }

  it('a canonical text is MACed as its UTF-8 bytes (non-ASCII and non-BMP included)', async () => {
    const hmac = new HmacSha256(ikm);
    const ctx = { sessionId: v.session_id, keyId: v.key_id };
    const text = '{"note":"caf\u00e9 \ud83d\ude00 \u2028","n":1}';
    const mac = hmac.signSync(new TextEncoder().encode(text), ctx);
    expect(Buffer.from(hmac.signSync(text, ctx)).toString('hex')).toBe(Buffer.from(mac).toString('hex'));
    expect(await hmac.verify(text, mac, ctx)).toBe(true);
    expect(await hmac.verify(text.replace('caf', 'cav'), mac, ctx)).toBe(false);
  });
});
