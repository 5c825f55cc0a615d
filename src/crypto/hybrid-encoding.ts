// ACS §10.2 hybrid value: u32be(len pqc) ‖ pqc_sig ‖ u32be(len classical) ‖ classical_sig (before base64).

export interface HybridParts {
  pqc: Uint8Array;
  classical: Uint8Array;
}

export function encodeHybridSignature(parts: HybridParts): Uint8Array {
  const out = new Uint8Array(8 + parts.pqc.length + parts.classical.length);
  const view = new DataView(out.buffer);
  view.setUint32(0, parts.pqc.length, false);
  out.set(parts.pqc, 4);
  view.setUint32(4 + parts.pqc.length, parts.classical.length, false);
  out.set(parts.classical, 8 + parts.pqc.length);
  return out;
}

/** Splits a hybrid blob; null when the length prefixes do not exactly cover the blob (no trailing bytes allowed). */
export function decodeHybridSignature(blob: Uint8Array): HybridParts | null {
  if (blob.length < 8) return null;
  const view = new DataView(blob.buffer, blob.byteOffset, blob.byteLength);
  const pqcLen = view.getUint32(0, false);
  if (pqcLen > blob.length - 8) return null;
  const classicalLen = view.getUint32(4 + pqcLen, false);
  if (8 + pqcLen + classicalLen !== blob.length) return null;
  return {
    pqc: blob.subarray(4, 4 + pqcLen),
    classical: blob.subarray(8 + pqcLen),
  };
}
