// OPA bundles (OPA docs: Bundles, file format; docs/bundles.md): a gzipped tarball holding /.manifest, /policy.wasm,
// /plan.json, /data.json (data files in subdirectories are mounted at their path) and the Rego sources.
// Writing is deterministic: sorted entries, fixed tar metadata, gzip without timestamp.
import { isUtf8 } from 'node:buffer';
import { createHash } from 'node:crypto';
import { gunzipSync, gzipSync } from 'node:zlib';
import { RE2JS } from 're2js';
import { globToRegex } from '../builtins/host/glob.ts';
import { exactJson, isObject } from '../json.ts';
import { parseGoJson } from './go-json.ts';
import { readTar, TarFormatError, writeTar, type TarEntry } from './tar.ts';
import { parseYamlData } from './yaml.ts';

export interface BundleWasmEntry {
  /** Query path served by the module, e.g. `acs/guardian/decision`. */
  entrypoint: string;
  /** Path of the module inside the bundle, e.g. `/policy.wasm`. */
  module: string;
  annotations?: unknown[];
}

export interface BundleManifest {
  revision?: string;
  roots?: string[];
  wasm?: BundleWasmEntry[];
  rego_version?: number;
  file_rego_versions?: Record<string, number>;
  metadata?: Record<string, unknown>;
  [extra: string]: unknown;
}

export interface BundleSource {
  /** Path inside the bundle, e.g. `/policies/acs.rego` (a leading `/` is added when missing). */
  path: string;
  text: string;
  /** How to read the module, when the manifest says (`rego_version`, `file_rego_versions`). */
  regoVersion?: 0 | 1;
}

export interface WriteBundleInput {
  manifest: BundleManifest;
  wasm?: Uint8Array;
  /** The IR plan (written as /plan.json). */
  plan?: unknown;
  /** The base document (written as /data.json). */
  data?: unknown;
  sources: BundleSource[];
  /** `.signatures.json` content, when the bundle is signed. */
  signatures?: BundleSignatures;
}

export interface BundleSignatures {
  signatures: string[];
  [extra: string]: unknown;
}

export interface BundleFile {
  /** Normalised path with a leading `/`. */
  path: string;
  bytes: Uint8Array;
}

export interface Bundle {
  manifest: BundleManifest;
  /** `/policy.wasm` (or the module the manifest names first). */
  wasm?: Uint8Array;
  plan?: unknown;
  /** Merged base document: every data.json/data.yaml mounted at its directory. */
  data: Record<string, unknown>;
  sources: BundleSource[];
  signatures?: BundleSignatures;
  /** Every file in the bundle, sorted by path (`.signatures.json` included). */
  files: BundleFile[];
  /** Set only in a BundleWithDataText. */
  dataText?: undefined;
}

/**
 * A bundle read with `soleDataAsText` whose only data file is `/data.json`: that file's text instead of the parsed
 * document. Checked: valid UTF-8, a `{` first (the root must be an object); not checked: that the rest is JSON —
 * the reader that parses it must refuse malformed text (the policy module's own JSON parser does).
 */
export interface BundleWithDataText extends Omit<Bundle, 'data' | 'dataText'> {
  data?: undefined;
  /** `/data.json`'s bytes, without a UTF-8 BOM. */
  dataText: Uint8Array;
}

export interface ReadBundleOptions {
  /**
   * When `/data.json` is the bundle's only data file, return its text unparsed (BundleWithDataText): for a caller
   * that hands the text to a parser of its own (parsing a large data file here would be work thrown away). Several
   * data files are still parsed and merged (mounts and conflicts need the values).
   */
  soleDataAsText?: boolean;
}

export interface BundleLimits {
  /** Compressed size accepted. */
  maxCompressedBytes: number;
  /** Uncompressed tar size accepted (zip-bomb guard: decompression stops there). */
  maxUncompressedBytes: number;
  maxEntries: number;
  maxEntryBytes: number;
}

export const DEFAULT_BUNDLE_LIMITS: BundleLimits = {
  maxCompressedBytes: 64 * 1024 * 1024,
  maxUncompressedBytes: 256 * 1024 * 1024,
  maxEntries: 10_000,
  maxEntryBytes: 128 * 1024 * 1024,
};

export class BundleError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'BundleError';
  }
}

const enc = new TextEncoder();
const dec = new TextDecoder('utf-8', { fatal: true });

/** `./a/b`, `a/b`, `/a/b` → `/a/b`; refuses `..` segments and empty names. */
export function normaliseBundlePath(name: string): string {
  let p = name.replace(/\\/g, '/');
  while (p.startsWith('./')) p = p.slice(2);
  p = '/' + p.replace(/^\/+/, '');
  const segs = p.split('/').filter((s) => s !== '' && s !== '.');
  if (segs.some((s) => s === '..')) throw new BundleError(`bundle path escapes the bundle root: ${name}`);
  if (segs.length === 0) throw new BundleError(`empty bundle path: ${JSON.stringify(name)}`);
  return '/' + segs.join('/');
}

/**
 * The manifest's `rego_version` (and `file_rego_versions` for files read otherwise) describing how the
 * sources were read: OPA's loader reads each `.rego` file of a bundle by these fields.
 */
export function manifestRegoVersions(
  sources: readonly { file: string; regoVersion?: 0 | 1 }[],
): Pick<BundleManifest, 'rego_version' | 'file_rego_versions'> {
  const v0 = sources.filter((s) => s.regoVersion === 0);
  if (v0.length === 0) return { rego_version: 1 };
  if (v0.length === sources.length) return { rego_version: 0 };
  const files: Record<string, number> = {};
  for (const s of v0) files[normaliseBundlePath(s.file)] = 0;
  return { rego_version: 1, file_rego_versions: files };
}

/**
 * The Rego version a manifest gives the file at `path` (OPA's Manifest.numericRegoVersionForFile): the
 * first `file_rego_versions` glob matching the path (gobwas syntax without delimiters, patterns tried in
 * key order), else `rego_version`, else `fallback`. Refuses versions other than 0 and 1.
 */
export function regoVersionForFile(manifest: BundleManifest, path: string, fallback: 0 | 1 = 1): 0 | 1 {
  const full = normaliseBundlePath(path);
  let version: number | undefined;
  for (const pattern of Object.keys(manifest.file_rego_versions ?? {}).sort()) {
    let re: RE2JS;
    try {
      re = RE2JS.compile(globToRegex(pattern, []));
    } catch (e) {
      throw new BundleError(`failed to compile glob pattern ${pattern}: ${(e as Error).message}`);
    }
    if (re.matches(full) || re.matches(full.slice(1))) {
      version = manifest.file_rego_versions![pattern];
      break;
    }
  }
  version ??= manifest.rego_version;
  if (version === undefined) return fallback;
  if (version !== 0 && version !== 1)
    throw new BundleError(`unknown bundle rego-version ${version} for file '${path}'`);
  return version;
}

function sha256Hex(bytes: Uint8Array): string {
  return createHash('sha256').update(bytes).digest('hex');
}

/** Stable JSON (sorted object keys) so identical inputs give identical bytes; DecimalText keeps its digits. */
function stableJson(value: unknown): string {
  return exactJson(sortKeys(value));
}

function sortKeys(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(sortKeys);
  if (isObject(value) && !(value instanceof Uint8Array)) {
    const out: Record<string, unknown> = {};
    for (const k of Object.keys(value).sort()) out[k] = sortKeys((value as Record<string, unknown>)[k]);
    return out;
  }
  return value;
}

/**
 * Content hash over the bundle's inputs (everything except the manifest's own revision): the default
 * revision, so equal inputs give equal revisions.
 */
export function bundleContentHash(files: BundleFile[]): string {
  const h = createHash('sha256');
  for (const f of [...files].sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0))) {
    h.update(f.path);
    h.update('\0');
    h.update(sha256Hex(f.bytes));
    h.update('\n');
  }
  return h.digest('hex');
}

/** Build a deterministic .tar.gz bundle. */
export function writeBundle(input: WriteBundleInput): Uint8Array {
  const files = new Map<string, Uint8Array>();
  const add = (path: string, bytes: Uint8Array): void => {
    const p = normaliseBundlePath(path);
    if (files.has(p)) throw new BundleError(`duplicate bundle file ${p}`);
    files.set(p, bytes);
  };
  for (const s of input.sources) add(s.path, enc.encode(s.text));
  if (input.wasm) add('/policy.wasm', input.wasm);
  if (input.plan !== undefined) add('/plan.json', enc.encode(stableJson(input.plan)));
  if (input.data !== undefined) add('/data.json', enc.encode(stableJson(input.data)));

  const manifest: BundleManifest = { ...input.manifest };
  if (manifest.revision === undefined) {
    const inputs: BundleFile[] = [...files].map(([path, bytes]) => ({ path, bytes }));
    inputs.push({ path: '/.manifest', bytes: enc.encode(stableJson({ ...manifest, revision: undefined })) });
    manifest.revision = bundleContentHash(inputs);
  }
  add('/.manifest', enc.encode(stableJson(manifest)));
  if (input.signatures) add('/.signatures.json', enc.encode(stableJson(input.signatures)));

  const entries: TarEntry[] = [...files.keys()].sort().map((name) => ({ name, data: files.get(name) as Uint8Array }));
  // Node's gzip header has mtime 0 and a fixed OS byte: the output depends on the input only.
  return new Uint8Array(gzipSync(writeTar(entries), { level: 9 }));
}

function parseJsonFile(path: string, bytes: Uint8Array): unknown {
  try {
    return JSON.parse(dec.decode(bytes));
  } catch (e) {
    throw new BundleError(`${path}: invalid JSON: ${(e as Error).message}`);
  }
}

const UTF8_BOM = [0xef, 0xbb, 0xbf];

/**
 * A data file as OPA's bundle reader decodes it (util.UnmarshalJSON, numbers kept as json.Number: see parseGoJson),
 * so `12345678901234567890` keeps its digits as it does in a data file loaded from a directory. Refused as before:
 * text that is not UTF-8 or that JSON.parse refuses, in JSON.parse's words.
 */
export function parseBundleDataJson(path: string, bytes: Uint8Array): unknown {
  if (isUtf8(bytes)) {
    const text = UTF8_BOM.every((b, i) => bytes[i] === b) ? bytes.subarray(UTF8_BOM.length) : bytes;
    let goError: Error;
    try {
      return parseGoJson(text);
    } catch (e) {
      goError = e as Error;
    }
    parseJsonFile(path, bytes);
    // JSON.parse took what Go's decoder refuses: Go's words.
    throw new BundleError(`${path}: invalid JSON: ${goError.message}`);
  }
  return parseJsonFile(path, bytes);
}

/**
 * Mounts a data file's document at its directory, merged with what is there, as OPA's bundle reader inserts it
 * (bundle.go insertData: mktree, merge.InterfaceMaps) and with its error texts.
 */
function mountData(root: Record<string, unknown>, dir: string[], value: unknown, path: string): void {
  const failed = (why: string): BundleError => new BundleError(`bundle load failed on ${path}: ${why}`);
  let tree: unknown = value;
  for (let i = dir.length - 1; i >= 0; i--) tree = { [dir[i]]: tree };
  if (!isObject(tree)) throw failed('root value must be object');
  if (!mergeInto(root, tree)) throw failed(`failed to insert data file from path ${dir.join('/')}`);
}

/** Merges `src` into `target` object by object; false when a key holds a non-object on either side. */
function mergeInto(target: Record<string, unknown>, src: Record<string, unknown>): boolean {
  for (const [k, v] of Object.entries(src)) {
    const cur = target[k];
    if (cur === undefined) target[k] = v;
    else if (!(isObject(cur) && isObject(v) && mergeInto(cur, v))) return false;
  }
  return true;
}

/** `/data.json` as text for BundleWithDataText: the checks that need no parse (UTF-8, an object at the root). */
function soleDataText(file: BundleFile): Uint8Array {
  if (!isUtf8(file.bytes)) throw new BundleError(`${file.path}: not valid UTF-8`);
  const text = UTF8_BOM.every((b, i) => file.bytes[i] === b) ? file.bytes.subarray(UTF8_BOM.length) : file.bytes;
  let first = 0;
  // JSON whitespace (RFC 8259 §2).
  while (
    first < text.length &&
    (text[first] === 0x20 || text[first] === 0x0a || text[first] === 0x0d || text[first] === 0x09)
  )
    first++;
  if (first === text.length) throw new BundleError(`${file.path}: invalid JSON: no value`);
  if (text[first] !== 0x7b) throw new BundleError(`bundle load failed on ${file.path}: root value must be object`);
  return text;
}

const isDataFile = (path: string): boolean => /(^|\/)data\.(json|ya?ml)$/.test(path);

/** Read an OPA bundle (ours or one built by `opa build`). Throws BundleError on malformed/oversized input. */
export function readBundle(bytes: Uint8Array, limits?: Partial<BundleLimits>): Bundle;
export function readBundle(
  bytes: Uint8Array,
  limits: Partial<BundleLimits> | undefined,
  options: ReadBundleOptions,
): Bundle | BundleWithDataText;
export function readBundle(
  bytes: Uint8Array,
  limits: Partial<BundleLimits> = {},
  options: ReadBundleOptions = {},
): Bundle | BundleWithDataText {
  const lim = { ...DEFAULT_BUNDLE_LIMITS, ...limits };
  if (bytes.length > lim.maxCompressedBytes)
    throw new BundleError(`bundle too large (${bytes.length} bytes, limit ${lim.maxCompressedBytes})`);
  let tar: Uint8Array;
  try {
    const raw = gunzipSync(bytes, { maxOutputLength: lim.maxUncompressedBytes });
    // A plain Uint8Array view: entries are then copied out with slice() (Buffer.slice would alias).
    tar = new Uint8Array(raw.buffer, raw.byteOffset, raw.byteLength);
  } catch (e) {
    if (e instanceof RangeError || (e as { code?: string }).code === 'ERR_BUFFER_TOO_LARGE') {
      throw new BundleError(`bundle too large when decompressed (limit ${lim.maxUncompressedBytes} bytes)`);
    }
    throw new BundleError(`bundle is not a valid gzip stream: ${(e as Error).message}`);
  }
  let entries: TarEntry[];
  try {
    entries = readTar(tar, {
      maxEntries: lim.maxEntries,
      maxEntryBytes: lim.maxEntryBytes,
      maxTotalBytes: lim.maxUncompressedBytes,
    });
  } catch (e) {
    if (e instanceof TarFormatError) throw new BundleError(e.message);
    throw e;
  }

  const files: BundleFile[] = [];
  const seen = new Set<string>();
  for (const e of entries) {
    const path = normaliseBundlePath(e.name);
    if (seen.has(path)) throw new BundleError(`duplicate file in bundle: ${path}`);
    seen.add(path);
    files.push({ path, bytes: e.data });
  }
  files.sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0));

  const dataFiles = files.filter((f) => isDataFile(f.path));
  const dataTextFile =
    options.soleDataAsText && dataFiles.length === 1 && dataFiles[0].path === '/data.json' ? dataFiles[0] : undefined;
  const dataText = dataTextFile ? soleDataText(dataTextFile) : undefined;

  let manifest: BundleManifest = {};
  let plan: unknown;
  let signatures: BundleSignatures | undefined;
  const data: Record<string, unknown> = {};
  const sources: BundleSource[] = [];
  const wasmFiles = new Map<string, Uint8Array>();
  for (const f of files) {
    const base = f.path.slice(f.path.lastIndexOf('/') + 1);
    const dir = f.path.split('/').slice(1, -1);
    if (f.path === '/.manifest') {
      const m = parseJsonFile(f.path, f.bytes);
      if (!isObject(m)) throw new BundleError('/.manifest: must be a JSON object');
      manifest = m as BundleManifest;
    } else if (f.path === '/.signatures.json') {
      const s = parseJsonFile(f.path, f.bytes);
      if (!isObject(s) || !Array.isArray(s.signatures))
        throw new BundleError('/.signatures.json: expected {"signatures": [...]}');
      signatures = s as BundleSignatures;
    } else if (f === dataTextFile) {
    } else if (base === 'data.json') {
      mountData(data, dir, parseBundleDataJson(f.path, f.bytes), f.path);
    } else if (base === 'data.yaml' || base === 'data.yml') {
      let v: unknown;
      try {
        v = parseYamlData(dec.decode(f.bytes));
      } catch (e) {
        throw new BundleError(`${f.path}: invalid YAML: ${(e as Error).message}`);
      }
      mountData(data, dir, v ?? {}, f.path);
    } else if (base === 'policy.wasm') {
      wasmFiles.set(f.path, f.bytes);
    } else if (base === 'plan.json') {
      plan = parseJsonFile(f.path, f.bytes);
    } else if (base.endsWith('.rego')) {
      let text: string;
      try {
        text = dec.decode(f.bytes);
      } catch {
        throw new BundleError(`${f.path}: not valid UTF-8`);
      }
      sources.push({ path: f.path, text });
    }
  }
  if (manifest.rego_version !== undefined || manifest.file_rego_versions !== undefined) {
    for (const s of sources) s.regoVersion = regoVersionForFile(manifest, s.path);
  }
  if (manifest.wasm !== undefined && !Array.isArray(manifest.wasm))
    throw new BundleError('/.manifest: wasm must be a list');
  for (const w of manifest.wasm ?? []) {
    if (!w || typeof w.entrypoint !== 'string' || typeof w.module !== 'string')
      throw new BundleError('/.manifest: wasm entries need entrypoint and module');
    if (!wasmFiles.has(normaliseBundlePath(w.module)))
      throw new BundleError(`/.manifest: wasm module ${w.module} not found in bundle`);
  }
  const named = manifest.wasm?.[0] ? wasmFiles.get(normaliseBundlePath(manifest.wasm[0].module)) : undefined;
  const wasm = named ?? wasmFiles.get('/policy.wasm') ?? wasmFiles.values().next().value;

  return {
    manifest,
    ...(wasm ? { wasm } : {}),
    ...(plan !== undefined ? { plan } : {}),
    ...(dataText ? { dataText } : { data }),
    sources,
    ...(signatures ? { signatures } : {}),
    files,
  };
}
