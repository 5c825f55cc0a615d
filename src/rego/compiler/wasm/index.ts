// Wasm backend: links an OPA IR plan (src/rego/ir/types.ts) into an OPA-ABI 1.3 module
// (design/opa-wasm-abi.md) loadable by @open-policy-agent/opa-wasm.
export { linkPolicyWasm, WasmLinkError, type LinkOptions } from './link.ts';
export { NATIVE_BUILTINS, type NativeBuiltin } from './native-builtins.ts';
