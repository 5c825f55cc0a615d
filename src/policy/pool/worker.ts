// Runs one WasmPolicyEngine inside a worker thread (see pool.ts). Protocol: the parent sends
// `{type:'init', bundle, options}` once, then `{type:'eval', id, input, entrypoint, now}`; the worker answers
// `{type:'ready', revision}` / `{type:'init-error', message}` and `{type:'result', id, ok, …}`.
import { parentPort } from 'node:worker_threads';
import { createWasmPolicyEngine, PolicyEvaluationError, type WasmPolicyEngine } from '../engine.ts';
import type { PolicyInput } from '../types.ts';

interface InitMessage {
  type: 'init';
  bundle: Uint8Array;
  options: { entrypoint?: string; maxInputBytes?: number; timeoutMs?: number; maxMemoryPages?: number; revision?: string };
}
interface EvalMessage {
  type: 'eval';
  id: number;
  input: PolicyInput;
  entrypoint?: string;
  now: string;
}

let engine: WasmPolicyEngine | undefined;
const port = parentPort!;

port.on('message', (msg: InitMessage | EvalMessage) => {
  if (msg.type === 'init') {
    createWasmPolicyEngine({ bundle: msg.bundle, ...msg.options }).then(
      (e) => {
        engine = e;
        port.postMessage({ type: 'ready', revision: e.revision });
      },
      (err: unknown) => port.postMessage({ type: 'init-error', message: err instanceof Error ? err.message : String(err) }),
    );
    return;
  }
  const e = engine;
  if (!e) {
    port.postMessage({ type: 'result', id: msg.id, ok: false, code: 'module_aborted', message: 'worker engine not ready' });
    return;
  }
  e.evaluate(msg.input, { ...(msg.entrypoint ? { entrypoint: msg.entrypoint } : {}), now: new Date(msg.now) }).then(
    (r) => port.postMessage({ type: 'result', id: msg.id, ok: true, decision: r.decision, revision: r.revision, durationMs: r.durationMs }),
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
