// Reads the parts the engine needs out of an OPA bundle tarball (design/opa-wasm-abi.md §8.1):
// `/.manifest`, `/data.json` (only the root file; nested data files are mounted at their directory),
// and the Wasm module(s). Signature verification and bundle serving belong to the bundle service, not here.
import { gunzipSync } from 'node:zlib';
import { Readable } from 'node:stream';
import tarStream from 'tar-stream';
import type { Json } from '../store/types.ts';

export interface BundleManifest {
  revision?: string;
  roots?: string[];
  wasm?: { entrypoint: string; module: string }[];
  rego_version?: number;
  metadata?: { [key: string]: Json };
  [member: string]: unknown;
}

/** The parts of a bundle the engine uses. */
export interface WasmBundleParts {
  /** The OPA-ABI Wasm module (`/policy.wasm`). */
  wasm: Uint8Array;
  /** Base document `data` (merged data files); `{}` when absent. */
  data?: Json;
  manifest?: BundleManifest;
}

export class BundleFormatError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'BundleFormatError';
  }
}

const GZIP_MAGIC = [0x1f, 0x8b];
const WASM_MAGIC = [0x00, 0x61, 0x73, 0x6d];

function startsWith(bytes: Uint8Array, magic: number[]): boolean {
  return magic.every((b, i) => bytes[i] === b);
}

/** True when the bytes are a bare Wasm module rather than a tarball. */
export function isWasmModule(bytes: Uint8Array): boolean {
  return startsWith(bytes, WASM_MAGIC);
}

function normalisePath(name: string): string {
  const trimmed = name.replace(/^\.\//, '').replace(/^\/+/, '');
  return '/' + trimmed;
}

/** Lists the files of a `.tar.gz` (or plain tar) bundle, keyed by absolute path (`/policy.wasm`). */
export async function readBundleFiles(bytes: Uint8Array): Promise<Map<string, Uint8Array>> {
  let tar: Uint8Array;
  try {
    tar = startsWith(bytes, GZIP_MAGIC) ? gunzipSync(bytes) : bytes;
  } catch (err) {
    throw new BundleFormatError(`bundle is not a valid gzip stream: ${(err as Error).message}`);
  }
  const files = new Map<string, Uint8Array>();
  const extract = tarStream.extract();
  const done = new Promise<void>((resolve, reject) => {
    extract.on('entry', (header, stream, next) => {
      const chunks: Buffer[] = [];
      stream.on('data', (c: unknown) => {
        chunks.push(Buffer.from(c as Uint8Array));
      });
      stream.on('end', () => {
        if (header.type === 'file') files.set(normalisePath(header.name), new Uint8Array(Buffer.concat(chunks)));
        next();
      });
      stream.on('error', reject);
    });
    extract.on('finish', resolve);
    extract.on('error', (err: Error) => reject(new BundleFormatError(`bundle is not a valid tar archive: ${err.message}`)));
  });
  Readable.from([Buffer.from(tar)]).pipe(extract);
  await done;
  return files;
}

function parseJsonFile(path: string, bytes: Uint8Array): unknown {
  try {
    return JSON.parse(new TextDecoder('utf-8', { fatal: true }).decode(bytes));
  } catch (err) {
    throw new BundleFormatError(`${path}: not valid UTF-8 JSON: ${(err as Error).message}`);
  }
}

/** Mounts `dir/data.json` at `data.dir` (OPA's rule), merging objects. */
function mountData(root: { [key: string]: Json }, path: string, value: Json): void {
  const segments = path.split('/').filter((s) => s.length > 0).slice(0, -1);
  if (segments.length === 0) {
    if (value === null || typeof value !== 'object' || Array.isArray(value)) {
      throw new BundleFormatError(`${path}: the root data document must be an object`);
    }
    mergeInto(root, value, path);
    return;
  }
  let node = root;
  for (const seg of segments.slice(0, -1)) {
    const next = node[seg];
    if (next === undefined) node[seg] = {};
    else if (next === null || typeof next !== 'object' || Array.isArray(next)) {
      throw new BundleFormatError(`${path}: conflicts with data at ${seg}`);
    }
    node = node[seg] as { [key: string]: Json };
  }
  const last = segments[segments.length - 1];
  const existing = node[last];
  if (existing === undefined) node[last] = value;
  else if (existing !== null && typeof existing === 'object' && !Array.isArray(existing) && value !== null && typeof value === 'object' && !Array.isArray(value)) {
    mergeInto(existing, value, path);
  } else throw new BundleFormatError(`${path}: conflicts with other data at ${segments.join('/')}`);
}

function mergeInto(target: { [key: string]: Json }, source: { [key: string]: Json }, path: string): void {
  for (const [k, v] of Object.entries(source)) {
    const cur = target[k];
    if (cur === undefined) target[k] = v;
    else if (cur !== null && typeof cur === 'object' && !Array.isArray(cur) && v !== null && typeof v === 'object' && !Array.isArray(v)) mergeInto(cur, v, path);
    else throw new BundleFormatError(`${path}: key ${JSON.stringify(k)} conflicts with other data`);
  }
}

/**
 * Extracts the Wasm module serving `entrypoint`, the merged data and the manifest from a bundle tarball.
 * The manifest's `wasm[]` picks the module when present; otherwise `/policy.wasm`.
 */
export async function readWasmBundle(bytes: Uint8Array, entrypoint?: string): Promise<Required<Pick<WasmBundleParts, 'wasm' | 'data'>> & { manifest: BundleManifest }> {
  const files = await readBundleFiles(bytes);
  let manifest: BundleManifest = {};
  const manifestBytes = files.get('/.manifest');
  if (manifestBytes) {
    const parsed = parseJsonFile('/.manifest', manifestBytes);
    if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed)) throw new BundleFormatError('/.manifest: must be a JSON object');
    manifest = parsed as BundleManifest;
  }
  let modulePath = '/policy.wasm';
  if (Array.isArray(manifest.wasm) && manifest.wasm.length > 0) {
    const match = manifest.wasm.find((w) => w && w.entrypoint === entrypoint) ?? manifest.wasm[0];
    if (typeof match?.module === 'string') modulePath = normalisePath(match.module);
  }
  const wasm = files.get(modulePath);
  if (!wasm) throw new BundleFormatError(`bundle has no Wasm module at ${modulePath}`);
  if (!isWasmModule(wasm)) throw new BundleFormatError(`${modulePath}: not a Wasm module`);
  const data: { [key: string]: Json } = {};
  const dataFiles = [...files.keys()].filter((p) => p === '/data.json' || p.endsWith('/data.json')).sort();
  for (const p of dataFiles) mountData(data, p, parseJsonFile(p, files.get(p)!) as Json);
  return { wasm, data, manifest };
}
