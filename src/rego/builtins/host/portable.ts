// The host builtins that need no Node built-in, for JavaScript hosts without them (a browser page):
// numbers, strings, sprintf, regex (re2js), glob, collections and time. Encoding, crypto, JWT, net and the
// seeded/uuid builtins use node:crypto, node:net or Buffer and come with the Node library (./index.ts) only.
import { adaptHostImplementations, type HostBuiltinFunction } from './adapter.ts';
import { collectionBuiltins } from './collections.ts';
import type { HostBuiltinContext, HostBuiltinOptions } from './context.ts';
import { globBuiltins } from './glob.ts';
import { numberBuiltins } from './numbers.ts';
import { regexBuiltins } from './regex.ts';
import type { HostImpls } from './registry.ts';
import { sprintfBuiltins } from './sprintf.ts';
import { stringBuiltins } from './strings.ts';
import { timeBuiltins } from './time.ts';

export const portableHostImplementations: Readonly<HostImpls> = Object.freeze({
  ...numberBuiltins,
  ...stringBuiltins,
  ...sprintfBuiltins,
  ...regexBuiltins,
  ...globBuiltins,
  ...collectionBuiltins,
  ...timeBuiltins,
});

/** The portable host builtins as opa-wasm `customBuiltins` (same adapter as createHostBuiltins). */
export function createPortableHostBuiltins(
  ctx?: HostBuiltinContext | HostBuiltinOptions,
): Record<string, HostBuiltinFunction> {
  return adaptHostImplementations(portableHostImplementations, ctx);
}
