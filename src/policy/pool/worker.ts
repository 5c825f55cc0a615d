// Runs WasmPolicyEngines inside a worker thread (see pool.ts), one per bundle version the pool keeps loaded,
// over src/worker-thread's protocol. An evaluation names the version it runs on, so a swap in the parent never
// changes the version of an evaluation already sent.
import { serveRequests } from '../../worker-thread/index.ts';
import {
  createWasmPolicyEngine,
  PolicyEvaluationError,
  type WasmBundleParts,
  type WasmPolicyEngine,
} from '../engine.ts';
import type { PolicyEvaluation, PolicyInput } from '../types.ts';

export interface WorkerEngineOptions {
  entrypoint?: string;
  maxInputBytes?: number;
  timeoutMs?: number;
  maxMemoryPages?: number;
  customBuiltinsModule?: string;
  revision?: string;
}

export type PolicyWorkerProtocol = {
  load: {
    /** A tarball or bare module, or extracted parts (structured clone keeps their Uint8Arrays). */
    request: { version: number; bundle: Uint8Array | WasmBundleParts; options: WorkerEngineOptions };
    response: { revision: string };
  };
  /** A notification: the version's engine is dropped. */
  unload: { request: { version: number }; response: null };
  eval: {
    request: { version: number; input: PolicyInput; entrypoint?: string; now: string };
    response: PolicyEvaluation;
  };
};

const engines = new Map<number, WasmPolicyEngine>();

serveRequests<PolicyWorkerProtocol>({
  async load({ version, bundle, options }) {
    const engine = await createWasmPolicyEngine({ bundle, ...options });
    engines.set(version, engine);
    return { revision: engine.revision };
  },
  unload({ version }) {
    engines.delete(version);
    return null;
  },
  async eval({ version, input, entrypoint, now }) {
    const engine = engines.get(version);
    if (!engine)
      throw new PolicyEvaluationError('module_aborted', `policy version ${version} is not loaded in this worker`);
    const r = await engine.evaluate(input, { ...(entrypoint ? { entrypoint } : {}), now: new Date(now) });
    return { decision: r.decision, revision: r.revision, durationMs: r.durationMs };
  },
});
