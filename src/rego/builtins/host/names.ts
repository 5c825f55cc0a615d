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

/** The name under which a Wasm module should import builtin `name` so opa-wasm calls our version. */
export function hostBuiltinName(name: string): string {
  return opaWasmShadowedBuiltins.has(name) ? `guardian.${name}` : name;
}
