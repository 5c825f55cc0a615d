// Wasm backend: links an OPA IR plan (src/rego/ir/types.ts) into an OPA-ABI 1.3 module
// (OPA docs: Wasm; docs/wasm-abi.md) that the unmodified @open-policy-agent/opa-wasm loads.
//
//   const wasm = await linkPolicyWasm(policy, { strictBuiltinErrors: false });
//   const p = await loadPolicy(wasm, { initial: 5 }, createHostBuiltins());
//
// - Runtime: runtime/assembly (AssemblyScript, built once to runtime/runtime.wasm by `npm install`,
//   or on first use). Values: tagged structs; objects/sets sorted in OPA's total order.
// - Builtins in NATIVE_BUILTINS run inside the module; every other builtin of `static.builtin_funcs` is
//   called through opa_builtinN and listed by builtins() (opa-wasm-shadowed names under `guardian.*`,
//   see builtins/host hostBuiltinName). Natives marked `hostFallback` are listed too: the host answers
//   the inputs their native code leaves to it (runtime/assembly/strings.ts HOST_FALLBACK).
// - Runtime errors abort via opa_abort with `<file>:<row>:<col>: <code>: <message>`; opa-wasm throws
//   that string. Link errors throw WasmLinkError.
import type { Policy } from '../ir/types.ts';
import { linkPolicyModule, type LinkOptions } from './link.ts';
import { loadRuntimeWasm, WASM_NAMES } from './runtime.ts';

export { linkPolicyModule, WasmLinkError, type LinkOptions } from './link.ts';

/** Links a plan onto `options.runtimeWasm`, else the shipped runtime read from disk (Node). */
export async function linkPolicyWasm(policy: Policy, options: LinkOptions = {}): Promise<Uint8Array> {
  if (options.runtimeWasm) return linkPolicyModule(options.runtimeWasm, policy, options);
  return linkPolicyModule(await loadRuntimeWasm(), policy, { ...options, functionNames: WASM_NAMES });
}
export { NATIVE_BUILTINS, type NativeBuiltin } from './native-builtins.ts';
