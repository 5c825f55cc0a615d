// JSON values inside the Rego toolchain (what JSON.parse returns, and what opa-wasm hands host builtins: sets arrive
// as arrays, object keys as strings), and the guard that tells an object from an array or null. The Guardian's
// src/json.ts says the same; src/rego keeps its own copy because it imports nothing outside src/rego
// (.dependency-cruiser.cjs, rego-imports-only-rego).

export type JsonValue = null | boolean | number | string | JsonValue[] | JsonObject;
export type JsonObject = { [key: string]: JsonValue };

/**
 * A number as written in decimal notation, where a double would hold another: `1.50`, `1e3`, `1e400`,
 * `12345678901234567890`. The builtins that print the number OPA holds get decimals this way
 * (builtins/host/names.ts numberTextBuiltins); data files keep such numbers this way, as OPA decodes them into
 * json.Number (util.UnmarshalJSON with UseNumber), and exactJson writes the text back. The text is not an own
 * property, so the value is no object to the code walking documents.
 */
export class DecimalText {
  readonly #text: string;
  constructor(text: string) {
    this.#text = text;
  }
  get text(): string {
    return this.#text;
  }
  /** JSON.stringify, which has no way to write the text, writes the nearest double (exactJson writes the text). */
  toJSON(): number {
    return Number(this.#text);
  }
}

/**
 * An object that is neither null nor an array (nor a number held as DecimalText): a JSON object once the value
 * came from JSON.parse or opa-wasm (the only values the toolchain inspects this way).
 */
export function isObject(v: unknown): v is JsonObject {
  return v !== null && typeof v === 'object' && !Array.isArray(v) && !(v instanceof DecimalText);
}

/**
 * JSON.stringify's text, with bigints written as exact integers and DecimalText as its text (JSON.stringify cannot
 * write a number it has no double for). Keys whose value has no JSON text are left out, as JSON.stringify does.
 */
export function exactJson(v: unknown): string {
  if (typeof v === 'bigint') return v.toString();
  if (v instanceof DecimalText) return v.text;
  if (Array.isArray(v))
    return `[${v.map((x) => exactJson(x === undefined || typeof x === 'function' ? null : x)).join(',')}]`;
  if (v !== null && typeof v === 'object' && !(v instanceof Uint8Array)) {
    const parts: string[] = [];
    for (const [k, x] of Object.entries(v)) {
      if (x === undefined || typeof x === 'function' || typeof x === 'symbol') continue;
      parts.push(`${JSON.stringify(k)}:${exactJson(x)}`);
    }
    return `{${parts.join(',')}}`;
  }
  return JSON.stringify(v) ?? 'null';
}

/** Whether a value holds a number JSON.stringify would not write as it is (a bigint or a DecimalText). */
export function hasExactNumbers(v: unknown): boolean {
  if (typeof v === 'bigint' || v instanceof DecimalText) return true;
  if (v === null || typeof v !== 'object' || v instanceof ArrayBuffer || v instanceof Uint8Array) return false;
  if (Array.isArray(v)) return v.some(hasExactNumbers);
  return Object.values(v).some(hasExactNumbers);
}

/**
 * A document as opa-wasm's setData/evaluate take it: the value itself (opa-wasm writes it with JSON.stringify), or,
 * when it holds exact numbers, its JSON text in an ArrayBuffer, which opa-wasm hands to the module's own JSON parser
 * unchanged (opa.js `_loadJSON`).
 */
export function wasmJson(v: unknown): unknown {
  if (v instanceof ArrayBuffer || !hasExactNumbers(v)) return v;
  return new TextEncoder().encode(exactJson(v)).buffer;
}
