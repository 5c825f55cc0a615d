// The CPU-heavy, engine-independent half of loading a bundle: gunzip + untar (readBundle), JSON parsing of the
// data files, the sha256 of the tarball, signature verification (structural hashes of every file) and the smoke
// cases. It runs in a worker thread (unpack-thread.ts) so an activation does not stall evaluations on the event
// loop; what it returns is ready for the engine: the Wasm bytes and the base document as JSON text, which
// opa-wasm parses straight into the module's heap (no JSON.parse / JSON.stringify on the main thread).
import { createHash } from 'node:crypto';
import { gunzipSync } from 'node:zlib';
import {
  BundleError,
  DEFAULT_BUNDLE_LIMITS,
  normaliseBundlePath,
  parseBundleDataJson,
  readBundle,
  type Bundle,
  type BundleManifest,
  type BundleWithDataText,
  type ReadBundleOptions,
} from '../rego/bundle/index.ts';
import { readTar, TarFormatError } from '../rego/bundle/tar.ts';
import { exactJson } from '../rego/json.ts';
import { LifecycleError } from './errors.ts';
import { verifyBundleSignature, type BundleVerificationConfig, type SignatureCheck } from './signing.ts';
import { readSmokeCases, type SmokeCase } from './smoke.ts';

export interface UnpackedBundle {
  /** SHA-256 of the .tar.gz bytes (the registry key). */
  sha256: string;
  manifest: BundleManifest;
  /**
   * The revision the engine reports: the manifest's, else `sha256:` of module + JSON data (the engine's own
   * default, computed here because the engine only sees the data as text).
   */
  revision: string;
  /**
   * The module and the base document as JSON text. Absent when the engine must read the tarball itself
   * (several modules, or none: the engine then picks by entrypoint or reports why it cannot load).
   */
  parts?: { wasm: Uint8Array; dataJson: Uint8Array };
  /**
   * Set when `parts.dataJson` is a data file's text that was not parsed here (unpackBundle with `soleDataAsText`):
   * the engine's JSON parser is then its validation, and a refusal is reported against this file.
   */
  unparsedDataFile?: string;
  smokeCases: SmokeCase[];
  signature: SignatureCheck;
}

/** Copies a view into its own exactly-sized buffer, so it can be transferred to another thread alone. */
function ownBuffer(bytes: Uint8Array): Uint8Array {
  return bytes.byteOffset === 0 && bytes.byteLength === bytes.buffer.byteLength ? bytes : bytes.slice();
}

/** readBundle, with a malformed bundle refused as LifecycleError('invalid_bundle'). */
export function readBundleOrRefuse(bytes: Uint8Array): Bundle;
export function readBundleOrRefuse(bytes: Uint8Array, options: ReadBundleOptions): Bundle | BundleWithDataText;
export function readBundleOrRefuse(bytes: Uint8Array, options: ReadBundleOptions = {}): Bundle | BundleWithDataText {
  try {
    return readBundle(bytes, undefined, options);
  } catch (e) {
    throw new LifecycleError(
      'invalid_bundle',
      e instanceof BundleError ? e.message : `unreadable bundle: ${(e as Error).message}`,
    );
  }
}

/**
 * The manifest of a bundle, read as readBundle reads it but without parsing any other file: the data files are
 * most of readBundle's work (registration needs only the revision). The archive is still
 * decompressed and walked whole, with readBundle's limits, so a truncated or corrupt tarball, a duplicate path,
 * a malformed manifest or one naming a missing module is refused as invalid_bundle, as readBundle refuses it.
 */
export function readBundleManifest(bytes: Uint8Array): BundleManifest {
  try {
    return manifestOf(bytes);
  } catch (e) {
    throw new LifecycleError(
      'invalid_bundle',
      e instanceof BundleError || e instanceof TarFormatError
        ? e.message
        : `unreadable bundle: ${(e as Error).message}`,
    );
  }
}

function manifestOf(bytes: Uint8Array): BundleManifest {
  const limits = DEFAULT_BUNDLE_LIMITS;
  if (bytes.length > limits.maxCompressedBytes)
    throw new BundleError(`bundle too large (${bytes.length} bytes, limit ${limits.maxCompressedBytes})`);
  let tar: Buffer;
  try {
    tar = gunzipSync(bytes, { maxOutputLength: limits.maxUncompressedBytes });
  } catch (e) {
    if (e instanceof RangeError || (e as { code?: string }).code === 'ERR_BUFFER_TOO_LARGE')
      throw new BundleError(`bundle too large when decompressed (limit ${limits.maxUncompressedBytes} bytes)`);
    throw new BundleError(`bundle is not a valid gzip stream: ${(e as Error).message}`);
  }
  const entries = readTar(tar, {
    maxEntries: limits.maxEntries,
    maxEntryBytes: limits.maxEntryBytes,
    maxTotalBytes: limits.maxUncompressedBytes,
  });
  const paths = new Set<string>();
  let manifestBytes: Uint8Array | undefined;
  for (const entry of entries) {
    const path = normaliseBundlePath(entry.name);
    if (paths.has(path)) throw new BundleError(`duplicate file in bundle: ${path}`);
    paths.add(path);
    if (path === '/.manifest') manifestBytes = entry.data;
  }
  if (!manifestBytes) return {};
  let manifest: unknown;
  try {
    manifest = JSON.parse(new TextDecoder('utf-8', { fatal: true }).decode(manifestBytes));
  } catch (e) {
    throw new BundleError(`/.manifest: invalid JSON: ${(e as Error).message}`);
  }
  if (manifest === null || typeof manifest !== 'object' || Array.isArray(manifest))
    throw new BundleError('/.manifest: must be a JSON object');
  const wasm = (manifest as BundleManifest).wasm;
  if (wasm !== undefined && !Array.isArray(wasm)) throw new BundleError('/.manifest: wasm must be a list');
  for (const w of wasm ?? []) {
    if (!w || typeof w.entrypoint !== 'string' || typeof w.module !== 'string')
      throw new BundleError('/.manifest: wasm entries need entrypoint and module');
    const module = normaliseBundlePath(w.module);
    if (!paths.has(module) || !module.endsWith('/policy.wasm'))
      throw new BundleError(`/.manifest: wasm module ${w.module} not found in bundle`);
  }
  return manifest as BundleManifest;
}

export interface UnpackOptions {
  /**
   * A sole `/data.json` is not parsed here (readBundle `soleDataAsText`): for a caller that loads the result into an
   * engine right away, whose JSON parser refuses malformed text (loadUnpacked then names the file). Parsing the
   * data is most of an unpack's CPU. Off for a check that nothing follows (push without activation).
   */
  soleDataAsText?: boolean;
}

/** Reads, verifies and prepares a bundle; throws LifecycleError (invalid_bundle, signature_*, smoke_failed). */
export async function unpackBundle(
  bytes: Uint8Array,
  verification: BundleVerificationConfig | undefined,
  options: UnpackOptions = {},
): Promise<UnpackedBundle> {
  const bundle = readBundleOrRefuse(bytes, { soleDataAsText: options.soleDataAsText === true });
  // Structural hashes of every file (signing.ts), the data files included: as strong with or without a parse here.
  const signature = await verifyBundleSignature(bundle, verification);
  const smokeCases = readSmokeCases(bundle);
  const sha256 = createHash('sha256').update(bytes).digest('hex');
  const single = bundle.wasm !== undefined && (bundle.manifest.wasm?.length ?? 0) <= 1;
  const manifestRevision =
    typeof bundle.manifest.revision === 'string' && bundle.manifest.revision.length > 0
      ? bundle.manifest.revision
      : undefined;
  // The engine's default revision hashes the JSON text of the merged document, so only then is it serialised
  // (and, for unparsed text, parsed after all: the revision must not depend on how the bundle was read).
  const data =
    bundle.dataText === undefined
      ? bundle.data
      : manifestRevision === undefined
        ? parseDataText(bundle.dataText)
        : undefined;
  // exactJson: numbers kept as their text (DecimalText) are written as they are, the others as JSON.stringify would.
  const mergedText = manifestRevision === undefined ? exactJson(data) : undefined;
  const revision =
    manifestRevision ??
    'sha256:' +
      createHash('sha256')
        .update(bundle.wasm ?? new Uint8Array())
        .update(mergedText as string)
        .digest('hex');
  const dataJson = (): Uint8Array =>
    bundle.dataText !== undefined
      ? ownBuffer(bundle.dataText)
      : (soleDataFileText(bundle) ?? new TextEncoder().encode(mergedText ?? exactJson(bundle.data)));
  return {
    sha256,
    manifest: bundle.manifest,
    revision,
    ...(single ? { parts: { wasm: ownBuffer(bundle.wasm as Uint8Array), dataJson: dataJson() } } : {}),
    ...(single && bundle.dataText !== undefined ? { unparsedDataFile: '/data.json' } : {}),
    smokeCases,
    signature,
  };
}

/** A data file's text decoded as readBundle decodes it (exact numbers), refused as invalid_bundle naming the file. */
function parseDataText(text: Uint8Array, path = '/data.json'): unknown {
  try {
    return parseBundleDataJson(path, text);
  } catch (e) {
    if (e instanceof BundleError) throw new LifecycleError('invalid_bundle', e.message);
    throw e;
  }
}

/**
 * Why an engine refused an unpacked bundle whose data text was not parsed at unpack: the data file's own JSON
 * error (JSON.parse's message and position — this path only runs on a refusal), else undefined (the
 * data is well-formed: the engine refused for another reason).
 */
export function unparsedDataRefusal(unpacked: UnpackedBundle): LifecycleError | undefined {
  if (!unpacked.unparsedDataFile || !unpacked.parts) return undefined;
  try {
    parseDataText(unpacked.parts.dataJson, unpacked.unparsedDataFile);
    return undefined;
  } catch (e) {
    return e as LifecycleError;
  }
}

const UTF8_BOM = [0xef, 0xbb, 0xbf];

/**
 * The bytes of `/data.json` when it is the bundle's only data file: then the base document is exactly that file
 * (readBundle has parsed it, so it is valid JSON with an object at the root), and the engine can take its text as
 * it is instead of a re-serialisation of the parsed value. Without the BOM the UTF-8 decoder dropped before parsing. Undefined when several data files are merged.
 */
function soleDataFileText(bundle: Bundle): Uint8Array | undefined {
  const dataFiles = bundle.files.filter((f) => /(^|\/)data\.(json|ya?ml)$/.test(f.path));
  if (dataFiles.length !== 1 || dataFiles[0].path !== '/data.json') return undefined;
  const bytes = dataFiles[0].bytes;
  return ownBuffer(UTF8_BOM.every((b, i) => bytes[i] === b) ? bytes.subarray(UTF8_BOM.length) : bytes);
}
