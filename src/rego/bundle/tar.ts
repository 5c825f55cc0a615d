// Minimal synchronous tar (POSIX ustar + PAX path records) for OPA bundles. Written in-house so writing
// is byte-deterministic (fixed mtime/uid/gid/mode, no user names) and reading is synchronous with limits.

const BLOCK = 512;
const enc = new TextEncoder();
const dec = new TextDecoder();

export interface TarEntry {
  name: string;
  data: Uint8Array;
}

export interface TarReadLimits {
  maxEntries: number;
  maxEntryBytes: number;
  maxTotalBytes: number;
}

export class TarFormatError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'TarFormatError';
  }
}

function writeString(buf: Uint8Array, offset: number, length: number, value: string): void {
  const bytes = enc.encode(value);
  buf.set(bytes.subarray(0, length), offset);
}

function writeOctal(buf: Uint8Array, offset: number, length: number, value: number): void {
  // length-1 octal digits, zero padded, then NUL.
  writeString(buf, offset, length, value.toString(8).padStart(length - 1, '0') + '\0');
}

function header(name: string, size: number, type: string, prefix = ''): Uint8Array {
  const h = new Uint8Array(BLOCK);
  writeString(h, 0, 100, name);
  writeOctal(h, 100, 8, 0o644);
  writeOctal(h, 108, 8, 0);
  writeOctal(h, 116, 8, 0);
  writeOctal(h, 124, 12, size);
  writeOctal(h, 136, 12, 0); // mtime: fixed for reproducible bundles
  h.fill(0x20, 148, 156); // checksum placeholder (spaces)
  writeString(h, 156, 1, type);
  writeString(h, 257, 6, 'ustar\0');
  writeString(h, 263, 2, '00');
  writeString(h, 345, 155, prefix);
  let sum = 0;
  for (const b of h) sum += b;
  writeString(h, 148, 8, sum.toString(8).padStart(6, '0') + '\0 ');
  return h;
}

function padding(size: number): number {
  return (BLOCK - (size % BLOCK)) % BLOCK;
}

/** Split a long name into ustar prefix/name, or undefined when it does not fit. */
function splitName(name: string): { prefix: string; name: string } | undefined {
  if (enc.encode(name).length <= 100) return { prefix: '', name };
  for (let i = name.length - 1; i > 0; i--) {
    if (name[i] !== '/') continue;
    const prefix = name.slice(0, i);
    const rest = name.slice(i + 1);
    if (enc.encode(prefix).length <= 155 && enc.encode(rest).length <= 100 && rest.length > 0)
      return { prefix, name: rest };
  }
  return undefined;
}

function paxRecord(key: string, value: string): Uint8Array {
  // "LEN key=value\n" where LEN counts the whole record including its own digits.
  const body = ` ${key}=${value}\n`;
  const bodyLen = enc.encode(body).length;
  let len = bodyLen + 1;
  while (String(len).length + bodyLen !== len) len = String(len).length + bodyLen;
  return enc.encode(`${len}${body}`);
}

/** Serialise entries in the given order (callers sort for determinism). */
export function writeTar(entries: TarEntry[]): Uint8Array {
  const parts: Uint8Array[] = [];
  for (const e of entries) {
    const split = splitName(e.name);
    if (split) {
      parts.push(header(split.name, e.data.length, '0', split.prefix));
    } else {
      const pax = paxRecord('path', e.name);
      parts.push(header('PaxHeader', pax.length, 'x'), pax, new Uint8Array(padding(pax.length)));
      parts.push(header(e.name.slice(0, 100), e.data.length, '0'));
    }
    parts.push(e.data, new Uint8Array(padding(e.data.length)));
  }
  parts.push(new Uint8Array(BLOCK * 2));
  let total = 0;
  for (const p of parts) total += p.length;
  const out = new Uint8Array(total);
  let off = 0;
  for (const p of parts) {
    out.set(p, off);
    off += p.length;
  }
  return out;
}

function readString(buf: Uint8Array, offset: number, length: number): string {
  let end = offset;
  while (end < offset + length && buf[end] !== 0) end++;
  return dec.decode(buf.subarray(offset, end));
}

function readNumber(buf: Uint8Array, offset: number, length: number): number {
  if (buf[offset] & 0x80) {
    // GNU base-256 encoding for big values.
    let v = 0;
    for (let i = offset + 1; i < offset + length; i++) v = v * 256 + buf[i];
    return v;
  }
  const s = readString(buf, offset, length).trim();
  if (s === '') return 0;
  if (!/^[0-7]+$/.test(s)) throw new TarFormatError(`invalid octal number in tar header: ${JSON.stringify(s)}`);
  return parseInt(s, 8);
}

function parsePax(data: Uint8Array): Record<string, string> {
  const out: Record<string, string> = {};
  const text = dec.decode(data);
  let i = 0;
  while (i < text.length) {
    const sp = text.indexOf(' ', i);
    if (sp < 0) break;
    const len = parseInt(text.slice(i, sp), 10);
    if (!Number.isFinite(len) || len <= 0) throw new TarFormatError('invalid PAX record');
    // len is in bytes; records are ASCII-length in practice, so re-slice via bytes for safety.
    const recBytes = enc.encode(text.slice(i)).subarray(0, len);
    const rec = dec.decode(recBytes);
    const body = rec.slice(rec.indexOf(' ') + 1).replace(/\n$/, '');
    const eq = body.indexOf('=');
    if (eq > 0) out[body.slice(0, eq)] = body.slice(eq + 1);
    i += rec.length;
  }
  return out;
}

/** Read regular files from a tar archive; directories, links and other entry types are skipped. */
export function readTar(buf: Uint8Array, limits: TarReadLimits): TarEntry[] {
  const out: TarEntry[] = [];
  let off = 0;
  let total = 0;
  let pendingName: string | undefined;
  let pendingSize: number | undefined;
  let headers = 0;
  while (off + BLOCK <= buf.length) {
    const h = buf.subarray(off, off + BLOCK);
    if (h.every((b) => b === 0)) break;
    if (++headers > limits.maxEntries * 3)
      throw new TarFormatError(`too many tar entries (limit ${limits.maxEntries})`);
    let sum = 0;
    for (let i = 0; i < BLOCK; i++) sum += i >= 148 && i < 156 ? 0x20 : h[i];
    const stored = readNumber(h, 148, 8);
    if (stored !== sum) throw new TarFormatError('invalid tar header checksum');
    const type = String.fromCharCode(h[156] || 0x30);
    let size = readNumber(h, 124, 12);
    if (pendingSize !== undefined) size = pendingSize;
    let name = readString(h, 0, 100);
    const magic = readString(h, 257, 6);
    if (magic.startsWith('ustar')) {
      const prefix = readString(h, 345, 155);
      if (prefix) name = `${prefix}/${name}`;
    }
    if (pendingName !== undefined) name = pendingName;
    off += BLOCK;
    if (size > limits.maxEntryBytes)
      throw new TarFormatError(`tar entry ${name} too large (${size} bytes, limit ${limits.maxEntryBytes})`);
    if (off + size > buf.length) throw new TarFormatError('truncated tar archive');
    const data = buf.subarray(off, off + size);
    off += size + padding(size);
    if (type === 'x') {
      const pax = parsePax(data);
      pendingName = pax.path;
      pendingSize = pax.size !== undefined ? Number(pax.size) : undefined;
      continue;
    }
    if (type === 'L') {
      pendingName = readString(data, 0, data.length);
      continue;
    }
    pendingName = undefined;
    pendingSize = undefined;
    if (type === 'g') continue;
    if (type !== '0' && type !== '7') continue; // directories, links, devices: not bundle content
    total += size;
    if (total > limits.maxTotalBytes)
      throw new TarFormatError(`bundle too large when unpacked (limit ${limits.maxTotalBytes} bytes)`);
    out.push({ name, data: data.slice() });
    if (out.length > limits.maxEntries)
      throw new TarFormatError(`too many files in bundle (limit ${limits.maxEntries})`);
  }
  return out;
}
