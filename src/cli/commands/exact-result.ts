// What `guardian policy eval` prints is the module's result with numbers as the module wrote them: OPA prints
// the number it computed (`9007199254740993`, `1e400`), and a JSON.parse into doubles would print another.
import type { LoadedPolicy } from '@open-policy-agent/opa-wasm';
import { parse, stringify } from 'lossless-json';
import { exactJson } from '../../rego/json.ts';

/** The Guardian bounds a step's input; the CLI evaluates whatever input file its user gives it. */
const NO_INPUT_LIMIT = Number.POSITIVE_INFINITY;

/** A JSON value whose numbers are kept as their text (lossless-json's LosslessNumber). */
export type ExactJson = unknown;

/** Evaluates `entrypoint` and returns its result set with exact numbers. */
export async function evaluateExact(policy: LoadedPolicy, entrypoint: string, input: unknown): Promise<ExactJson[]> {
  // Loaded on demand, as the toolchain is everywhere in the CLI: `policy --help` must not load opa-wasm.
  const [{ evaluateToJsonText }, { atHostCallSite }] = await Promise.all([
    import('../../policy/wasm-abi.ts'),
    import('../../rego/portable.ts'),
  ]);
  const id = (policy.entrypoints as Record<string, number>)[entrypoint];
  if (id === undefined) throw new Error(`entrypoint ${entrypoint} is not valid in this instance`);
  const text = input === undefined ? undefined : exactJson(input);
  let json: string;
  try {
    json = evaluateToJsonText(policy, text, id, NO_INPUT_LIMIT);
  } catch (e) {
    throw atHostCallSite(policy, e);
  }
  return parse(json) as ExactJson[];
}

/** Pretty JSON (two spaces) with each number printed as the module wrote it. */
export function printExact(value: ExactJson): string {
  return `${stringify(value, null, 2)}\n`;
}
