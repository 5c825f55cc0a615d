// Replay's read path: stored entries as the rows hold them (JCS text, not parsed objects), one page of a chain
// per query. Keeping the text lets the hash checks hash what is stored instead of re-canonicalising it, and
// lets a page cross to a worker thread as plain strings. Pages come packed from the store
// (ReplayReadStore.readPackedEntries, whose doc gives the format), keyset paginated on (session_id, seq).
import {
  computeEntryHash,
  computeRequestHash,
  type ContextEntryContent,
  storedEntryHash,
  storedTextHash,
} from '../chain/index.ts';
import { isObject, type Json } from '../json.ts';
import type { DurableStore, StoredEntryRow } from '../store/types.ts';

/**
 * One context_entries row as replay reads it (structured-cloneable: only strings and numbers): the store's row
 * without the columns replay does not need, plus created_at in ms since the epoch (the step time when the entry
 * has no timestamp).
 */
export type StoredEntry = Pick<
  StoredEntryRow,
  'seq' | 'contentJcs' | 'previousHash' | 'entryHash' | 'paramsJcs' | 'resultJcs' | 'bundleRevision'
> & { createdAtMs: number };

export type TamperKind = 'request_hash_mismatch' | 'entry_hash_mismatch';

/** Code-unit index after `bytes` UTF-8 bytes of `text` from `from`. */
function advanceUtf8(text: string, from: number, bytes: number): number {
  let i = from;
  for (let n = 0; n < bytes && i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c < 0x80) n += 1;
    else if (c < 0x800) n += 2;
    else if (c >= 0xd800 && c <= 0xdbff && i + 1 < text.length) {
      n += 4;
      i++;
    } else n += 3;
  }
  return i;
}

/** Header numbers of the row being unpacked (seq, created_ms, six byte lengths; -1 for an empty one = NULL). */
const headerScratch = new Float64Array(8);

/**
 * Parses `seq,created_ms,len,…;` into headerScratch; returns the index of the `;`, or -1 when the header is
 * not eight comma-separated fields of digits (lengths may be empty) before the first `;`.
 */
function parseHeader(packed: string): number {
  let field = 0;
  let value = -1;
  let sign = 1;
  for (let i = 0; i < packed.length; i++) {
    const c = packed.charCodeAt(i);
    if (c >= 0x30 && c <= 0x39) value = (value < 0 ? 0 : value * 10) + (c - 0x30);
    // created_ms is negative before 1970.
    else if (c === 0x2d && field === 1 && value < 0 && sign === 1) sign = -1;
    else if (c === 0x2c || c === 0x3b) {
      // seq and created_ms are never empty; a length field is empty for NULL.
      if (field >= 8 || (field < 2 && value < 0)) return -1;
      headerScratch[field++] = sign * value;
      value = -1;
      sign = 1;
      if (c === 0x3b) return field === 8 ? i : -1;
    } else return -1;
  }
  return -1;
}

/** A packed row back into its fields; throws on a row not in the packed shape (fail closed: the read fails). */
export function unpackEntry(packed: string): StoredEntry {
  const headerEnd = parseHeader(packed);
  if (headerEnd < 0) throw new Error('replay: malformed packed entry row');
  let total = headerEnd + 1;
  for (let k = 2; k < 8; k++) if (headerScratch[k] > 0) total += headerScratch[k];
  // Byte lengths are code units too when every text is ASCII (the sums then agree); otherwise walk the bytes.
  const ascii = total === packed.length;
  let at = headerEnd + 1;
  const texts: (string | null)[] = [null, null, null, null, null, null];
  for (let k = 0; k < 6; k++) {
    const count = headerScratch[k + 2];
    if (count < 0) continue;
    const end = ascii ? at + count : advanceUtf8(packed, at, count);
    texts[k] = packed.slice(at, end);
    at = end;
  }
  const [contentJcs, previousHash, entryHash, paramsJcs, resultJcs, bundleRevision] = texts;
  if (at !== packed.length || contentJcs === null || entryHash === null || paramsJcs === null)
    throw new Error('replay: malformed packed entry row');
  return {
    seq: headerScratch[0],
    contentJcs,
    previousHash,
    entryHash,
    paramsJcs,
    resultJcs,
    bundleRevision,
    createdAtMs: headerScratch[1],
  };
}

/**
 * The entries of one chain after `afterSeq`, in seq order, at most `limit`, as packed rows: a page crosses to a
 * worker thread as an array of strings (cloned as flat text, not as 500 objects of eight members) and each
 * row is unpacked where it is replayed.
 */
export async function readPackedPage(
  store: DurableStore,
  sessionId: string,
  afterSeq: number,
  limit: number,
): Promise<string[]> {
  return store.readPackedEntries(sessionId, afterSeq, limit);
}

/** The entries of one chain after `afterSeq`, in seq order, at most `limit`. */
export async function readEntryPage(
  store: DurableStore,
  sessionId: string,
  afterSeq: number,
  limit: number,
): Promise<StoredEntry[]> {
  return (await readPackedPage(store, sessionId, afterSeq, limit)).map(unpackEntry);
}

/** A packed row's seq (the page cursor), without unpacking it. */
export function packedSeq(packed: string): number {
  return Number(packed.slice(0, packed.indexOf(',')));
}

/**
 * A packed row's bundle_revision (which policy a worker needs for it). The revision is the last text: when
 * every text is ASCII (byte lengths then sum to the row's length) it is the row's tail; otherwise the row is
 * unpacked.
 */
export function packedRevision(packed: string): string | null {
  const headerEnd = parseHeader(packed);
  if (headerEnd < 0) return unpackEntry(packed).bundleRevision;
  const revision = headerScratch[7];
  if (revision < 0) return null;
  let total = headerEnd + 1;
  for (let k = 2; k < 8; k++) if (headerScratch[k] > 0) total += headerScratch[k];
  return total === packed.length ? packed.slice(packed.length - revision) : unpackEntry(packed).bundleRevision;
}

/**
 * Which hash a stored entry fails, if any (ACS §8.2). Fast path: the stored texts are the JCS the hashes were
 * computed over, so they are hashed as they are; a text hashing to the recorded value IS the canonical form of
 * what was hashed (SHA-256 preimage), so a match is final. On a mismatch the text is parsed and
 * re-canonicalised (the rule itself): a row whose text was rewritten without changing its JSON value is not
 * tampered.
 */
export function entryTamper(entry: StoredEntry, content: ContextEntryContent): TamperKind | null {
  try {
    // storedEntryHash throws on a previous_hash that is not 64 hex digits: caught below as a tampered entry.
    const entryOk =
      storedEntryHash(entry.contentJcs, entry.previousHash) === entry.entryHash ||
      computeEntryHash(content, entry.previousHash) === entry.entryHash;
    if (!entryOk) return 'entry_hash_mismatch';
    const recorded = content.request_hash;
    if (typeof recorded !== 'string') return 'request_hash_mismatch';
    if (storedTextHash(entry.paramsJcs) !== recorded && computeRequestHash(JSON.parse(entry.paramsJcs)) !== recorded)
      return 'request_hash_mismatch';
  } catch {
    return 'entry_hash_mismatch';
  }
  return null;
}

/** The entry's hashed members; null when content_jcs is not a JSON object (reported as tampered). */
export function entryContent(entry: StoredEntry): ContextEntryContent | null {
  try {
    const c = JSON.parse(entry.contentJcs) as unknown;
    return isObject(c) ? (c as ContextEntryContent) : null;
  } catch {
    return null;
  }
}

export function parseJson(text: string | null): Json {
  return text === null ? null : (JSON.parse(text) as Json);
}
