// Entry for browser bundles (and any JavaScript host without Node built-ins): the platform-neutral toolchain
// API of ./portable.ts and the host builtins that need no Node built-in. The page supplies the runtime module
// bytes (runtime/runtime.wasm) to compilePolicyWasm; see docs/rego-toolchain.md.
import type { HostBuiltinContext, HostBuiltinOptions } from './builtins/host/context.ts';
import { createPortableHostBuiltins } from './builtins/host/portable.ts';
import type { CustomBuiltins } from './portable.ts';

export * from './portable.ts';
export { HostBuiltinContext } from './builtins/host/context.ts';
export type { BeginEvaluationOptions, EvaluationInfo, HostBuiltinOptions } from './builtins/host/context.ts';

/**
 * The portable host builtins as opa-wasm `customBuiltins`: numbers, strings, sprintf, regex, glob,
 * collections and time. A module calling another host builtin (crypto, JWT, encoding, net, uuid) fails
 * with opa-wasm's "not implemented" error when it calls it.
 */
export function hostBuiltins(ctx?: HostBuiltinContext | HostBuiltinOptions): CustomBuiltins {
  return createPortableHostBuiltins(ctx) as CustomBuiltins;
}
