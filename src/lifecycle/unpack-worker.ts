// Runs unpackBundle (unpack.ts) in a worker thread for unpack-thread.ts. Protocol: the parent sends
// `{id, op: 'unpack', bytes, verification, options}`, `{id, op: 'manifest', bytes}` or `{id, op: 'ping'}`; the worker answers
// `{id, ok: true, result}` (for unpack the Wasm and data buffers are transferred, not copied; for manifest the
// result is the manifest) or `{id, ok: false, code?, message}`.
import { parentPort } from 'node:worker_threads';
import type { TransferListItem } from 'node:worker_threads';
import { LifecycleError } from './errors.ts';
import type { BundleVerificationConfig } from './signing.ts';
import { readBundleManifest, unpackBundle, type UnpackOptions } from './unpack.ts';

interface UnpackRequest {
  id: number;
  op: 'ping' | 'unpack' | 'manifest';
  bytes: Uint8Array;
  verification?: BundleVerificationConfig;
  options?: UnpackOptions;
}

const refusal = (id: number, err: unknown): object => ({
  id,
  ok: false,
  ...(err instanceof LifecycleError ? { code: err.code } : {}),
  message: err instanceof Error ? err.message : String(err),
});

const port = parentPort!;

port.on('message', (msg: UnpackRequest) => {
  if (msg.op === 'ping') {
    port.postMessage({ id: msg.id, ok: true, pong: true });
    return;
  }
  if (msg.op === 'manifest') {
    try {
      port.postMessage({ id: msg.id, ok: true, result: readBundleManifest(msg.bytes) });
    } catch (err) {
      port.postMessage(refusal(msg.id, err));
    }
    return;
  }
  unpackBundle(msg.bytes, msg.verification, msg.options).then(
    (result) => {
      const transfer: TransferListItem[] = result.parts
        ? [result.parts.wasm.buffer as ArrayBuffer, result.parts.dataJson.buffer as ArrayBuffer]
        : [];
      port.postMessage({ id: msg.id, ok: true, result }, transfer);
    },
    (err: unknown) => port.postMessage(refusal(msg.id, err)),
  );
});
