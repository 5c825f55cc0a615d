// Builtins OPA deprecated and keeps only for Rego v0 modules (ast/builtins.go marks them Deprecated;
// a v1 module calling one is a type error, `deprecated built-in function calls in expression: <name>`).
import type { HostImpls } from './registry.ts';
import { regexBuiltins } from './regex.ts';
import { netBuiltins } from './net.ts';
import { operandError, toSet, typeName, valuesEqual, type JsonValue } from './values.ts';

function collection(v: unknown, pos: number): JsonValue[] {
  if (!Array.isArray(v)) throw operandError(pos, 'one of {array, set}', v);
  return v as JsonValue[];
}

function castTo(v: unknown, type: string): unknown {
  if (typeName(v) !== type) throw operandError(1, type, v);
  return v;
}

export const deprecatedBuiltins: HostImpls = {
  all: ([c]) => collection(c, 1).every((x) => x === true),
  any: ([c]) => collection(c, 1).some((x) => x === true),
  re_match: (args, ctx) => regexBuiltins['regex.match'](args, ctx),
  'net.cidr_overlap': (args, ctx) => netBuiltins['net.cidr_contains'](args, ctx),
  set_diff: ([a, b]) => {
    const rhs = collection(b, 2);
    return toSet(collection(a, 1).filter((x) => !rhs.some((y) => valuesEqual(x, y))));
  },
  // Sets reach host builtins as arrays, so cast_array and cast_set accept both.
  cast_array: ([v]) => collection(v, 1),
  cast_set: ([v]) => toSet(collection(v, 1)),
  cast_string: ([v]) => castTo(v, 'string'),
  cast_boolean: ([v]) => castTo(v, 'boolean'),
  cast_null: ([v]) => castTo(v, 'null'),
  cast_object: ([v]) => castTo(v, 'object'),
};
