// The builtin library on Node: every host implementation (./portable.ts holds the ones that need no Node
// built-in) behind the opa-wasm adapter (./adapter.ts).
import { adaptHostImplementations, type HostBuiltinFunction } from './adapter.ts';
import type { HostBuiltinContext, HostBuiltinOptions } from './context.ts';
import { cryptoBuiltins } from './crypto.ts';
import { deprecatedBuiltins } from './deprecated.ts';
import { encodingBuiltins } from './encoding.ts';
import { jsonSchemaBuiltins } from './jsonschema.ts';
import { jwtBuiltins } from './jwt.ts';
import { miscBuiltins } from './misc.ts';
import { netBuiltins } from './net.ts';
import { portableHostImplementations } from './portable.ts';
import type { HostImpls } from './registry.ts';
import { refusedBuiltinStandIns } from '../refused.ts';

/** Every host implementation, keyed by OPA builtin name. */
export const hostImplementations: Readonly<HostImpls> = Object.freeze({
  ...portableHostImplementations,
  ...encodingBuiltins,
  ...cryptoBuiltins,
  ...netBuiltins,
  ...miscBuiltins,
  ...jwtBuiltins,
  ...jsonSchemaBuiltins,
  ...deprecatedBuiltins,
});

export { hostBuiltinName, opaWasmShadowedBuiltins } from './names.ts';
export {
  adaptHostImplementations,
  BUILTIN_ERROR_MARKER,
  type HostBuiltinFunction,
} from './adapter.ts';
export { exactJson } from '../../json.ts';
export { createPortableHostBuiltins, portableHostImplementations } from './portable.ts';

/**
 * Host implementations for opa-wasm's `customBuiltins`. Pass a `HostBuiltinContext` to control
 * the clock, seed and print sink per evaluation (`ctx.beginEvaluation({ now, seed, requestId })`),
 * or options (a context is created).
 */
export function createHostBuiltins(ctx?: HostBuiltinContext | HostBuiltinOptions): Record<string, HostBuiltinFunction> {
  return adaptHostImplementations(hostImplementations, ctx);
}

/**
 * As createHostBuiltins, plus the refused builtins' stand-ins, which halt every call (../refused.ts): the
 * authoring tools' table, never the Guardian's (a module importing a refused builtin does not load there).
 */
export function createAuthoringHostBuiltins(
  ctx?: HostBuiltinContext | HostBuiltinOptions,
): Record<string, HostBuiltinFunction> {
  return adaptHostImplementations({ ...hostImplementations, ...refusedBuiltinStandIns }, ctx);
}

export { HostBuiltinContext } from './context.ts';
export type { BeginEvaluationOptions, EvaluationInfo, HostBuiltinOptions } from './context.ts';
export { BuiltinError, BuiltinTypeError, type JsonValue } from './values.ts';
