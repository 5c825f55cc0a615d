// UTF-8 helpers on plain Uint8Arrays (Buffer exists only in Node; the compiler also runs in browsers).
const encoder = new TextEncoder();

export function utf8Bytes(s: string): Uint8Array {
  return encoder.encode(s);
}

/** Byte order, as Go and the Wasm runtime compare strings (memcmp, then length). */
export function compareBytes(a: Uint8Array, b: Uint8Array): number {
  const n = Math.min(a.length, b.length);
  for (let i = 0; i < n; i++) if (a[i] !== b[i]) return a[i] < b[i] ? -1 : 1;
  return a.length === b.length ? 0 : a.length < b.length ? -1 : 1;
}
