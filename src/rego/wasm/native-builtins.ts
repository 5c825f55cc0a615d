// Builtins implemented natively in the runtime (pipeline.md): name → runtime export and arity.
// Everything else is dispatched to the host via opa_builtinN and listed in builtins().
export interface NativeBuiltin {
  export: string;
  arity: number;
  /**
   * The native code covers a subset of inputs and returns HOST_FALLBACK (1) for the rest, on which the
   * generated code calls the host implementation (so the builtin is also listed in builtins()).
   */
  hostFallback: boolean;
}

// Native with a host fallback (runtime/assembly/strings.ts): non-ASCII case mapping, sprintf beyond
// %s/%d/%v on strings and integers, replace and strings.replace_n with an empty pattern; to_number
// (runtime/assembly/builtins.ts) of strings other than plain decimals and of wrong types.
const withHostFallback = new Set(['lower', 'upper', 'replace', 'sprintf', 'strings.replace_n', 'to_number']);

const table: Array<[string, number]> = [
  ['equal', 2],
  ['neq', 2],
  ['lt', 2],
  ['lte', 2],
  ['gt', 2],
  ['gte', 2],
  ['plus', 2],
  ['minus', 2],
  ['mul', 2],
  ['div', 2],
  ['rem', 2],
  ['abs', 1],
  ['round', 1],
  ['ceil', 1],
  ['floor', 1],
  ['to_number', 1],
  ['and', 2],
  ['or', 2],
  ['union', 1],
  ['intersection', 1],
  ['internal.member_2', 2],
  ['internal.member_3', 3],
  ['count', 1],
  ['sum', 1],
  ['product', 1],
  ['max', 1],
  ['min', 1],
  ['sort', 1],
  ['is_number', 1],
  ['is_string', 1],
  ['is_boolean', 1],
  ['is_array', 1],
  ['is_set', 1],
  ['is_object', 1],
  ['is_null', 1],
  ['type_name', 1],
  ['object.get', 3],
  ['object.keys', 1],
  ['object.union', 2],
  ['object.union_n', 1],
  ['object.filter', 2],
  ['object.remove', 2],
  ['object.subset', 2],
  ['json.filter', 2],
  ['json.remove', 2],
  ['json.patch', 2],
  ['walk', 1],
  ['array.concat', 2],
  ['array.slice', 3],
  ['array.reverse', 1],
  ['startswith', 2],
  ['endswith', 2],
  ['contains', 2],
  ['concat', 2],
  ['split', 2],
  ['replace', 3],
  ['trim_prefix', 2],
  ['trim_suffix', 2],
  ['trim', 2],
  ['trim_space', 1],
  ['lower', 1],
  ['upper', 1],
  ['indexof', 2],
  ['substring', 3],
  ['sprintf', 2],
  ['strings.replace_n', 2],
];

export const NATIVE_BUILTINS: ReadonlyMap<string, NativeBuiltin> = new Map(
  table.map(([name, arity]) => [
    name,
    { export: `bi_${name.replace(/\./g, '_')}`, arity, hostFallback: withHostFallback.has(name) },
  ]),
);
