import type { HostBuiltinContext } from './context.ts';

/**
 * A host builtin: receives the operands as opa-wasm decodes them (plain JSON), returns a JSON value,
 * `undefined` (= undefined in Rego), or a value containing `bigint`s (exact integers; the adapter
 * sends those to the Wasm module as raw JSON). Failures throw `BuiltinError`.
 */
export type HostImpl = (args: unknown[], ctx: HostBuiltinContext) => unknown;

export type HostImpls = Record<string, HostImpl>;
