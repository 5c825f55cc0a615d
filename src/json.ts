// JSON values as the Guardian stores, hashes and hands to policies (RFC 8259 data: what JSON.parse returns), and
// the guards that tell an object from an array or null. src/rego keeps its own copy: it imports nothing outside
// itself (ARCHITECTURE.md).

export type Json = null | boolean | number | string | Json[] | JsonObject;
export type JsonObject = { [key: string]: Json };

/** An object that is neither null nor an array: a JSON object once the value came from JSON.parse. */
export function isObject(v: Json | undefined): v is JsonObject;
export function isObject(v: unknown): v is Record<string, unknown>;
export function isObject(v: unknown): boolean {
  return v !== null && typeof v === 'object' && !Array.isArray(v);
}

/**
 * An object literal or `Object.create(null)`: not an array, a Date, a Map or any other class instance, whose own
 * enumerable members are all JSON.stringify would write (it would still call a `toJSON` member; callers that
 * serialise by hand check for it).
 */
export function isPlainObject(v: unknown): v is Record<string, unknown> {
  if (v === null || typeof v !== 'object' || Array.isArray(v)) return false;
  const proto = Object.getPrototypeOf(v) as unknown;
  return proto === Object.prototype || proto === null;
}
