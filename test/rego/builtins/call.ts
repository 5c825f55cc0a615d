// Calls host builtins the way opa-wasm does (plain JSON operands) and decodes raw-JSON results.
import {
  createHostBuiltins,
  type HostBuiltinContext,
  type HostBuiltinOptions,
} from '../../../src/rego/builtins/index.ts';

/** Raw JSON bytes (exact big integers) → JSON value with integers beyond 2^53 as bigint. */
export function decodeResult(v: unknown): unknown {
  if (!(v instanceof ArrayBuffer)) return v;
  const text = new TextDecoder().decode(v);
  const marked = text.replace(/(^|[:[,]\s*)(-?\d{16,})(?=\s*([,\]}]|$))/g, '$1"__bigint__:$2"');
  return JSON.parse(marked, (_k, x) =>
    typeof x === 'string' && x.startsWith('__bigint__:') ? BigInt(x.slice(11)) : x,
  );
}

export function builtins(options: HostBuiltinOptions | HostBuiltinContext = { strict: true }) {
  const fns = createHostBuiltins(options);
  return (name: string, ...args: unknown[]): unknown => {
    const fn = fns[name];
    if (!fn) throw new Error(`no host builtin ${name}`);
    return decodeResult(fn(...args));
  };
}

/** Strict-mode caller: builtin errors throw `eval_*_error: name: message`. */
export const call = builtins({ strict: true, print: () => {} });
