// ACS §8.2 audit-chain hash rules. One implementation, used by the live pipeline, the stores,
// `audit verify`, export and replay.
import * as nodeCrypto from 'node:crypto';
import canonicalize from 'canonicalize';

/**
 * RFC 8785 JSON Canonicalization Scheme text. Plain JSON data already in canonical member order (what a JCS-speaking
 * client sends, parsed) is written by the native JSON.stringify; other plain JSON data by `jcsOfJson`; anything
 * else — toJSON, lone surrogates, non-finite numbers, cycles, non-JSON types, very deep values — by the
 * `canonicalize` package, which also words the refusals. Throws on values JCS cannot represent.
 */
export function canonicalJson(value: unknown): string {
  if (inCanonicalOrder(value, 0)) return JSON.stringify(value);
  const text = jcsOfJson(value, 0);
  if (text !== undefined) return text;
  let slow: string | undefined;
  try {
    slow = canonicalize(value);
  } catch (err) {
    // NaN/Infinity, lone surrogates (RFC 8785 §3.2.2.2), circular values
    throw new TypeError(`value cannot be canonicalized (RFC 8785): ${(err as Error).message}`);
  }
  if (slow === undefined) throw new TypeError('value cannot be canonicalized (RFC 8785)');
  return slow;
}

/**
 * True when JSON.stringify(value) is its JCS text: only JSON values (finite numbers, well-formed strings, no holes,
 * no toJSON), and every object's members already in RFC 8785 §3.2.3 order, in the order JSON.stringify writes them
 * (Object.keys order, which puts integer-like keys first). A check without building strings: half the cost of
 * jcsOfJson on a parsed ACS envelope.
 */
function inCanonicalOrder(value: unknown, depth: number): boolean {
  switch (typeof value) {
    case 'string':
      return isWellFormed(value);
    case 'number':
      return Number.isFinite(value);
    case 'boolean':
      return true;
    case 'object': {
      if (value === null) return true;
      if (depth >= JCS_FAST_DEPTH || typeof (value as { toJSON?: unknown }).toJSON === 'function') return false;
      if (Array.isArray(value)) {
        for (let i = 0; i < value.length; i++)
          if (!(i in value) || !inCanonicalOrder(value[i], depth + 1)) return false;
        return true;
      }
      let previous: string | undefined;
      for (const key of Object.keys(value)) {
        if ((previous !== undefined && !(previous < key)) || !isWellFormed(key)) return false;
        if (!inCanonicalOrder((value as Record<string, unknown>)[key], depth + 1)) return false;
        previous = key;
      }
      return true;
    }
    default:
      return false;
  }
}

// Past this depth the `canonicalize` package takes over: it detects cycles, this walk does not.
const JCS_FAST_DEPTH = 100;

/** String.prototype.isWellFormed (ES2024, in Node ≥ 20): false for a string holding a lone surrogate. */
const isWellFormed = (s: string): boolean => (s as string & { isWellFormed(): boolean }).isWellFormed();

/**
 * An object's own enumerable keys in UTF-16 code-unit order (RFC 8785 §3.2.3; the order of `<` on strings and of
 * Array.prototype.sort). Members mostly arrive in order or nearly, and a sort allocates a work copy on every
 * call (a third of the request path's JCS garbage), so short lists are insertion-sorted in place.
 */
function sortedKeys(object: object): string[] {
  const keys = Object.keys(object);
  if (keys.length > 32) {
    for (let i = 1; i < keys.length; i++) if (keys[i - 1] > keys[i]) return keys.sort();
    return keys;
  }
  for (let i = 1; i < keys.length; i++) {
    const key = keys[i];
    let j = i - 1;
    if (keys[j] < key) continue;
    while (j >= 0 && keys[j] > key) {
      keys[j + 1] = keys[j];
      j--;
    }
    keys[j + 1] = key;
  }
  return keys;
}

/**
 * JCS of a plain JSON value, or undefined where only `canonicalize` decides. RFC 8785 writes strings and numbers
 * exactly as ECMAScript's JSON.stringify does (§3.2.2.2, §3.2.2.3), and orders members by UTF-16 code units, the
 * order of Array.prototype.sort (§3.2.3); so this is the package's output with the native JSON.stringify doing
 * the escaping and number formatting, which is faster (test/chain/jcs.test.ts checks the two agree).
 */
function jcsOfJson(value: unknown, depth: number): string | undefined {
  switch (typeof value) {
    case 'string':
      return isWellFormed(value) ? JSON.stringify(value) : undefined;
    case 'number':
      return Number.isFinite(value) ? JSON.stringify(value) : undefined;
    case 'boolean':
      return value ? 'true' : 'false';
    case 'object': {
      if (value === null) return 'null';
      if (depth >= JCS_FAST_DEPTH || typeof (value as { toJSON?: unknown }).toJSON === 'function') return undefined;
      if (Array.isArray(value)) {
        let out = '[';
        for (let i = 0; i < value.length; i++) {
          const item: unknown = value[i];
          // canonicalize writes undefined and symbols in arrays as null, as JSON.stringify does, but a hole as nothing
          if (item === undefined && !(i in value)) return undefined;
          const text = item === undefined || typeof item === 'symbol' ? 'null' : jcsOfJson(item, depth + 1);
          if (text === undefined) return undefined;
          out += i === 0 ? text : ',' + text;
        }
        return out + ']';
      }
      const object = value as Record<string, unknown>;
      const keys = sortedKeys(object);
      let out = '{';
      let first = true;
      for (const key of keys) {
        const member = object[key];
        if (member === undefined || typeof member === 'symbol') continue;
        const name = isWellFormed(key) ? JSON.stringify(key) : undefined;
        const text = name === undefined ? undefined : jcsOfJson(member, depth + 1);
        if (text === undefined) return undefined;
        out += (first ? '' : ',') + name + ':' + text;
        first = false;
      }
      return out + '}';
    }
    default:
      // undefined, functions, symbols, bigints: canonicalize refuses or writes them its own way
      return undefined;
  }
}

/**
 * JCS of an object without its member `name`, and of the same object with `name` set to another value, without
 * canonicalising the other members again (a signed envelope member is canonicalised for the signature's input
 * and again, with the signature, for the store).
 */
export function canonicalJsonWithout(
  object: Record<string, unknown>,
  name: string,
): { text: string; withMember(value: unknown): string; withMemberText(jcs: string): string } {
  // The members before and after `name` in RFC 8785 §3.2.3 order, each run joined once.
  let before = '';
  let after = '';
  for (const key of sortedKeys(object)) {
    const member = object[key];
    if (member === undefined || typeof member === 'symbol' || key === name) continue;
    const part = canonicalJson(key) + ':' + canonicalJson(member);
    if (key < name) before = before === '' ? part : before + ',' + part;
    else after = after === '' ? part : after + ',' + part;
  }
  return {
    text: '{' + before + (before !== '' && after !== '' ? ',' : '') + after + '}',
    withMember(value) {
      return this.withMemberText(canonicalJson(value));
    },
    /** `jcs` must be the JCS text of the member's value. */
    withMemberText(jcs) {
      return (
        '{' +
        (before === '' ? '' : before + ',') +
        canonicalJson(name) +
        ':' +
        jcs +
        (after === '' ? '' : ',' + after) +
        '}'
      );
    },
  };
}

/** A SHA-256 digest as the chain writes it: 64 lowercase hex digits. */
export function isSha256Hex(value: unknown): value is string {
  return typeof value === 'string' && SHA256_HEX.test(value);
}

const SHA256_HEX = /^[0-9a-f]{64}$/;

// One-shot hashing (Node >= 20.12; the engines field allows 20.11) skips a Hash object per digest.
const oneShotHash = (nodeCrypto as { hash?: (algorithm: string, data: string | Uint8Array, encoding: 'hex') => string })
  .hash;

function digestHex(data: string | Uint8Array): string {
  return oneShotHash ? oneShotHash('sha256', data, 'hex') : nodeCrypto.createHash('sha256').update(data).digest('hex');
}

/**
 * Digests of recent texts. The pipeline hashes a step's params text (request_hash) and entry text (entry_hash)
 * as it places the step, and the store hashes the same texts again to check them before writing them
 * (src/store/prepare.ts, entry-writes.ts), up to a group-commit batch (256 steps) later. Keyed by the whole text
 * (and the previous hash), so a hit is what hashing again would give; long texts are hashed each time.
 */
const RECENT_DIGESTS = 1024;
const MAX_REMEMBERED_TEXT = 8192;
const textDigests = new Map<string, string>();
const entryDigests = new Map<string, { previousHash: string | null; hex: string }>();

function remember<V>(digests: Map<string, V>, text: string, value: V): void {
  if (digests.size >= RECENT_DIGESTS) digests.delete(digests.keys().next().value as string);
  digests.set(text, value);
}

export function sha256Hex(data: string | Uint8Array): string {
  if (typeof data !== 'string' || data.length > MAX_REMEMBERED_TEXT) return digestHex(data);
  let hex = textDigests.get(data);
  if (hex === undefined) remember(textDigests, data, (hex = digestHex(data)));
  return hex;
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
  const remembered = contentJcs.length > MAX_REMEMBERED_TEXT ? undefined : entryDigests.get(contentJcs);
  if (remembered !== undefined && remembered.previousHash === previousHash) return remembered.hex;
  const hex = storedEntryHash(contentJcs, previousHash);
  if (contentJcs.length <= MAX_REMEMBERED_TEXT) remember(entryDigests, contentJcs, { previousHash, hex });
  return hex;
}

/**
 * entryHashOfJcs of a stored entry's text, without the memo of recent digests: for rows read back and hashed once
 * (replay), whose texts would only push the live pipeline's out of the memo.
 */
export function storedEntryHash(contentJcs: string, previousHash: string | null): string {
  if (previousHash !== null && !SHA256_HEX.test(previousHash))
    throw new TypeError('previous_hash must be 64 lowercase hex digits');
  if (previousHash === null) return digestHex(contentJcs);
  // The text's UTF-8 and the previous hash's 32 bytes in one reused buffer, hashed in one call.
  const need = 3 * contentJcs.length + 32;
  if (hashScratch.length < need) hashScratch = Buffer.allocUnsafe(Math.max(need, 2 * hashScratch.length));
  const n = hashScratch.write(contentJcs, 0, 'utf8');
  return digestHex(hashScratch.subarray(0, n + hashScratch.write(previousHash, n, 'hex')));
}

/** sha256Hex of a stored text, without the memo (see storedEntryHash). */
export function storedTextHash(text: string): string {
  return digestHex(text);
}

let hashScratch = Buffer.allocUnsafe(4096);
