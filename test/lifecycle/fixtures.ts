// Lifecycle test fixtures: small real bundles (a hand-written OPA-ABI Wasm module returning a constant decision,
// packed by writeBundle), optionally with /smoke.json.
import { buildDecisionModule } from '../acs/fixtures/decision-module.ts';
import { writeBundle } from '../../src/rego/bundle/index.ts';
import type { DurableStore, Json } from '../../src/store/types.ts';
import { createGuardian } from '../../src/acs/pipeline/index.ts';
import { cryptoEnvelopeSignatures } from '../../src/acs/signing/index.ts';
import { createSignatureRegistry } from '../../src/crypto/index.ts';
import { LifecycleNode, type LifecycleNodeOptions } from '../../src/lifecycle/index.ts';
import { startHttpServer, type RunningHttpServer } from '../../src/server/http.ts';
import { openStore } from '../../src/store/index.ts';

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

export interface LifecycleGuardian {
  store: DurableStore;
  node: LifecycleNode;
  server: RunningHttpServer;
  close(): Promise<void>;
}

/** A Guardian over real HTTP whose engine is a started LifecycleNode (in-memory PGlite, HMAC with `ikm`). */
export async function startLifecycleGuardian(ikm: Uint8Array, nodeOptions: Omit<LifecycleNodeOptions, 'store'>): Promise<LifecycleGuardian> {
  const store = await openStore({ inMemory: true });
  const node = new LifecycleNode({ store, ...nodeOptions });
  const engine = await node.start();
  const registry = createSignatureRegistry({ hmacIkm: ikm, workerPool: false });
  const guardian = createGuardian({ store, engine, signatures: cryptoEnvelopeSignatures(registry), onAudit: () => {} });
  const server = await startHttpServer(guardian, { port: 0 });
  return {
    store,
    node,
    server,
    async close() {
      await server.close();
      await node.stop();
      await registry.close();
      await store.close();
    },
  };
}
