// Runs unpackBundle (unpack.ts) in a worker thread for unpack-thread.ts, over src/worker-thread's protocol. An
// unpacked bundle's Wasm and data buffers are transferred to the parent, not copied.
import type { TransferListItem } from 'node:worker_threads';
import type { BundleManifest } from '../rego/bundle/index.ts';
import { TransferredReply, serveRequests } from '../worker-thread/index.ts';
import type { BundleVerificationConfig } from './signing.ts';
import { readBundleManifest, unpackBundle, type UnpackedBundle, type UnpackOptions } from './unpack.ts';

export type UnpackWorkerProtocol = {
  /** Answered once the worker's modules are loaded (warm-up). */
  ping: { request: null; response: null };
  unpack: {
    request: { bytes: Uint8Array; verification?: BundleVerificationConfig; options?: UnpackOptions };
    response: UnpackedBundle;
  };
  manifest: { request: { bytes: Uint8Array }; response: BundleManifest };
};

serveRequests<UnpackWorkerProtocol>({
  ping: () => null,
  manifest: ({ bytes }) => readBundleManifest(bytes),
  async unpack({ bytes, verification, options }) {
    const result = await unpackBundle(bytes, verification, options);
    const transfer: TransferListItem[] = result.parts
      ? [result.parts.wasm.buffer as ArrayBuffer, result.parts.dataJson.buffer as ArrayBuffer]
      : [];
    return new TransferredReply(result, transfer);
  },
});
