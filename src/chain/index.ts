// ACS §8.2 audit-chain hash rules. One implementation, used by the live pipeline, the stores,
// `audit verify`, export and replay.
import { createHash } from 'node:crypto';

const SURROGATE = /[\uD800-\uDFFF]/;

function hasLoneSurrogate(s: string): boolean {
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c >= 0xdc00 && c <= 0xdfff) return true;
    if (c >= 0xd800 && c <= 0xdbff) {
      const next = s.charCodeAt(i + 1); // NaN past the end
      if (!(next >= 0xdc00 && next <= 0xdfff)) return true;
      i++;
    }
  }
  return false;
}

/** What JSON.stringify escapes, plus surrogates (checked for pairing): a string without any is quoted as it is. */
const NEEDS_ESCAPE_OR_CHECK = /[\u0000-\u001f"\\\uD800-\uDFFF]/;

/** JCS string: ES JSON.stringify escaping (RFC 8785 §3.2.2.2), well-formed UTF-16 only. */
function jcsString(s: string): string {
  if (!NEEDS_ESCAPE_OR_CHECK.test(s)) return '"' + s + '"';
  if (SURROGATE.test(s) && hasLoneSurrogate(s)) throw new TypeError('value cannot be canonicalized (RFC 8785): lone surrogate');
  return JSON.stringify(s);
}

/**
 * Member names in UTF-16 code-unit order (RFC 8785 §3.2.3; `<` on strings compares code units, as the default
 * sort does). Insertion sort for the few keys of a typical member: the default sort costs several times more there.
 */
function sortedKeys(object: object): string[] {
  const keys = Object.keys(object);
  if (keys.length > 24) return keys.sort();
  for (let i = 1; i < keys.length; i++) {
    const key = keys[i];
    let j = i - 1;
    while (j >= 0 && keys[j] > key) {
      keys[j + 1] = keys[j];
      j--;
    }
    keys[j + 1] = key;
  }
  return keys;
}

/** Below this depth no value can be its own ancestor yet; past it, ancestors are checked (circular values throw). */
const UNCHECKED_DEPTH = 64;

function jcsValue(value: unknown, ancestors: object[]): string {
  switch (typeof value) {
    case 'string':
      return jcsString(value);
    case 'number':
      if (!Number.isFinite(value)) throw new TypeError('value cannot be canonicalized (RFC 8785): non-finite number');
      return JSON.stringify(value); // ES Number-to-string is the JCS number form (§3.2.2.3)
    case 'boolean':
      return value ? 'true' : 'false';
    case 'object': {
      if (value === null) return 'null';
      if (ancestors.length >= UNCHECKED_DEPTH && ancestors.includes(value)) throw new TypeError('value cannot be canonicalized (RFC 8785): circular');
      const toJSON = (value as { toJSON?: unknown }).toJSON;
      if (typeof toJSON === 'function') {
        ancestors.push(value);
        const text = jcsValue(toJSON.call(value), ancestors);
        ancestors.pop();
        return text;
      }
      ancestors.push(value);
      let text: string;
      if (Array.isArray(value)) {
        text = '[';
        for (let i = 0; i < value.length; i++) {
          const item: unknown = value[i];
          if (i > 0) text += ',';
          // As JSON.stringify: an array slot that holds no JSON value is null.
          text += item === undefined || typeof item === 'symbol' ? 'null' : jcsValue(item, ancestors);
        }
        text += ']';
      } else {
        text = jcsMembers(value as Record<string, unknown>, ancestors, undefined);
      }
      ancestors.pop();
      return text;
    }
    default:
      throw new TypeError(`value cannot be canonicalized (RFC 8785): ${typeof value}`);
  }
}

/** `{…}` of an object's members in JCS order (UTF-16 code-unit order, §3.2.3), skipping `omit` and undefined members. */
function jcsMembers(object: Record<string, unknown>, ancestors: object[], omit: string | undefined): string {
  const keys = sortedKeys(object);
  let text = '{';
  for (const key of keys) {
    const member = object[key];
    if (member === undefined || typeof member === 'symbol' || key === omit) continue;
    if (text.length > 1) text += ',';
    text += jcsString(key) + ':' + jcsValue(member, ancestors);
  }
  return text + '}';
}

/** RFC 8785 JSON Canonicalization Scheme text. Throws on values JCS cannot represent. */
export function canonicalJson(value: unknown): string {
  if (value === undefined) throw new TypeError('value cannot be canonicalized (RFC 8785)');
  return jcsValue(value, []);
}

/**
 * JCS of an object without its member `name`, and of the same object with `name` set to another value, without
 * canonicalising the other members again (a signed envelope member is canonicalised for the signature's input
 * and again, with the signature, for the store).
 */
export function canonicalJsonWithout(object: Record<string, unknown>, name: string): { text: string; withMember(value: unknown): string; withMemberText(jcs: string): string } {
  const ancestors: object[] = [object];
  const keys: string[] = [];
  const parts: string[] = [];
  for (const key of sortedKeys(object)) {
    const member = object[key];
    if (member === undefined || typeof member === 'symbol' || key === name) continue;
    keys.push(key);
    parts.push(jcsString(key) + ':' + jcsValue(member, ancestors));
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
      const all = [...parts.slice(0, at), jcsString(name) + ':' + jcs, ...parts.slice(at)];
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
