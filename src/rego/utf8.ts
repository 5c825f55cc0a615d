// UTF-8 helpers on Uint8Arrays: the compiler also runs in browsers, which have no Buffer.
const encoder = new TextEncoder();
// Node's Buffer.from takes short strings from a shared pool, faster than TextEncoder for the many small
// strings of a module's static data; read from globalThis so that no bundler sees a Node dependency.
const nodeBuffer = globalThis.Buffer;

export const utf8Bytes: (s: string) => Uint8Array = nodeBuffer
  ? (s) => nodeBuffer.from(s, 'utf8')
  : (s) => encoder.encode(s);

/** Byte order, as Go and the Wasm runtime compare strings (memcmp, then length). */
export function compareBytes(a: Uint8Array, b: Uint8Array): number {
  const n = Math.min(a.length, b.length);
  for (let i = 0; i < n; i++) if (a[i] !== b[i]) return a[i] < b[i] ? -1 : 1;
  return a.length === b.length ? 0 : a.length < b.length ? -1 : 1;
}

/**
 * compareBytes of the strings' UTF-8 encodings, without encoding them when the first difference is ASCII
 * (object keys nearly always): equal UTF-16 prefixes encode to equal bytes, lone surrogates included.
 */
export function compareUtf8(a: string, b: string): number {
  const n = Math.min(a.length, b.length);
  for (let i = 0; i < n; i++) {
    const x = a.charCodeAt(i);
    const y = b.charCodeAt(i);
    if (x === y) continue;
    if (x < 0x80 && y < 0x80) return x < y ? -1 : 1;
    return compareBytes(utf8Bytes(a), utf8Bytes(b));
  }
  if (a.length === b.length) return 0;
  // A trailing high surrogate encodes differently alone (U+FFFD) and paired with what follows in the longer one.
  const last = n > 0 ? (a.length === n ? a : b).charCodeAt(n - 1) : 0;
  if (last >= 0xd800 && last <= 0xdbff) return compareBytes(utf8Bytes(a), utf8Bytes(b));
  return a.length < b.length ? -1 : 1;
}
