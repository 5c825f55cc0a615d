// OPA's capabilities document (`opa capabilities --current` format): what a bundle may use when it
// is compiled for the Guardian. Tools such as `opa check --capabilities` accept this file.
import { isObject } from '../json.ts';
import { builtinDecls, plannerBuiltinDecls, refusedBuiltins } from './declarations.ts';
import { anyOf, fn, setOf, tAny, type BuiltinDeclaration, type FunctionType, type OpaType } from './types.ts';

/** A `builtins` entry of the document: a builtin's declaration as OPA writes it. */
export type CapabilitiesBuiltin = BuiltinDeclaration;

export interface CapabilitiesDocument {
  builtins: CapabilitiesBuiltin[];
  features: string[];
  wasm_abi_versions: { version: number; minor_version: number }[];
}

/** Language features of the Guardian's Rego toolchain (Rego v1 only), in OPA's feature names. */
export const regoFeatures: readonly string[] = ['keywords_in_refs', 'rego_v1', 'template_strings'];

/** OPA's feature name for template strings (`$"..."`); a document without it refuses them, as OPA does. */
export const TEMPLATE_STRINGS_FEATURE = 'template_strings';

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

/** The builtins a compilation may call, by OPA name. */
export type BuiltinTable = ReadonlyMap<string, BuiltinDeclaration>;

/**
 * A capabilities document read for compilation (`opa build --capabilities`): the builtins it lists are the
 * only ones policies may call. Listed builtins the toolchain implements keep its declarations; the others
 * are custom builtins, type-checked against the document's `decl` and called on the host (opa-wasm
 * `customBuiltins`), as OPA's Wasm target calls every builtin it does not compile in.
 */
export interface Capabilities {
  builtins: BuiltinTable;
  /** Names of the custom builtins (listed, not implemented by the toolchain): the host supplies them. */
  custom: ReadonlySet<string>;
  /** The document's `features` (OPA's names); absent means all of the toolchain's (`regoFeatures`). */
  features?: ReadonlySet<string>;
  /**
   * The builtins the Guardian refuses that the document lists. `policy build` refuses them all the same; the
   * authoring tools defer only these to evaluation (CompileOptions.deferredRefused), as an unlisted builtin is not
   * available under the document at all.
   */
  refused: ReadonlySet<string>;
}

/** A capabilities document that cannot be used: the message says which entry and why. */
export class CapabilitiesError extends Error {
  override readonly name = 'CapabilitiesError';
}

/** OPA's type JSON (types.MarshalJSON); `name`/`description` of documented arguments are dropped. */
function readType(v: unknown, where: string, depth = 0): OpaType {
  if (depth > 32) throw new CapabilitiesError(`${where}: type nested too deeply`);
  if (!isObject(v) || typeof v.type !== 'string') throw new CapabilitiesError(`${where}: expected a type object`);
  const list = (x: unknown, what: string): OpaType[] => {
    if (!Array.isArray(x)) throw new CapabilitiesError(`${where}: ${what} must be an array`);
    return x.map((t, i) => readType(t, `${where}.${what}[${i}]`, depth + 1));
  };
  switch (v.type) {
    case 'null':
    case 'boolean':
    case 'number':
    case 'string':
      return { type: v.type };
    case 'any':
      return v.of === undefined ? tAny : anyOf(...list(v.of, 'of'));
    case 'array': {
      const out: OpaType = { type: 'array' };
      if (v.dynamic !== undefined) out.dynamic = readType(v.dynamic, `${where}.dynamic`, depth + 1);
      if (v.static !== undefined) out.static = list(v.static, 'static');
      return out;
    }
    case 'set':
      return setOf(readType(v.of ?? tAny, `${where}.of`, depth + 1));
    case 'object': {
      const out: OpaType = { type: 'object' };
      if (v.dynamic !== undefined) {
        if (!isObject(v.dynamic)) throw new CapabilitiesError(`${where}.dynamic: expected {key, value}`);
        out.dynamic = {
          key: readType(v.dynamic.key, `${where}.dynamic.key`, depth + 1),
          value: readType(v.dynamic.value, `${where}.dynamic.value`, depth + 1),
        };
      }
      if (v.static !== undefined) {
        if (!Array.isArray(v.static)) throw new CapabilitiesError(`${where}.static must be an array`);
        out.static = v.static.map((s, i) => {
          if (!isObject(s) || typeof s.key !== 'string')
            throw new CapabilitiesError(`${where}.static[${i}]: expected {key, value}`);
          return { key: s.key, value: readType(s.value, `${where}.static[${i}].value`, depth + 1) };
        });
      }
      return out;
    }
    default:
      throw new CapabilitiesError(`${where}: unknown type ${JSON.stringify(v.type)}`);
  }
}

function readDecl(v: unknown, where: string): FunctionType {
  if (!isObject(v) || v.type !== 'function') throw new CapabilitiesError(`${where}: expected a function type`);
  if (v.args !== undefined && !Array.isArray(v.args)) throw new CapabilitiesError(`${where}.args must be an array`);
  const args = (v.args as unknown[] | undefined)?.map((a, i) => readType(a, `${where}.args[${i}]`));
  const decl = fn(args, v.result === undefined ? undefined : readType(v.result, `${where}.result`));
  if (v.variadic !== undefined) decl.variadic = readType(v.variadic, `${where}.variadic`);
  return decl;
}

/** A builtin name as a call can spell it: dotted Rego identifiers (`custom.func`). */
const BUILTIN_NAME = /^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*$/;

/** Reads an OPA capabilities document (the JSON `opa capabilities` prints) for compilation. */
export function readCapabilities(doc: unknown): Capabilities {
  if (!isObject(doc)) throw new CapabilitiesError('capabilities: expected a JSON object');
  if (!Array.isArray(doc.builtins)) throw new CapabilitiesError('capabilities: builtins must be an array');
  if (doc.features !== undefined && (!Array.isArray(doc.features) || doc.features.some((f) => typeof f !== 'string')))
    throw new CapabilitiesError('capabilities: features must be an array of strings');
  const features = new Set<string>((doc.features as string[] | undefined) ?? []);
  const builtins = new Map<string, BuiltinDeclaration>();
  const custom = new Set<string>();
  const refused = new Set<string>();
  doc.builtins.forEach((b, i) => {
    const where = `capabilities: builtins[${i}]`;
    if (!isObject(b) || typeof b.name !== 'string') throw new CapabilitiesError(`${where}: expected {name, decl}`);
    if (!BUILTIN_NAME.test(b.name))
      throw new CapabilitiesError(`${where}: invalid builtin name ${JSON.stringify(b.name)}`);
    if (builtins.has(b.name)) throw new CapabilitiesError(`${where}: ${b.name} is listed twice`);
    // What the planner lowers an OPA builtin to is no builtin of its own: listing it would let policies call it.
    if (plannerBuiltinDecls.has(b.name))
      throw new CapabilitiesError(`${where}: ${b.name} is internal to the Guardian's toolchain`);
    const decl = readDecl(b.decl, `${where} (${b.name}).decl`);
    const ours = builtinDecls.get(b.name);
    if (ours) {
      builtins.set(b.name, ours);
      return;
    }
    // Refused builtins stay refused by `policy build` (the compile error says why); the authoring tools compile
    // the listed ones to calls that halt when reached.
    if (refusedBuiltins.has(b.name)) {
      refused.add(b.name);
      return;
    }
    if (decl.variadic) throw new CapabilitiesError(`${where}: custom builtin ${b.name} cannot be variadic`);
    // opa-wasm passes host builtins at most four arguments (opa_builtin0..4).
    if ((decl.args?.length ?? 0) > 4)
      throw new CapabilitiesError(`${where}: custom builtin ${b.name} takes more than 4 arguments`);
    const entry: BuiltinDeclaration = { name: b.name, decl };
    if (b.nondeterministic === true) entry.nondeterministic = true;
    builtins.set(b.name, entry);
    custom.add(b.name);
  });
  return { builtins, custom, features, refused };
}

/** Whether compiling with `capabilities` (none: the toolchain's own) allows template strings. */
export function allowsTemplateStrings(capabilities: Capabilities | undefined): boolean {
  return capabilities?.features?.has(TEMPLATE_STRINGS_FEATURE) ?? true;
}
