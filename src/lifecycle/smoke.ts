// Smoke inputs shipped in a bundle (`/smoke.json`, docs/bundle-lifecycle.md): evaluated on the candidate before it
// goes live; any failing case refuses the activation and the old version stays in force.
import { isDeepStrictEqual } from 'node:util';
import type { Bundle } from '../rego/bundle/index.ts';
import type { WasmPolicyEngine } from '../policy/engine.ts';
import { LifecycleError } from './errors.ts';

export const SMOKE_FILE = '/smoke.json';

export interface SmokeCase {
  name: string;
  /** Default: the engine's default entrypoint. */
  entrypoint?: string;
  input: unknown;
  /** The result must contain these members (deep equality per member); omitted: any defined result passes. */
  expect?: Record<string, unknown>;
  /** When true the entrypoint must be undefined for this input. */
  expect_undefined?: boolean;
}

export function readSmokeCases(bundle: Pick<Bundle, 'files'>): SmokeCase[] {
  const file = bundle.files.find((f) => f.path === SMOKE_FILE);
  if (!file) return [];
  let doc: unknown;
  try {
    doc = JSON.parse(new TextDecoder().decode(file.bytes));
  } catch (e) {
    throw new LifecycleError('smoke_failed', `${SMOKE_FILE}: invalid JSON: ${(e as Error).message}`);
  }
  const cases = (doc as { cases?: unknown })?.cases;
  if (!Array.isArray(cases)) throw new LifecycleError('smoke_failed', `${SMOKE_FILE}: expected {"cases": [...]}`);
  return cases.map((c, i) => {
    const sc = c as SmokeCase;
    if (!sc || typeof sc !== 'object' || !('input' in sc))
      throw new LifecycleError('smoke_failed', `${SMOKE_FILE}: case ${i} needs an input`);
    if (sc.expect !== undefined && (sc.expect === null || typeof sc.expect !== 'object' || Array.isArray(sc.expect))) {
      throw new LifecycleError('smoke_failed', `${SMOKE_FILE}: case ${i}: expect must be an object`);
    }
    return { ...sc, name: typeof sc.name === 'string' ? sc.name : `case ${i}` };
  });
}

/** Runs every case; throws LifecycleError('smoke_failed') naming the first failing case and why. */
export async function runSmokeCases(engine: WasmPolicyEngine, cases: SmokeCase[]): Promise<number> {
  for (const c of cases) {
    let value: unknown;
    try {
      ({ value } = await engine.evaluateValue(c.input, c.entrypoint ? { entrypoint: c.entrypoint } : undefined));
    } catch (e) {
      throw new LifecycleError(
        'smoke_failed',
        `smoke case ${JSON.stringify(c.name)}: evaluation failed: ${(e as Error).message}`,
      );
    }
    if (c.expect_undefined) {
      if (value !== undefined)
        throw new LifecycleError(
          'smoke_failed',
          `smoke case ${JSON.stringify(c.name)}: expected undefined, got ${JSON.stringify(value)}`,
        );
      continue;
    }
    if (value === undefined)
      throw new LifecycleError('smoke_failed', `smoke case ${JSON.stringify(c.name)}: result is undefined`);
    for (const [k, want] of Object.entries(c.expect ?? {})) {
      const got = value !== null && typeof value === 'object' ? (value as Record<string, unknown>)[k] : undefined;
      if (!isDeepStrictEqual(got, want)) {
        throw new LifecycleError(
          'smoke_failed',
          `smoke case ${JSON.stringify(c.name)}: ${k} is ${JSON.stringify(got)}, expected ${JSON.stringify(want)}`,
        );
      }
    }
  }
  return cases.length;
}
