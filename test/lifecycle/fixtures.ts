// Lifecycle test fixtures: small real bundles (a hand-written OPA-ABI Wasm module returning a constant decision,
// packed by writeBundle), optionally with /smoke.json.
import { buildDecisionModule } from '../acs/fixtures/decision-module.ts';
import { writeBundle } from '../../src/rego/bundle/index.ts';
import type { Json } from '../../src/store/types.ts';

const modules = new Map<string, Uint8Array>();

/** A bundle whose acs/decision is `decision`; by default the decision's reasoning names the revision. */
export async function constantBundle(revision: string, options: { decision?: Json; smoke?: unknown; data?: Record<string, unknown>; extraFiles?: { path: string; text: string }[] } = {}): Promise<Uint8Array> {
  const decision = options.decision ?? { decision: 'allow', reasoning: `decided by ${revision}` };
  const key = JSON.stringify(decision);
  let wasm = modules.get(key);
  if (!wasm) {
    wasm = await buildDecisionModule({ constant: decision });
    modules.set(key, wasm);
  }
  const sources = [...(options.extraFiles ?? [])];
  if (options.smoke !== undefined) sources.push({ path: '/smoke.json', text: JSON.stringify(options.smoke) });
  return writeBundle({
    manifest: { revision, roots: [''], wasm: [{ entrypoint: 'acs/decision', module: '/policy.wasm' }] },
    wasm,
    data: options.data ?? { owner: revision },
    sources,
  });
}
