// OPA's builtin library for the Guardian's Rego toolchain: declarations (for the type checker and
// plan `static.builtin_funcs`), refused builtins, host JS implementations (opa-wasm customBuiltins)
// and the OPA capabilities document.
export type { BuiltinDeclaration, FunctionType, OpaType } from './types.ts';
export { builtinDecls, refusedBuiltins } from './declarations.ts';
export { refusedCallMessage } from './refused.ts';
export {
  createAuthoringHostBuiltins,
  createHostBuiltins,
  hostBuiltinName,
  hostImplementations,
  opaWasmShadowedBuiltins,
  exactJson,
  BUILTIN_ERROR_MARKER,
  HostBuiltinContext,
  BuiltinError,
  BuiltinTypeError,
  type HostBuiltinFunction,
  type HostBuiltinOptions,
  type BeginEvaluationOptions,
  type EvaluationInfo,
  type JsonValue,
} from './host/index.ts';
export {
  capabilitiesDocument,
  regoFeatures,
  type CapabilitiesDocument,
  type CapabilitiesBuiltin,
} from './capabilities.ts';
