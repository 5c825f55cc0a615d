// Bundle loading: a bundle tarball (read by src/rego/bundle: size limits, data mounts, manifest checks), a bare
// Wasm module, or parts already extracted (src/lifecycle unpacks in a worker thread) become a compiled module,
// its base document and the revision that names them.
import { createHash } from 'node:crypto';
import type { Json } from '../json.ts';
import { BundleError, readBundle, type BundleManifest } from '../rego/bundle/index.ts';
import { exactJson, wasmJson } from '../rego/json.ts';
import { describeThrown, PolicyLoadError } from './errors.ts';
import { type CompiledWasmModule, WasmApi } from './webassembly.ts';

/** The parts of a bundle the engine uses. */
export interface WasmBundleParts {
  /** The OPA-ABI Wasm module (`/policy.wasm`). */
  wasm: Uint8Array;
  /** Base document `data`; `{}` when absent. */
  data?: Json;
  /**
   * The base document as JSON text (an object), used instead of `data` when given: opa-wasm hands text to the
   * module, which parses it once into its heap — no JSON.parse + JSON.stringify of a large document on the event
   * loop (src/lifecycle unpacks bundles in a worker thread and passes the text through).
   */
  dataJson?: Uint8Array;
  manifest?: BundleManifest;
}

/** What setData receives: a JSON object, or JSON text in an ArrayBuffer (opa-wasm accepts both). */
export type BaseDocument = Json | ArrayBuffer;

const WASM_MAGIC = [0x00, 0x61, 0x73, 0x6d];

/** True when the bytes are a bare Wasm module rather than a bundle tarball. */
function isWasmModule(bytes: Uint8Array): boolean {
  return WASM_MAGIC.every((b, i) => bytes[i] === b);
}

/** A bundle ready to instantiate. */
export interface ResolvedBundle {
  module: CompiledWasmModule;
  data: BaseDocument;
  manifest: BundleManifest;
  revision: string;
}

/** Reads and compiles a bundle; `PolicyLoadError` when it cannot serve. */
export async function resolveBundle(
  bundle: Uint8Array | WasmBundleParts,
  revisionOverride?: string,
): Promise<ResolvedBundle> {
  let parts: { wasm: Uint8Array; data: Json; manifest: BundleManifest };
  if (bundle instanceof Uint8Array) {
    if (isWasmModule(bundle)) parts = { wasm: bundle, data: {}, manifest: {} };
    else {
      // The shared bundle reader (size limits, nested data mounts, manifest checks).
      let read;
      try {
        read = readBundle(bundle);
      } catch (err) {
        if (err instanceof BundleError) throw new PolicyLoadError(`policy bundle is unusable: ${err.message}`);
        throw err;
      }
      if (!read.wasm) throw new PolicyLoadError('policy bundle has no Wasm module (build it with an entrypoint)');
      if (!isWasmModule(read.wasm)) throw new PolicyLoadError('policy bundle: the module is not WebAssembly');
      parts = { wasm: read.wasm, data: read.data as Json, manifest: read.manifest };
    }
  } else if (bundle.dataJson) {
    const text = bundle.dataJson;
    // Parsed inside the module; only its shape is checked here (an object), the module refuses malformed JSON.
    let first = 0;
    while (
      first < text.length &&
      (text[first] === 0x20 || text[first] === 0x0a || text[first] === 0x0d || text[first] === 0x09)
    )
      first++;
    if (text[first] !== 0x7b) throw new PolicyLoadError('bundle data must be a JSON object');
    const buffer =
      text.byteOffset === 0 && text.byteLength === text.buffer.byteLength
        ? (text.buffer as ArrayBuffer)
        : (text.slice().buffer as ArrayBuffer);
    return finishResolve(bundle.wasm, buffer, text, bundle.manifest ?? {}, revisionOverride);
  } else {
    parts = { wasm: bundle.wasm, data: bundle.data ?? {}, manifest: bundle.manifest ?? {} };
  }
  if (parts.data === null || typeof parts.data !== 'object' || Array.isArray(parts.data)) {
    throw new PolicyLoadError('bundle data must be a JSON object');
  }
  // A bundle's data.json keeps numbers a double would change as their text (readBundle): setData gets them as JSON
  // text then, and the default revision hashes that text (for other data, exactly JSON.stringify's).
  return finishResolve(
    parts.wasm,
    wasmJson(parts.data) as BaseDocument,
    exactJson(parts.data),
    parts.manifest,
    revisionOverride,
  );
}

/** Compiles the module (off the main thread: WebAssembly.compile) and names the revision. */
async function finishResolve(
  wasm: Uint8Array,
  data: BaseDocument,
  dataText: string | Uint8Array,
  manifest: BundleManifest,
  revisionOverride?: string,
): Promise<ResolvedBundle> {
  let module: CompiledWasmModule;
  try {
    module = await WasmApi.compile(wasm);
  } catch (err) {
    throw new PolicyLoadError(`policy module does not compile: ${describeThrown(err)}`);
  }
  const revision =
    revisionOverride ??
    (typeof manifest.revision === 'string' && manifest.revision.length > 0
      ? manifest.revision
      : 'sha256:' + createHash('sha256').update(wasm).update(dataText).digest('hex'));
  return { module, data, manifest, revision };
}
