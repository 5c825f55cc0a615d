// Custom builtins: JavaScript implementations the host supplies for the builtins a capabilities document
// declares (builtins/capabilities.ts readCapabilities). A compiled module calls them through its
// opa_builtinN imports by the names in its `builtins()` export, exactly as opa-wasm's `customBuiltins`.
import { builtinDecls, plannerBuiltinDecls, refusedBuiltins } from './declarations.ts';
import { wasmJson } from '../json.ts';
import { opaWasmShadowedBuiltins } from './host/names.ts';

/** Builtin implementations as opa-wasm `customBuiltins`: name → function of the JSON arguments. */
export type CustomBuiltins = Record<string, (...args: unknown[]) => unknown>;

/** Names a custom builtin may not take: the toolchain's builtins and the aliases its host builtins use. */
function toolchainName(name: string): boolean {
  if (builtinDecls.has(name) || plannerBuiltinDecls.has(name)) return true;
  return name.startsWith('guardian.') && opaWasmShadowedBuiltins.has(name.slice('guardian.'.length));
}

/**
 * `host` (hostBuiltins()) plus the `custom` implementations. Each custom builtin is called as opa-wasm
 * calls it: with the arguments as JSON values, its return value (undefined: the call is undefined; bigints
 * as exact integers) serialised back, and anything it throws propagating unchanged out of `policy.evaluate`, as from
 * opa-wasm's own `customBuiltins`. Throws a TypeError for an entry that is not a function, or that names a
 * builtin the toolchain implements (a policy's meaning must not depend on the host that loads it) or refuses.
 */
export function withCustomBuiltins(host: CustomBuiltins, custom: Readonly<Record<string, unknown>>): CustomBuiltins {
  const out: CustomBuiltins = { ...host };
  for (const [name, impl] of Object.entries(custom)) {
    if (typeof impl !== 'function') throw new TypeError(`custom builtin ${name}: expected a function`);
    if (toolchainName(name)) throw new TypeError(`custom builtin ${name}: the toolchain implements ${name}`);
    // A host must not bring back what the Guardian refuses (a policy calling it would then load and serve).
    const refused = refusedBuiltins.get(name);
    if (refused !== undefined) throw new TypeError(`custom builtin ${name}: the Guardian refuses ${name}: ${refused}`);
    out[name] = (...args: unknown[]): unknown => {
      const result: unknown = impl(...args);
      // opa-wasm is synchronous: a Promise would be serialised as {} and decide on a value nobody returned.
      if (typeof (result as { then?: unknown } | null)?.then === 'function')
        throw new TypeError(`custom builtin ${name} returned a Promise; builtins must return their value`);
      // A bigint (an integer past 2^53, e.g. an IPv6 address count) reaches the module as its exact digits.
      return wasmJson(result);
    };
  }
  return out;
}
