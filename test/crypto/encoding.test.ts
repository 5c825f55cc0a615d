// Wire encodings: strict base64 (ACS §10: standard alphabet, padded) and the ACS §10.2 hybrid framing.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  decodeBase64Strict,
  decodeHybridSignature,
  encodeBase64,
  encodeHybridSignature,
} from '../../src/crypto/index.ts';

describe('decodeBase64Strict', () => {
  it('round-trips any bytes', () => {
    fc.assert(
      fc.property(fc.uint8Array({ minLength: 1, maxLength: 300 }), (bytes) => {
        expect(Buffer.from(decodeBase64Strict(encodeBase64(bytes))!)).toEqual(Buffer.from(bytes));
      }),
    );
  });

  it('refuses everything that is not canonical padded standard base64', () => {
    for (const bad of [
      '',
      'QQ',
      'QQ=',
      'QR==',
      'Q===',
      'QQ==QQ==',
      ' QQ==',
      'QQ==\n',
      '-_8=',
      'QUJD\r\n',
      'QUJ',
      42,
      null,
      undefined,
    ]) {
      expect(decodeBase64Strict(bad)).toBeNull();
    }
    expect(Buffer.from(decodeBase64Strict('QQ==')!).toString()).toBe('A');
    expect(Buffer.from(decodeBase64Strict('QUJD')!).toString()).toBe('ABC');
  });
});

describe('hybrid framing u32be(len)‖pqc‖u32be(len)‖classical', () => {
  it('round-trips and has the exact layout', () => {
    const blob = encodeHybridSignature({ pqc: new Uint8Array([1, 2, 3]), classical: new Uint8Array([9]) });
    expect([...blob]).toEqual([0, 0, 0, 3, 1, 2, 3, 0, 0, 0, 1, 9]);
    const parts = decodeHybridSignature(blob)!;
    expect([...parts.pqc]).toEqual([1, 2, 3]);
    expect([...parts.classical]).toEqual([9]);
  });

  it('refuses blobs whose prefixes do not exactly cover them', () => {
    for (const bad of [
      [],
      [0, 0, 0],
      [0, 0, 0, 0, 0, 0, 0],
      [0, 0, 0, 1, 7, 0, 0, 0, 0, 5],
      [0, 0, 0, 0, 0, 0, 0, 2, 1],
      [255, 255, 255, 255, 0, 0, 0, 0],
    ]) {
      expect(decodeHybridSignature(new Uint8Array(bad))).toBeNull();
    }
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 64 }), (bytes) => {
        const parts = decodeHybridSignature(bytes);
        if (parts) expect(Buffer.from(encodeHybridSignature(parts))).toEqual(Buffer.from(bytes));
      }),
    );
  });
});
