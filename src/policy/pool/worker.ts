// Runs WasmPolicyEngines inside a worker thread (see pool.ts), one per bundle version the pool keeps loaded.
// Protocol: the parent sends `{type:'load', version, bundle, options}` (answered `{type:'loaded', version,
// revision}` or `{type:'load-error', version, message}`), `{type:'unload', version}`, and
// `{type:'eval', id, version, input, entrypoint, now}` (answered `{type:'result', id, ok, …}`). An evaluation names
// the version it runs on, so a swap in the parent never changes the version of an evaluation already sent.
import { parentPort } from 'node:worker_threads';
import {
  createWasmPolicyEngine,
  PolicyEvaluationError,
  type WasmBundleParts,
  type WasmPolicyEngine,
} from '../engine.ts';
import type { PolicyInput } from '../types.ts';

export interface WorkerEngineOptions {
  entrypoint?: string;
  maxInputBytes?: number;
  timeoutMs?: number;
  maxMemoryPages?: number;
  revision?: string;
}

interface LoadMessage {
  type: 'load';
  version: number;
  /** A tarball or bare module, or extracted parts (structured clone keeps their Uint8Arrays). */
  bundle: Uint8Array | WasmBundleParts;
  options: WorkerEngineOptions;
}
interface UnloadMessage {
  type: 'unload';
  version: number;
}
interface EvalMessage {
  type: 'eval';
  id: number;
  version: number;
  input: PolicyInput;
  entrypoint?: string;
  now: string;
}

const engines = new Map<number, WasmPolicyEngine>();
const port = parentPort!;

port.on('message', (msg: LoadMessage | UnloadMessage | EvalMessage) => {
  if (msg.type === 'load') {
    createWasmPolicyEngine({ bundle: msg.bundle, ...msg.options }).then(
      (e) => {
        engines.set(msg.version, e);
        port.postMessage({ type: 'loaded', version: msg.version, revision: e.revision });
      },
      (err: unknown) =>
        port.postMessage({
          type: 'load-error',
          version: msg.version,
          message: err instanceof Error ? err.message : String(err),
        }),
    );
    return;
  }
  if (msg.type === 'unload') {
    engines.delete(msg.version);
    return;
  }
  const e = engines.get(msg.version);
  if (!e) {
    port.postMessage({
      type: 'result',
      id: msg.id,
      ok: false,
      code: 'module_aborted',
      message: `policy version ${msg.version} is not loaded in this worker`,
    });
    return;
  }
  e.evaluate(msg.input, { ...(msg.entrypoint ? { entrypoint: msg.entrypoint } : {}), now: new Date(msg.now) }).then(
    (r) =>
      port.postMessage({
        type: 'result',
        id: msg.id,
        ok: true,
        decision: r.decision,
        revision: r.revision,
        durationMs: r.durationMs,
      }),
    (err: unknown) =>
      port.postMessage({
        type: 'result',
        id: msg.id,
        ok: false,
        code: err instanceof PolicyEvaluationError ? err.code : 'module_aborted',
        message: err instanceof Error ? err.message : String(err),
      }),
  );
});
