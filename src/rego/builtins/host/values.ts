// JSON values as opa-wasm hands them to host builtins (sets arrive as arrays, object keys as
// strings), OPA's type names, ordering and equality over them, and the errors builtins raise.

import { DecimalText, isObject, type JsonObject, type JsonValue } from '../../json.ts';

export { DecimalText, isObject, type JsonObject, type JsonValue };

/** OPA's name for a value's type, as used in `eval_type_error` messages. */
export function typeName(v: unknown): string {
  if (v === null || v === undefined) return 'null';
  if (typeof v === 'boolean') return 'boolean';
  if (typeof v === 'number' || typeof v === 'bigint') return 'number';
  if (typeof v === 'string') return 'string';
  if (Array.isArray(v)) return 'array';
  return 'object';
}

/** A set operand of a builtin that prints sets in Rego syntax (names.ts regoSetBuiltins), in the module's order. */
export class RegoSet {
  constructor(readonly elements: readonly unknown[]) {}
}

/** A builtin failed on well-typed operands: `eval_builtin_error: <name>: <message>`. */
export class BuiltinError extends Error {
  readonly code: 'eval_builtin_error' | 'eval_type_error' = 'eval_builtin_error';
  constructor(message: string) {
    super(message);
    this.name = 'BuiltinError';
  }
}

/**
 * An error that ends the evaluation whatever the strict-builtin-errors setting (OPA's topdown `Halt`), with
 * its own code and a message that names the builtin only if it says so itself: `eval_conflict_error:
 * template-strings must not produce multiple outputs`, `eval_builtin_error: http.send: …` (refused.ts).
 */
export class BuiltinHaltError extends Error {
  constructor(
    readonly code: 'eval_conflict_error' | 'eval_internal_error' | 'eval_builtin_error',
    message: string,
  ) {
    super(message);
    this.name = 'BuiltinHaltError';
  }
}

/** An operand has the wrong type: `eval_type_error: <name>: operand N must be T but got U`. */
export class BuiltinTypeError extends BuiltinError {
  override readonly code = 'eval_type_error';
  constructor(message: string) {
    super(message);
    this.name = 'BuiltinTypeError';
  }
}

export function operandError(pos: number, expected: string, got: unknown): BuiltinTypeError {
  return new BuiltinTypeError(`operand ${pos} must be ${expected} but got ${typeName(got)}`);
}

// Operand accessors: `pos` is 1-based, as in OPA's messages.
export function str(v: unknown, pos: number): string {
  if (typeof v !== 'string') throw operandError(pos, 'string', v);
  return v;
}

export function num(v: unknown, pos: number): number {
  // An exact integer argument (names.ts exactIntegerBuiltins) where the builtin computes in doubles.
  if (typeof v === 'bigint') return Number(v);
  if (typeof v !== 'number') throw operandError(pos, 'number', v);
  return v;
}

export function int(v: unknown, pos: number): number {
  const n = num(v, pos);
  if (!Number.isInteger(n))
    throw new BuiltinTypeError(`operand ${pos} must be integer number but got floating-point number`);
  return n;
}

export function arr(v: unknown, pos: number): JsonValue[] {
  if (!Array.isArray(v)) throw operandError(pos, 'array', v);
  return v as JsonValue[];
}

export function obj(v: unknown, pos: number): JsonObject {
  if (!isObject(v)) throw operandError(pos, 'object', v);
  return v;
}

export function bool(v: unknown, pos: number): boolean {
  if (typeof v !== 'boolean') throw operandError(pos, 'boolean', v);
  return v;
}

/** An array (or set, which arrives as an array) whose elements must all be strings. */
export function stringList(v: unknown, pos: number, expected = 'one of {array, set}'): string[] {
  if (!Array.isArray(v)) throw operandError(pos, expected, v);
  for (const e of v) {
    if (typeof e !== 'string')
      throw new BuiltinTypeError(`operand ${pos} must be array of strings but got array containing ${typeName(e)}`);
  }
  return v as string[];
}

const typeRank: Record<string, number> = { null: 0, boolean: 1, number: 2, string: 3, array: 4, object: 5 };

/** OPA's total order over values: null < boolean < number < string < array < object. */
export function compareValues(a: JsonValue, b: JsonValue): number {
  const ta = typeName(a);
  const tb = typeName(b);
  if (ta !== tb) return typeRank[ta] - typeRank[tb];
  switch (ta) {
    case 'null':
      return 0;
    case 'boolean':
      return a === b ? 0 : a ? 1 : -1;
    case 'number':
      return (a as number) - (b as number);
    case 'string':
      return a === b ? 0 : (a as string) < (b as string) ? -1 : 1;
    case 'array': {
      const x = a as JsonValue[];
      const y = b as JsonValue[];
      for (let i = 0; i < Math.min(x.length, y.length); i++) {
        const c = compareValues(x[i], y[i]);
        if (c !== 0) return c;
      }
      return x.length - y.length;
    }
    default: {
      const x = a as JsonObject;
      const y = b as JsonObject;
      const kx = Object.keys(x).sort();
      const ky = Object.keys(y).sort();
      for (let i = 0; i < Math.min(kx.length, ky.length); i++) {
        const c = compareValues(kx[i], ky[i]);
        if (c !== 0) return c;
        const d = compareValues(x[kx[i]], y[ky[i]]);
        if (d !== 0) return d;
      }
      return kx.length - ky.length;
    }
  }
}

export function valuesEqual(a: JsonValue, b: JsonValue): boolean {
  return compareValues(a, b) === 0;
}

/** A set result (sent back as an array): sorted in OPA's order, duplicates removed. */
export function toSet(values: JsonValue[]): JsonValue[] {
  const sorted = [...values].sort(compareValues);
  return sorted.filter((v, i) => i === 0 || compareValues(sorted[i - 1], v) !== 0);
}
