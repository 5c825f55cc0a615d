// ACS §8.2 audit-chain hash rules. One implementation, used by the live pipeline, the stores,
// `audit verify`, export and replay.
import { createHash } from 'node:crypto';
import canonicalize from 'canonicalize';

/** RFC 8785 JSON Canonicalization Scheme text (the `canonicalize` package). Throws on values JCS cannot represent. */
export function canonicalJson(value: unknown): string {
  let text: string | undefined;
  try {
    text = canonicalize(value);
  } catch (err) {
    // NaN/Infinity, lone surrogates (RFC 8785 §3.2.2.2), circular values
    throw new TypeError(`value cannot be canonicalized (RFC 8785): ${(err as Error).message}`);
  }
  if (text === undefined) throw new TypeError('value cannot be canonicalized (RFC 8785)');
  return text;
}

/**
 * JCS of an object without its member `name`, and of the same object with `name` set to another value, without
 * canonicalising the other members again (a signed envelope member is canonicalised for the signature's input
 * and again, with the signature, for the store).
 */
export function canonicalJsonWithout(object: Record<string, unknown>, name: string): { text: string; withMember(value: unknown): string; withMemberText(jcs: string): string } {
  const keys: string[] = [];
  const parts: string[] = [];
  // Object.keys(…).sort() compares UTF-16 code units, the member order of RFC 8785 §3.2.3
  for (const key of Object.keys(object).sort()) {
    const member = object[key];
    if (member === undefined || typeof member === 'symbol' || key === name) continue;
    keys.push(key);
    parts.push(canonicalJson(key) + ':' + canonicalJson(member));
  }
  return {
    text: '{' + parts.join(',') + '}',
    withMember(value) {
      return this.withMemberText(canonicalJson(value));
    },
    /** `jcs` must be the JCS text of the member's value. */
    withMemberText(jcs) {
      let at = 0;
      while (at < keys.length && keys[at] < name) at++;
      const all = [...parts.slice(0, at), canonicalJson(name) + ':' + jcs, ...parts.slice(at)];
      return '{' + all.join(',') + '}';
    },
  };
}

export function sha256Hex(data: string | Uint8Array): string {
  return createHash('sha256').update(data).digest('hex');
}

/** `request_hash = hex(SHA-256(JCS(params)))`, over params as received, signature included (ACS §8.2). */
export function computeRequestHash(params: unknown): string {
  return sha256Hex(canonicalJson(params));
}

/** The ContextEntry members that are hashed (ACS §8.2; optional members omitted when absent, never null). */
export interface ContextEntryContent {
  entry_id: string;
  step_id: string;
  step_type: string;
  request_hash?: string;
  timestamp?: string;
  provenance_summary?: unknown;
  [member: string]: unknown;
}

/**
 * `entry_hash = hex(SHA-256(UTF8(JCS(entry minus entry_hash, previous_hash)) || prev_hash_bytes))`
 * where prev_hash_bytes are the raw 32 bytes of previous_hash, or nothing for a chain's first entry.
 */
export function computeEntryHash(entry: ContextEntryContent, previousHash: string | null): string {
  const { entry_hash: _h, previous_hash: _p, ...content } = entry;
  return entryHashOfJcs(canonicalJson(content), previousHash);
}

/** computeEntryHash from the JCS text of the entry minus entry_hash and previous_hash, when it is at hand. */
export function entryHashOfJcs(contentJcs: string, previousHash: string | null): string {
  const hash = createHash('sha256').update(contentJcs, 'utf8');
  if (previousHash !== null) {
    if (!/^[0-9a-f]{64}$/.test(previousHash)) throw new TypeError('previous_hash must be 64 lowercase hex digits');
    hash.update(Buffer.from(previousHash, 'hex'));
  }
  return hash.digest('hex');
}
