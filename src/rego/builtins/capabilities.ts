// OPA's capabilities document (`opa capabilities --current` format): what a bundle may use when it
// is compiled for the Guardian. Tools such as `opa check --capabilities` accept this file.
import { builtinDecls } from './declarations.ts';
import type { FunctionType } from './types.ts';

export interface CapabilitiesBuiltin {
  name: string;
  decl: FunctionType;
  infix?: string;
  relation?: boolean;
  nondeterministic?: boolean;
  deprecated?: boolean;
}

export interface CapabilitiesDocument {
  builtins: CapabilitiesBuiltin[];
  features: string[];
  wasm_abi_versions: { version: number; minor_version: number }[];
}

/** Language features of the Guardian's Rego toolchain (Rego v1 only), in OPA's feature names. */
export const regoFeatures: readonly string[] = ['keywords_in_refs', 'rego_v1'];

export function capabilitiesDocument(): CapabilitiesDocument {
  const builtins = [...builtinDecls.values()]
    .sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0))
    .map((b) => {
      const entry: CapabilitiesBuiltin = { name: b.name, decl: b.decl };
      if (b.infix) entry.infix = b.infix;
      if (b.relation) entry.relation = true;
      if (b.nondeterministic) entry.nondeterministic = true;
      if (b.deprecated) entry.deprecated = true;
      return entry;
    });
  return { builtins, features: [...regoFeatures], wasm_abi_versions: [{ version: 1, minor_version: 3 }] };
}
