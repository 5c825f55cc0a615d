// §10 envelope signatures against the reference vectors (test/fixtures/acs/envelope-signing-vectors.json):
// the canonical input, HMAC-SHA256 under the HKDF session key, and verification of both directions.
import { readFileSync } from 'node:fs';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { createSignatureRegistry } from '../../src/crypto/index.ts';
import { canonicalJson } from '../../src/chain/index.ts';
import {
  cryptoEnvelopeSignatures,
  decodeSignatureValue,
  hmacEnvelopeSignatures,
  isSignatureValue,
  signEnvelope,
  signEnvelopeText,
  signingInput,
  verifyEnvelope,
} from '../../src/acs/signing/index.ts';

const vectors = JSON.parse(
  readFileSync(new URL('../fixtures/acs/envelope-signing-vectors.json', import.meta.url), 'utf8'),
);
const ikm = new Uint8Array(Buffer.from(vectors.ikm_hex, 'hex'));
const ctx = { sessionId: vectors.session_id as string, keyId: vectors.key_id as string };

describe('envelope signatures (§10)', () => {
  it('the signing input is JCS of the envelope minus params.signature / result.signature', () => {
    expect(Buffer.from(signingInput(vectors.request.signed, 'params')).toString('utf8')).toBe(
      vectors.request.signing_input,
    );
    expect(Buffer.from(signingInput(vectors.response.signed, 'result')).toString('utf8')).toBe(
      vectors.response.signing_input,
    );
  });

  for (const [name, signatures] of [
    ['HMAC adapter', hmacEnvelopeSignatures(ikm)],
    ['crypto registry adapter', cryptoEnvelopeSignatures(createSignatureRegistry({ hmacIkm: ikm, workerPool: false }))],
  ] as const) {
    it(`${name}: reproduces the vector signatures byte for byte and verifies them`, async () => {
      const { signature: reqSig, ...params } = vectors.request.signed.params;
      const signedReq = await signEnvelope({ ...vectors.request.signed, params }, 'params', signatures, ctx);
      expect(signedReq.params.signature).toEqual(reqSig);
      const { signature: resSig, ...result } = vectors.response.signed.result;
      const signedRes = await signEnvelope({ ...vectors.response.signed, result }, 'result', signatures, ctx);
      expect(signedRes.result.signature).toEqual(resSig);
      expect(
        await verifyEnvelope(signatures, vectors.request.signed, 'params', { sessionId: ctx.sessionId }),
      ).toMatchObject({ ok: true, memberJcs: canonicalJson(vectors.request.signed.params) });
      const withText = await signEnvelopeText({ ...vectors.response.signed, result }, 'result', signatures, ctx);
      expect(withText.memberJcs()).toBe(canonicalJson(vectors.response.signed.result));
      expect(
        (await verifyEnvelope(signatures, vectors.response.signed, 'result', { sessionId: ctx.sessionId })).ok,
      ).toBe(true);
    });

    it(`${name}: a signature from another session's key, or over a changed member, fails with a precise reason`, async () => {
      const other = await verifyEnvelope(signatures, vectors.request.signed, 'params', {
        sessionId: '00000000-0000-4000-8000-000000000000',
      });
      expect(other).toMatchObject({ ok: false, reason: 'signature_mismatch' });
      const changed = structuredClone(vectors.request.signed);
      changed.params.metadata.session_id = '00000000-0000-4000-8000-000000000000';
      expect(await verifyEnvelope(signatures, changed, 'params', { sessionId: vectors.session_id })).toMatchObject({
        ok: false,
        reason: 'signature_mismatch',
      });
      const padded = structuredClone(vectors.request.signed);
      padded.params.signature.value = padded.params.signature.value.replace('=', '');
      expect(await verifyEnvelope(signatures, padded, 'params', { sessionId: vectors.session_id })).toMatchObject({
        ok: false,
        reason: 'signature_malformed',
      });
    });
  }
});

describe('signature value shape check', () => {
  // verifyEnvelope checks the value's shape with a regex instead of decoding it: it must accept exactly what
  // decodeSignatureValue decodes (standard alphabet, padded, padding bits zero).
  const digits = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/';
  it('agrees with decodeSignatureValue on every padding-bit pattern', () => {
    for (const a of digits) {
      for (const b of digits) {
        for (const value of [`${a}${b}==`, `QUJD${a}${b}==`, `${a}${b}A=`, `${a}A${b}=`, `QU${a}${b}`]) {
          expect(isSignatureValue(value), value).toBe(decodeSignatureValue(value) !== null);
        }
      }
    }
  });
  it('agrees with decodeSignatureValue on random bytes, their encodings and mangled strings', () => {
    const alphabet = fc.constantFrom(...`${digits}=-_ \n.`);
    fc.assert(
      fc.property(
        fc.uint8Array({ maxLength: 70 }),
        fc.string({ unit: alphabet, maxLength: 12 }),
        fc.nat(100),
        (bytes, junk, at) => {
          const encoded = Buffer.from(bytes).toString('base64');
          const mangled = encoded.slice(0, at) + junk + encoded.slice(at);
          for (const value of [encoded, mangled, encoded + '=', encoded.replace(/=+$/, '')]) {
            expect(isSignatureValue(value), value).toBe(decodeSignatureValue(value) !== null);
          }
        },
      ),
      { numRuns: 3000 },
    );
    for (const value of [undefined, null, 7, '', '=', '====', 'A===', 'AA=A'])
      expect(isSignatureValue(value)).toBe(decodeSignatureValue(value) !== null);
  });
});
