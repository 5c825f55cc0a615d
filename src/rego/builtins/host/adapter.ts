// The opa-wasm adapter: every host builtin wrapped with OPA's error semantics (strict → abort with
// `eval_builtin_error: <name>: <msg>`, otherwise undefined) and exact-integer result encoding.
import { HostBuiltinContext, type HostBuiltinOptions } from './context.ts';
import {
  EXACT_INTEGER_KEY,
  exactIntegerBuiltins,
  hostBuiltinName,
  loweredBuiltinNames,
  numberTextBuiltins,
  opaWasmShadowedBuiltins,
  regoSetBuiltins,
  SET_KEY,
} from './names.ts';
import type { HostImpls } from './registry.ts';
import { wasmJson } from '../../json.ts';
import { BuiltinError, BuiltinHaltError, DecimalText, RegoSet } from './values.ts';

/**
 * Key of the object a strict-mode host builtin returns instead of throwing when the context's
 * `strictErrors` is 'marker' (no OPA builtin returns an object with this key).
 */
export const BUILTIN_ERROR_MARKER = '$guardian_builtin_error';

export type HostBuiltinFunction = (...args: unknown[]) => unknown;

/**
 * Arguments with the numbers a compiled module marked (names.ts exactIntegerBuiltins): integers as bigint,
 * decimals beyond the double range as DecimalText for `keepText` builtins, else as the double.
 */
function exactIntegers(v: unknown, keepText: boolean, sets = false): unknown {
  if (Array.isArray(v)) return v.map((x) => exactIntegers(x, keepText, sets));
  if (v === null || typeof v !== 'object') return v;
  const entries = Object.entries(v);
  if (entries.length === 1 && entries[0][0] === EXACT_INTEGER_KEY && typeof entries[0][1] === 'string') {
    const text = entries[0][1];
    if (/^-?\d+$/.test(text)) return BigInt(text);
    return keepText ? new DecimalText(text) : Number(text);
  }
  // Sets dumped as {"$guardian.set": [...]} around calls of regoSetBuiltins.
  if (sets && entries.length === 1 && entries[0][0] === SET_KEY && Array.isArray(entries[0][1]))
    return new RegoSet(entries[0][1].map((x) => exactIntegers(x, keepText, sets)));
  return Object.fromEntries(entries.map(([k, x]) => [k, exactIntegers(x, keepText, sets)]));
}

/**
 * The given host implementations for opa-wasm's `customBuiltins`. Pass a `HostBuiltinContext` to control
 * the clock, seed and print sink per evaluation (`ctx.beginEvaluation({ now, seed, requestId })`),
 * or options (a context is created).
 */
export function adaptHostImplementations(
  implementations: Readonly<HostImpls>,
  ctx?: HostBuiltinContext | HostBuiltinOptions,
): Record<string, HostBuiltinFunction> {
  const context = ctx instanceof HostBuiltinContext ? ctx : new HostBuiltinContext(ctx);
  const out: Record<string, HostBuiltinFunction> = {};
  for (const [name, impl] of Object.entries(implementations)) {
    const sets = regoSetBuiltins.has(name);
    const exact = exactIntegerBuiltins.has(name) || sets;
    const keepText = numberTextBuiltins.has(name);
    const opaName = loweredBuiltinNames.get(name) ?? name;
    const fn: HostBuiltinFunction = (...args) => {
      let result: unknown;
      try {
        result = impl(exact ? (args.map((a) => exactIntegers(a, keepText, sets)) as typeof args) : args, context);
      } catch (e) {
        if (e instanceof BuiltinHaltError) {
          const message = `${e.code}: ${e.message}`;
          if (context.strict && context.strictErrors === 'marker') return { [BUILTIN_ERROR_MARKER]: message };
          throw new Error(message);
        }
        const err = e instanceof BuiltinError ? e : new BuiltinError(e instanceof Error ? e.message : String(e));
        if (context.strict) {
          const message = `${err.code}: ${opaName}: ${err.message}`;
          if (context.strictErrors === 'marker') return { [BUILTIN_ERROR_MARKER]: message };
          throw new Error(message);
        }
        context.reportSuppressed(opaName, err);
        return undefined;
      }
      // Integers past 2^53 (bigint) and DecimalText reach the module as JSON text.
      return wasmJson(result);
    };
    out[name] = fn;
    if (opaWasmShadowedBuiltins.has(name)) out[hostBuiltinName(name)] = fn;
  }
  return out;
}
