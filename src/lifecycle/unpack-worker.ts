// Runs unpackBundle (unpack.ts) in a worker thread for unpack-thread.ts. Protocol: the parent sends
// `{id, bytes, verification}`; the worker answers `{id, ok: true, result}` (the Wasm and data buffers transferred,
// not copied) or `{id, ok: false, code?, message}`.
import { parentPort } from 'node:worker_threads';
import type { TransferListItem } from 'node:worker_threads';
import { LifecycleError } from './errors.ts';
import type { BundleVerificationConfig } from './signing.ts';
import { unpackBundle } from './unpack.ts';

interface UnpackRequest {
  id: number;
  bytes: Uint8Array;
  verification?: BundleVerificationConfig;
}

const port = parentPort!;

port.on('message', (msg: UnpackRequest) => {
  unpackBundle(msg.bytes, msg.verification).then(
    (result) => {
      const transfer: TransferListItem[] = result.parts ? [result.parts.wasm.buffer as ArrayBuffer, result.parts.dataJson.buffer as ArrayBuffer] : [];
      port.postMessage({ id: msg.id, ok: true, result }, transfer);
    },
    (err: unknown) =>
      port.postMessage({
        id: msg.id,
        ok: false,
        ...(err instanceof LifecycleError ? { code: err.code } : {}),
        message: err instanceof Error ? err.message : String(err),
      }),
  );
});
