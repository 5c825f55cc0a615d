// Numbers, bits, operators and aggregates. Most are native in the Wasm runtime (exact big numbers);
// these host versions exist so every declared builtin has an implementation (and for tests/tools).
import type { HostImpls } from './registry.ts';
import {
  BuiltinError,
  BuiltinTypeError,
  compareValues,
  int,
  isObject,
  num,
  operandError,
  toSet,
  typeName,
  valuesEqual,
  type JsonValue,
} from './values.ts';

/** Largest numbers.range output we build (OPA has no cap; an unbounded range would exhaust memory). */
export const MAX_RANGE_LENGTH = 10_000_000;

/** Go's math.Round: half away from zero. */
const goRound = (x: number): number => (x < 0 ? -Math.round(-x) : Math.round(x));

/** A JS integer result, exact as bigint when beyond 2^53. */
const exactInt = (v: bigint): number | bigint =>
  v >= BigInt(Number.MIN_SAFE_INTEGER) && v <= BigInt(Number.MAX_SAFE_INTEGER) ? Number(v) : v;

function range(from: number, to: number, step: number): number[] {
  const length = Math.floor(Math.abs(to - from) / step) + 1;
  if (length > MAX_RANGE_LENGTH)
    throw new BuiltinError(`range of ${length} elements exceeds the limit of ${MAX_RANGE_LENGTH}`);
  const out: number[] = new Array(length);
  const dir = to >= from ? 1 : -1;
  for (let k = 0; k < length; k++) out[k] = from + dir * k * step;
  return out;
}

function numbersOf(v: unknown, pos: number): number[] {
  if (!Array.isArray(v)) throw operandError(pos, 'one of {array, set}', v);
  for (const e of v)
    if (typeof e !== 'number')
      throw new BuiltinTypeError(`operand ${pos} must be array of numbers but got array containing ${typeName(e)}`);
  return v as number[];
}

function collection(v: unknown, pos: number): JsonValue[] {
  if (!Array.isArray(v)) throw operandError(pos, 'one of {array, set}', v);
  return v as JsonValue[];
}

function shift(v: unknown, pos: number): bigint {
  const n = int(v, pos);
  if (n < 0) throw new BuiltinTypeError(`operand ${pos} must be an unsigned integer number but got a negative integer`);
  return BigInt(n);
}

const bin = (f: (a: bigint, b: bigint) => bigint) => (args: unknown[]) =>
  exactInt(f(BigInt(int(args[0], 1)), BigInt(int(args[1], 2))));

/** numbers.range operands: OPA's BigIntOperand wording. */
function rangeInt(v: unknown, pos: number): number {
  if (typeof v !== 'number') throw operandError(pos, 'integer', v);
  return int(v, pos);
}

export const numberBuiltins: HostImpls = {
  abs: ([x]) => Math.abs(num(x, 1)),
  ceil: ([x]) => Math.ceil(num(x, 1)),
  floor: ([x]) => Math.floor(num(x, 1)),
  round: ([x]) => goRound(num(x, 1)),
  'numbers.range': ([a, b]) => range(rangeInt(a, 1), rangeInt(b, 2), 1),
  'numbers.range_step'([a, b, s]) {
    const from = rangeInt(a, 1);
    const to = rangeInt(b, 2);
    const step = rangeInt(s, 3);
    // OPA repeats the builtin name inside this message.
    if (step <= 0) throw new BuiltinError('numbers.range_step: step must be a positive integer');
    return range(from, to, step);
  },
  to_number([x]) {
    if (x === null) return 0;
    if (typeof x === 'boolean') return x ? 1 : 0;
    if (typeof x === 'number') return x;
    if (typeof x === 'string') {
      if (/^(inf|infinity|nan)$/.test(x.replace(/^[+-]+/, '').toLowerCase()))
        throw operandError(1, 'valid number string', x);
      if (!/^[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?$/.test(x))
        throw new BuiltinError(`strconv.ParseFloat: parsing ${JSON.stringify(x)}: invalid syntax`);
      const n = Number(x);
      if (!Number.isFinite(n))
        throw new BuiltinError(`strconv.ParseFloat: parsing ${JSON.stringify(x)}: value out of range`);
      return n;
    }
    throw operandError(1, 'one of {null, boolean, number, string}', x);
  },
  'bits.or': bin((a, b) => a | b),
  'bits.and': bin((a, b) => a & b),
  'bits.xor': bin((a, b) => a ^ b),
  'bits.negate': ([x]) => exactInt(~BigInt(int(x, 1))),
  'bits.lsh': ([x, s]) => exactInt(BigInt(int(x, 1)) << shift(s, 2)),
  'bits.rsh': ([x, s]) => exactInt(BigInt(int(x, 1)) >> shift(s, 2)),

  // Operators (the compiler normally makes these native).
  equal: ([a, b]) => valuesEqual(a as JsonValue, b as JsonValue),
  neq: ([a, b]) => !valuesEqual(a as JsonValue, b as JsonValue),
  lt: ([a, b]) => compareValues(a as JsonValue, b as JsonValue) < 0,
  lte: ([a, b]) => compareValues(a as JsonValue, b as JsonValue) <= 0,
  gt: ([a, b]) => compareValues(a as JsonValue, b as JsonValue) > 0,
  gte: ([a, b]) => compareValues(a as JsonValue, b as JsonValue) >= 0,
  plus: ([a, b]) => num(a, 1) + num(b, 2),
  minus([a, b]) {
    // Sets arrive as arrays: `-` on two collections is set difference.
    if (Array.isArray(a) && Array.isArray(b))
      return toSet((a as JsonValue[]).filter((x) => !(b as JsonValue[]).some((y) => valuesEqual(x, y))));
    if (typeof a !== 'number') throw operandError(1, 'one of {number, set}', a);
    if (typeof b !== 'number') throw operandError(2, 'one of {number, set}', b);
    return a - b;
  },
  mul: ([a, b]) => num(a, 1) * num(b, 2),
  div([a, b]) {
    const d = num(b, 2);
    const n = num(a, 1);
    if (d === 0) throw new BuiltinError('divide by zero');
    return n / d;
  },
  rem([a, b]) {
    const n = num(a, 1);
    const d = num(b, 2);
    if (!Number.isInteger(n) || !Number.isInteger(d)) throw new BuiltinError('modulo on floating-point number');
    if (d === 0) throw new BuiltinError('modulo by zero');
    return n % d;
  },
  and: ([a, b]) => toSet(collection(a, 1).filter((x) => collection(b, 2).some((y) => valuesEqual(x, y)))),
  or: ([a, b]) => toSet([...collection(a, 1), ...collection(b, 2)]),
  'internal.member_2'([x, coll]) {
    if (Array.isArray(coll)) return coll.some((e) => valuesEqual(e as JsonValue, x as JsonValue));
    if (isObject(coll)) return Object.values(coll).some((e) => valuesEqual(e, x as JsonValue));
    return false;
  },
  'internal.member_3'([k, v, coll]) {
    if (Array.isArray(coll))
      return (
        typeof k === 'number' &&
        Number.isInteger(k) &&
        k >= 0 &&
        k < coll.length &&
        valuesEqual(coll[k] as JsonValue, v as JsonValue)
      );
    if (isObject(coll)) return typeof k === 'string' && Object.hasOwn(coll, k) && valuesEqual(coll[k], v as JsonValue);
    return false;
  },

  // Aggregates
  count([x]) {
    if (typeof x === 'string') return Array.from(x).length;
    if (Array.isArray(x)) return x.length;
    if (isObject(x)) return Object.keys(x).length;
    throw operandError(1, 'one of {string, array, object, set}', x);
  },
  sum: ([x]) => numbersOf(x, 1).reduce((s, n) => s + n, 0),
  product: ([x]) => numbersOf(x, 1).reduce((s, n) => s * n, 1),
  max([x]) {
    const c = collection(x, 1);
    return c.length ? c.reduce((m, v) => (compareValues(v, m) > 0 ? v : m)) : undefined;
  },
  min([x]) {
    const c = collection(x, 1);
    return c.length ? c.reduce((m, v) => (compareValues(v, m) < 0 ? v : m)) : undefined;
  },
  sort: ([x]) => [...collection(x, 1)].sort(compareValues),
};
