// OPA bundle signatures (OPA docs: Bundles, signing): `/.signatures.json` = {"signatures": ["<JWS compact>"]},
// the JWS payload lists every file of the bundle (except .signatures.json) with its hash. JSON/YAML files are
// hashed structurally as OPA's bundle/hash.go does: objects as `{` + sorted `"key":value` pairs joined by `,` +
// `}`, arrays as `[`…`]`, primitives JSON-encoded without HTML escaping; other files hash their raw bytes.
import { createHash } from 'node:crypto';
import type { CryptoKey, KeyObject } from 'jose';
import { parse as parseYaml } from 'yaml';
import { normaliseBundlePath, readBundle, type Bundle, type BundleFile } from '../rego/bundle/index.ts';
import { parseGoJson } from '../rego/bundle/go-json.ts';
import { writeTar } from '../rego/bundle/tar.ts';
import { DecimalText } from '../rego/json.ts';
import { gzipSync } from 'node:zlib';
import { LifecycleError } from './errors.ts';

/** jose is loaded on the first signature signed or checked: most bundles are unsigned, and it is many modules. */
const jose = (): Promise<typeof import('jose')> => import('jose');

const HASH_ALGORITHMS: Record<string, string> = {
  MD5: 'md5',
  'SHA-1': 'sha1',
  'SHA-224': 'sha224',
  'SHA-256': 'sha256',
  'SHA-384': 'sha384',
  'SHA-512': 'sha512',
  'SHA-512-224': 'sha512-224',
  'SHA-512-256': 'sha512-256',
};

/** A key the verifier (or signer) uses: PEM (SPKI public / PKCS#8 private) for asymmetric algorithms, raw bytes for HS*. */
export interface BundleKeyConfig {
  algorithm: string;
  /** PEM text, or the shared secret for HS256/384/512. */
  key: string | Uint8Array;
  /** OPA's `scope`: when set, the payload's scope must equal it. */
  scope?: string;
}

export interface BundleVerificationConfig {
  /** Known keys by key id. Configuring any key makes signatures required (OPA #8531: no unsigned fall-through). */
  keys: Record<string, BundleKeyConfig>;
  /** Pinned key id (OPA `signing.keyid` / `--verification-key-id`): used instead of the JWS header `kid`. */
  keyId?: string;
  /** Required scope (overrides the key's). */
  scope?: string;
  /** Hash algorithms a payload may use (default: all OPA supports). */
  allowedHashes?: string[];
}

export interface SignatureCheck {
  /** 'unsigned' only when no verification is configured and the bundle carries no signatures. */
  status: 'verified' | 'unsigned';
  keyId?: string;
}

interface SignedFile {
  name: string;
  hash: string;
  algorithm: string;
}

function goJsonString(s: string): string {
  // Go's encoder (SetEscapeHTML(false)) still escapes U+2028/U+2029; JSON.stringify does not.
  return JSON.stringify(s)
    .replace(/\u2028/g, '\\u2028')
    .replace(/\u2029/g, '\\u2029');
}

function compareUtf8(a: string, b: string): number {
  return Buffer.compare(Buffer.from(a, 'utf8'), Buffer.from(b, 'utf8'));
}

/** Writes the structural hash input of a JSON value (OPA bundle/hash.go `walk`). */
function walkJson(value: unknown, out: string[]): void {
  // OPA decodes numbers as json.Number and its encoder writes their literal text (`1.50`, `1e3`, big integers).
  if (value instanceof DecimalText) out.push(value.text);
  else if (Array.isArray(value)) {
    out.push('[');
    value.forEach((v, i) => {
      if (i > 0) out.push(',');
      walkJson(v, out);
    });
    out.push(']');
  } else if (value !== null && typeof value === 'object') {
    out.push('{');
    const keys = Object.keys(value).sort(compareUtf8);
    keys.forEach((k, i) => {
      if (i > 0) out.push(',');
      out.push(goJsonString(k), ':');
      walkJson((value as Record<string, unknown>)[k], out);
    });
    out.push('}');
  } else if (typeof value === 'string') out.push(goJsonString(value));
  else out.push(JSON.stringify(value));
}

function isStructured(path: string): boolean {
  return path === '/.manifest' || /\.(json|ya?ml)$/.test(path);
}

/** The digest OPA records for one bundle file. */
export function hashBundleFile(file: BundleFile, algorithm = 'SHA-256'): string {
  const node = HASH_ALGORITHMS[algorithm];
  if (!node) throw new LifecycleError('signature_invalid', `unsupported hashing algorithm: ${algorithm}`);
  const h = createHash(node);
  if (isStructured(file.path)) {
    let value: unknown;
    try {
      value = /\.ya?ml$/.test(file.path) ? parseYaml(new TextDecoder().decode(file.bytes)) : parseGoJson(file.bytes);
    } catch (e) {
      throw new LifecycleError('invalid_bundle', `${file.path}: cannot parse for hashing: ${(e as Error).message}`);
    }
    const parts: string[] = [];
    walkJson(value, parts);
    h.update(parts.join(''));
  } else h.update(file.bytes);
  return h.digest('hex');
}

/** OPA names files relative to the bundle root, without the leading slash. */
const signedName = (path: string): string => path.replace(/^\/+/, '');

function signedFiles(bundle: Pick<Bundle, 'files'>, algorithm: string): SignedFile[] {
  return bundle.files
    .filter((f) => f.path !== '/.signatures.json')
    .map((f) => ({ name: signedName(f.path), hash: hashBundleFile(f, algorithm), algorithm }));
}

async function importKey(cfg: BundleKeyConfig, use: 'sign' | 'verify'): Promise<CryptoKey | KeyObject | Uint8Array> {
  if (/^HS\d+$/.test(cfg.algorithm)) return typeof cfg.key === 'string' ? new TextEncoder().encode(cfg.key) : cfg.key;
  if (typeof cfg.key !== 'string')
    throw new LifecycleError('unknown_key', `algorithm ${cfg.algorithm} needs a PEM key`);
  try {
    const { importPKCS8, importSPKI } = await jose();
    return use === 'sign' ? await importPKCS8(cfg.key, cfg.algorithm) : await importSPKI(cfg.key, cfg.algorithm);
  } catch (e) {
    throw new LifecycleError(
      'unknown_key',
      `cannot import ${use === 'sign' ? 'private' : 'public'} key for ${cfg.algorithm}: ${(e as Error).message}`,
    );
  }
}

export interface SignBundleOptions {
  key: BundleKeyConfig;
  /** Written as the JWS `kid` header and the payload `keyid`. */
  keyId?: string;
  scope?: string;
  hashAlgorithm?: string;
}

/** Returns the bundle with a fresh `/.signatures.json` (any previous one replaced); the other entries are kept byte for byte. */
export async function signBundle(bytes: Uint8Array, options: SignBundleOptions): Promise<Uint8Array> {
  const bundle = readBundle(bytes);
  const payload: Record<string, unknown> = { files: signedFiles(bundle, options.hashAlgorithm ?? 'SHA-256') };
  if (options.keyId) payload.keyid = options.keyId;
  if (options.scope ?? options.key.scope) payload.scope = options.scope ?? options.key.scope;
  const { CompactSign } = await jose();
  const jws = await new CompactSign(new TextEncoder().encode(JSON.stringify(payload)))
    .setProtectedHeader({ alg: options.key.algorithm, typ: 'JWT', ...(options.keyId ? { kid: options.keyId } : {}) })
    .sign(await importKey(options.key, 'sign'));
  const entries = bundle.files
    .filter((f) => f.path !== '/.signatures.json')
    .map((f) => ({ name: f.path, data: f.bytes }));
  entries.push({ name: '/.signatures.json', data: new TextEncoder().encode(JSON.stringify({ signatures: [jws] })) });
  entries.sort((a, b) => (a.name < b.name ? -1 : 1));
  return new Uint8Array(gzipSync(writeTar(entries), { level: 9 }));
}

/**
 * OPA's verification matrix: no signatures and nothing configured → unsigned (accepted); signatures present but
 * nothing configured → refused; configured but unsigned → refused (whether or not a key id is pinned).
 */
export async function verifyBundleSignature(
  bundle: Pick<Bundle, 'files' | 'signatures'>,
  config: BundleVerificationConfig | undefined,
): Promise<SignatureCheck> {
  const configured = config !== undefined && Object.keys(config.keys).length > 0;
  const sigs = bundle.signatures?.signatures;
  if (!configured) {
    if (sigs === undefined) return { status: 'unsigned' };
    throw new LifecycleError('signature_unexpected', 'bundle carries signatures but no verification key is configured');
  }
  if (sigs === undefined || sigs.length === 0)
    throw new LifecycleError(
      'signature_required',
      'bundle is not signed (/.signatures.json missing) and signature verification is required',
    );
  if (sigs.length !== 1)
    throw new LifecycleError('signature_invalid', `expected exactly one signature, found ${sigs.length}`);
  const jws = sigs[0];
  if (typeof jws !== 'string') throw new LifecycleError('signature_invalid', 'signature must be a JWS compact string');
  let header: { kid?: unknown; alg?: unknown };
  try {
    header = JSON.parse(Buffer.from(jws.split('.')[0] ?? '', 'base64url').toString('utf8')) as {
      kid?: unknown;
      alg?: unknown;
    };
  } catch {
    throw new LifecycleError('signature_invalid', 'signature is not a JWS compact serialisation');
  }
  // OPA: the configured key id wins over the header's kid.
  const keyId = config.keyId ?? (typeof header.kid === 'string' ? header.kid : undefined);
  if (keyId === undefined)
    throw new LifecycleError('unknown_key', 'signature names no key id (kid) and none is configured');
  const keyCfg = config.keys[keyId];
  if (!keyCfg)
    throw new LifecycleError(
      'unknown_key',
      `signature key id ${JSON.stringify(keyId)} is not a configured verification key`,
    );
  if (header.alg !== keyCfg.algorithm)
    throw new LifecycleError(
      'signature_invalid',
      `signature algorithm ${String(header.alg)} does not match key ${keyId} (${keyCfg.algorithm})`,
    );
  let payloadBytes: Uint8Array;
  try {
    const { compactVerify } = await jose();
    ({ payload: payloadBytes } = await compactVerify(jws, await importKey(keyCfg, 'verify'), {
      algorithms: [keyCfg.algorithm],
    }));
  } catch (e) {
    if (e instanceof LifecycleError) throw e;
    throw new LifecycleError(
      'signature_invalid',
      `signature does not verify with key ${keyId}: ${(e as Error).message}`,
    );
  }
  let payload: { files?: unknown; scope?: unknown };
  try {
    payload = JSON.parse(new TextDecoder().decode(payloadBytes)) as { files?: unknown; scope?: unknown };
  } catch {
    throw new LifecycleError('signature_invalid', 'signature payload is not JSON');
  }
  const scope = config.scope ?? keyCfg.scope;
  if (scope !== undefined && payload.scope !== scope)
    throw new LifecycleError(
      'signature_invalid',
      `signature scope ${JSON.stringify(payload.scope)} does not match the required scope ${JSON.stringify(scope)}`,
    );
  if (!Array.isArray(payload.files))
    throw new LifecycleError('signature_invalid', 'signature payload has no files list');
  const listed = new Map<string, SignedFile>();
  for (const f of payload.files as SignedFile[]) {
    if (!f || typeof f.name !== 'string' || typeof f.hash !== 'string' || typeof f.algorithm !== 'string')
      throw new LifecycleError('signature_invalid', 'malformed entry in the signature payload files');
    if (config.allowedHashes && !config.allowedHashes.includes(f.algorithm))
      throw new LifecycleError('signature_invalid', `${f.name}: hash algorithm ${f.algorithm} not allowed`);
    listed.set(signedName(normaliseBundlePath(f.name)), f);
  }
  const actual = bundle.files.filter((f) => f.path !== '/.signatures.json');
  for (const file of actual) {
    const entry = listed.get(signedName(file.path));
    if (!entry) throw new LifecycleError('signature_invalid', `${file.path}: file is not covered by the signature`);
    if (hashBundleFile(file, entry.algorithm) !== entry.hash.toLowerCase())
      throw new LifecycleError(
        'signature_invalid',
        `${file.path}: digest mismatch (the file was modified after signing)`,
      );
    listed.delete(signedName(file.path));
  }
  if (listed.size > 0)
    throw new LifecycleError(
      'signature_invalid',
      `signed file(s) missing from the bundle: ${[...listed.keys()].join(', ')}`,
    );
  return { status: 'verified', keyId };
}
