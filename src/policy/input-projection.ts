// Input projection: a bundle that declares in its manifest which input members its policies can read
// (`metadata.input_paths`, written by compileBundle with `recordInputPaths`) is sent only those members, so the
// engine serialises, and the module parses, only what a decision can depend on (docs/policy-authoring.md). The
// members are written in JSON.stringify's order and form, so a projected input is the full input's JSON text
// less the members no policy reads.
import { isPlainObject } from '../json.ts';
import type { BundleManifest } from '../rego/bundle/index.ts';
import { describeThrown, PolicyEvaluationError } from './errors.ts';
import { POLICY_PARAMS_JSON } from './types.ts';

/**
 * A trie of input paths: `true` keeps the whole member below it. ANY_KEY (a manifest path's `null`) stands for
 * every member of an object and every element of an array; a node's literal branches already include it
 * (merged when the trie is built), so a key needs one lookup.
 */
export type InputPathTrie = Map<string | typeof ANY_KEY, InputPathTrie | true>;
export const ANY_KEY = Symbol('any key');

/** What both tries keep: `true` absorbs anything. */
function mergeTries(a: InputPathTrie | true, b: InputPathTrie | true): InputPathTrie | true {
  if (a === true || b === true) return true;
  const out: InputPathTrie = new Map(a);
  for (const [key, below] of b) {
    const mine = out.get(key);
    out.set(key, mine === undefined ? below : mergeTries(mine, below));
  }
  return out;
}

/** Folds each node's wildcard branch into its literal branches, then does the same below. */
function spreadWildcards(node: InputPathTrie): InputPathTrie {
  const any = node.get(ANY_KEY);
  if (any !== undefined) {
    for (const [key, below] of node) if (key !== ANY_KEY) node.set(key, mergeTries(below, any));
  }
  for (const [key, below] of node) if (below !== true) node.set(key, spreadWildcards(below));
  return node;
}

/**
 * The input projection a bundle declares in manifest `metadata.input_paths` (compileBundle with
 * `recordInputPaths`): the input paths its policies can read, `null` for a dynamic key. Undefined ⇒ send the
 * whole input (bundles without the member, e.g. OPA's own, or a policy that reads `input` as a whole).
 */
export function inputPathTrie(manifest: BundleManifest): InputPathTrie | undefined {
  const paths = manifest.metadata?.input_paths;
  if (
    !Array.isArray(paths) ||
    !paths.every((p) => Array.isArray(p) && p.every((seg) => typeof seg === 'string' || seg === null))
  )
    return undefined;
  const root: InputPathTrie = new Map();
  for (const path of paths as (string | null)[][]) {
    if (path.length === 0) return undefined;
    let node = root;
    for (let i = 0; i < path.length; i++) {
      const key = path[i] ?? ANY_KEY;
      const existing = node.get(key);
      if (existing === true) break;
      if (i === path.length - 1) node.set(key, true);
      else {
        const next: InputPathTrie = existing ?? new Map();
        node.set(key, next);
        node = next;
      }
    }
  }
  return spreadWildcards(root);
}

/** `out[key] = value` that also keeps a member named `__proto__` as data (keys under a wildcard come from the input). */
function setMember(out: Record<string, unknown>, key: string, value: unknown): void {
  if (key === '__proto__')
    Object.defineProperty(out, key, { value, enumerable: true, writable: true, configurable: true });
  else out[key] = value;
}

/**
 * The members of `value` the trie names; a wildcard maps every member of an object and every element of an
 * array. Other values are kept as they are (a path into them is undefined in Rego anyway), and so are arrays
 * under a node without a wildcard (a string key into an array is undefined).
 */
function projectInput(value: unknown, trie: InputPathTrie): unknown {
  if (value === null || typeof value !== 'object') return value;
  const any = trie.get(ANY_KEY);
  if (Array.isArray(value))
    return any === undefined || any === true ? value : value.map((v: unknown) => projectInput(v, any));
  const source = value as Record<string, unknown>;
  const out: Record<string, unknown> = {};
  if (any === undefined) {
    for (const [key, below] of trie) {
      if (!Object.hasOwn(source, key)) continue;
      out[key as string] = below === true ? source[key as string] : projectInput(source[key as string], below);
    }
    return out;
  }
  for (const key of Object.keys(source)) {
    const below = trie.get(key) ?? any;
    setMember(out, key, below === true ? source[key] : projectInput(source[key], below));
  }
  return out;
}

/**
 * The input as JSON text, with `params` taken from the text the input carries (POLICY_PARAMS_JSON) instead of
 * stringified again, when params go to the module whole. Members are written in the order JSON.stringify of the
 * (projected) input would write them, with the same omissions (undefined values), so only the params text can
 * differ from it, and then only in key order (JCS sorts keys; Rego objects are unordered).
 */
function inputJson(input: unknown, trie: InputPathTrie | undefined): string | undefined {
  // A toJSON member would make JSON.stringify write something other than the members written here.
  const paramsJson =
    isPlainObject(input) && typeof input.toJSON !== 'function'
      ? (input as { [POLICY_PARAMS_JSON]?: unknown })[POLICY_PARAMS_JSON]
      : undefined;
  if (typeof paramsJson !== 'string' || (trie && (trie.get('params') !== true || trie.has(ANY_KEY))))
    return JSON.stringify(trie ? projectInput(input, trie) : input);
  const source = input as Record<string, unknown>;
  let text = '{';
  const keys = trie ? (trie.keys() as Iterable<string>) : Object.keys(source);
  for (const key of keys) {
    if (trie && !Object.hasOwn(source, key)) continue;
    const below = trie?.get(key);
    const value =
      key === 'params'
        ? paramsJson
        : JSON.stringify(below === undefined || below === true ? source[key] : projectInput(source[key], below));
    if (value === undefined) continue;
    text += (text.length > 1 ? ',' : '') + JSON.stringify(key) + ':' + value;
  }
  return text + '}';
}

/**
 * The input as JSON text for a module reading `inputPaths` (undefined: all of it). Only those members count
 * against `maxInputBytes`. Too large ⇒ rejected here when even one byte per UTF-16 code unit exceeds the limit;
 * the exact UTF-8 length is checked where the text is encoded (wasm-abi.ts).
 */
export function serialiseInput(input: unknown, inputPaths: InputPathTrie | undefined, maxInputBytes: number): string {
  let text: string | undefined;
  try {
    text = inputJson(input, inputPaths);
  } catch (err) {
    throw new PolicyEvaluationError('input_not_serialisable', `input is not JSON-serialisable: ${describeThrown(err)}`);
  }
  if (text === undefined) throw new PolicyEvaluationError('input_not_serialisable', 'input is not JSON-serialisable');
  if (text.length > maxInputBytes)
    throw new PolicyEvaluationError(
      'input_too_large',
      `input is at least ${text.length} bytes, limit ${maxInputBytes}`,
    );
  return text;
}
