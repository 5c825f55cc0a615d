// Names under which compiled modules import host builtins; no implementations here, so the Wasm linker
// can use it without loading the builtin library.
/**
 * opa-wasm 1.10 dispatches these names to its own JS builtins before looking at customBuiltins
 * (its src/builtins/index.js): its sprintf uses sprintf-js (not Go's fmt), regex.split uses JS
 * RegExp (not RE2). A module that lists a builtin under `hostBuiltinName(name)` in its
 * `builtins()` export reaches our implementation instead; createHostBuiltins registers both names.
 */
export const opaWasmShadowedBuiltins: ReadonlySet<string> = new Set([
  'sprintf',
  'json.is_valid',
  'regex.split',
  'yaml.is_valid',
  'yaml.marshal',
  'yaml.unmarshal',
]);

/**
 * Host builtins that take integers beyond 2^53 exactly (nanosecond timestamps, big integers to format).
 * opa-wasm reads host-call arguments with JSON.parse, which rounds them; around calls of these builtins a
 * compiled module dumps such integers as `{"$guardian.exact_integer": "<digits>"}` (runtime dump.ts) and
 * the adapter hands them to the implementation as bigint.
 */
export const exactIntegerBuiltins: ReadonlySet<string> = new Set([
  'format_int',
  'internal.template_string',
  'json.marshal',
  'json.marshal_with_options',
  'sprintf',
  'time.add_date',
  'time.clock',
  'time.date',
  'time.diff',
  'time.format',
  'time.weekday',
]);

/**
 * Of exactIntegerBuiltins, those that print a decimal as OPA holds it, as written (json.marshal writes it;
 * sprintf's `%v` of a composite prints it; past the double range sprintf hands Go its text): the module marks
 * decimals like exact integers and the adapter passes them as DecimalText; the other builtins get the double.
 */
export const numberTextBuiltins: ReadonlySet<string> = new Set([
  'internal.template_string',
  'json.marshal',
  'json.marshal_with_options',
  'sprintf',
]);

/**
 * Host builtins that print sets in Rego syntax (`{"a", "b"}`, `set()`), as OPA's sprintf and print print a
 * set operand. opa-wasm hands arguments over as JSON, where a set is an array; around calls of these builtins
 * a compiled module dumps sets as `{"$guardian.set": [...]}` (runtime dump.ts) and the adapter hands them
 * to the implementation as RegoSet.
 */
export const regoSetBuiltins: ReadonlySet<string> = new Set(['sprintf', 'internal.print', 'internal.template_string']);

/** The key of the object a set argument is dumped as (see regoSetBuiltins). */
export const SET_KEY = '$guardian.set';

/** The key of the object an exact integer argument is dumped as (see exactIntegerBuiltins). */
export const EXACT_INTEGER_KEY = '$guardian.exact_integer';

/** The name under which a Wasm module should import builtin `name` so opa-wasm calls our version. */
export function hostBuiltinName(name: string): string {
  return opaWasmShadowedBuiltins.has(name) ? `guardian.${name}` : name;
}

/**
 * The host builtin the planner lowers `net.cidr_contains_matches(a, b)` to (declarations.ts
 * plannerBuiltinDecls): opa-wasm hands a set over as an array and a non-string object key as its JSON text,
 * but OPA's result indexes a set operand by its elements and an object by its keys.
 */
export const CIDR_CONTAINS_MATCHES_HOST = 'internal.cidr_contains_matches';

/** The OPA builtin each planner-lowered host builtin stands for: its errors carry that name, as in OPA. */
export const loweredBuiltinNames: ReadonlyMap<string, string> = new Map([
  [CIDR_CONTAINS_MATCHES_HOST, 'net.cidr_contains_matches'],
]);
