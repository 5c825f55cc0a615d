// ACS §10: signature `value` is standard base64 with padding. Decoding is strict so that two different strings
// never verify as the same signature and junk is a failed verify rather than whatever Buffer's lenient decoder makes of it.

const STRICT_BASE64 = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/;

/** Decodes standard padded base64; returns null for anything else (URL-safe alphabet, whitespace, bad padding). */
export function decodeBase64Strict(value: unknown): Uint8Array | null {
  if (typeof value !== 'string' || value.length === 0 || !STRICT_BASE64.test(value)) return null;
  const bytes = Buffer.from(value, 'base64');
  // Non-canonical trailing bits (e.g. "QR==" vs "QQ==") decode to the same bytes: refuse them.
  if (bytes.toString('base64') !== value) return null;
  return new Uint8Array(bytes.buffer, bytes.byteOffset, bytes.byteLength);
}

export function encodeBase64(bytes: Uint8Array): string {
  return Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString('base64');
}
