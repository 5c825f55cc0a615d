// ACS §8.2 audit-chain hash rules. One implementation, used by the live pipeline, the stores,
// `audit verify`, export and replay.
import { createHash } from 'node:crypto';
import canonicalize from 'canonicalize';

/** RFC 8785 JSON Canonicalization Scheme text. Throws on values JCS cannot represent. */
export function canonicalJson(value: unknown): string {
  const text = canonicalize(value);
  if (text === undefined) throw new TypeError('value cannot be canonicalized (RFC 8785)');
  return text;
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
  const hash = createHash('sha256').update(canonicalJson(content), 'utf8');
  if (previousHash !== null) {
    if (!/^[0-9a-f]{64}$/.test(previousHash)) throw new TypeError('previous_hash must be 64 lowercase hex digits');
    hash.update(Buffer.from(previousHash, 'hex'));
  }
  return hash.digest('hex');
}
