// JSON values inside the Rego toolchain (what JSON.parse returns, and what opa-wasm hands host builtins: sets arrive
// as arrays, object keys as strings), and the guard that tells an object from an array or null. The Guardian's
// src/json.ts says the same; src/rego keeps its own copy because it imports nothing outside src/rego
// (.dependency-cruiser.cjs, rego-imports-only-rego).

export type JsonValue = null | boolean | number | string | JsonValue[] | JsonObject;
export type JsonObject = { [key: string]: JsonValue };

/**
 * An object that is neither null nor an array: a JSON object once the value came from JSON.parse or opa-wasm
 * (the only values the toolchain inspects this way).
 */
export function isObject(v: unknown): v is JsonObject {
  return v !== null && typeof v === 'object' && !Array.isArray(v);
}
