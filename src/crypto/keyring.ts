// The keyring: every key the Guardian knows, by key_id (ACS §10: `key_id` names the key a verifier resolves).
// Sources, merged in this order: key files in a directory, key objects from config, the environment.
// Private keys sign; public keys verify; `retired` keys verify only, so rotation never breaks old signatures.
// Loading is strict (fail closed): a malformed file, a key that does not fit its algorithm, or one key_id bound
// to two different keys stops start-up with a message naming the file — never the secret.
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { createHash, createPublicKey, type KeyObject } from 'node:crypto';
import {
  hybridComponents,
  isClassicalAlgorithm,
  isHybridAlgorithm,
  isPqcAlgorithm,
  type ClassicalAlgorithm,
  type PqcAlgorithm,
} from './algorithms.ts';
import { decodeBase64Strict } from './base64.ts';
import { importClassicalPrivateKey, importClassicalPublicKey } from './classical.ts';
import { KeyFileError, parseKeyFile, type KeyFileJson, type KeyMaterialJson, type KeyStatus } from './key-files.ts';
import { checkPqcPublicKey, loadPqcPrivateKey } from './pqc.ts';
import type { SignatureAlgorithm } from './types.ts';

export interface ClassicalKey {
  kind: 'classical';
  algorithm: ClassicalAlgorithm;
  publicKey: KeyObject;
  privateKey?: KeyObject;
}
export interface PqcKey {
  kind: 'pqc';
  algorithm: PqcAlgorithm;
  publicKey: Uint8Array;
  /** Expanded secret key noble's sign() takes. */
  signingKey?: Uint8Array;
}
export interface HybridKey {
  kind: 'hybrid';
  pqc: PqcKey;
  classical: ClassicalKey;
}
export interface HmacKey {
  kind: 'hmac';
  ikm: Uint8Array;
}

/** One resolved key_id. */
export interface KeyringEntry {
  keyId: string;
  algorithm: SignatureAlgorithm;
  status: KeyStatus;
  createdAt: Date;
  agentId?: string;
  /** Where it was loaded from (a path, "config[2]", "env GUARDIAN_KEYS"): for messages and `keys list`. */
  source: string;
  material: ClassicalKey | PqcKey | HybridKey | HmacKey;
  /** True when this entry can sign (private key or HMAC IKM present). */
  canSign: boolean;
}

/** What `guardian keys list` and diagnostics show: never key material. */
export interface KeyringEntrySummary {
  keyId: string;
  algorithm: SignatureAlgorithm;
  status: KeyStatus;
  createdAt: string;
  agentId?: string;
  canSign: boolean;
  /** publicKeyFingerprint(): identifies the key without revealing anything secret. */
  fingerprint: string;
  source: string;
}

export interface KeyringSources {
  /** Directory of `*.json` key files (see docs/keys.md). Missing directory = error. */
  dir?: string;
  /** Key file objects, e.g. from a configuration file. */
  keys?: readonly unknown[];
  /**
   * Environment to read (default: none). Recognised: GUARDIAN_KEY_DIR (a directory as `dir`),
   * GUARDIAN_KEYS (JSON: one key file object or an array of them), GUARDIAN_HMAC_IKM (base64 HMAC IKM).
   */
  env?: Readonly<Record<string, string | undefined>>;
  /** HMAC-SHA256 input keying material (ACS §10 baseline); registered under `hmacKeyId`. */
  hmacIkm?: Uint8Array;
  /** key_id of `hmacIkm` / GUARDIAN_HMAC_IKM; default "default". */
  hmacKeyId?: string;
}

function b64(value: string | undefined, what: string, source: string): Uint8Array {
  const bytes = decodeBase64Strict(value);
  if (!bytes) throw new KeyFileError(`${source}: ${what} is not valid base64`);
  return bytes;
}

function loadClassical(algorithm: ClassicalAlgorithm, m: KeyMaterialJson, source: string): ClassicalKey {
  try {
    const publicKey = importClassicalPublicKey(algorithm, b64(m.public_key, 'public key', source));
    const key: ClassicalKey = { kind: 'classical', algorithm, publicKey };
    if (m.private_key !== undefined) {
      key.privateKey = importClassicalPrivateKey(algorithm, b64(m.private_key, 'private key', source));
      // The private key must belong to the public key stored beside it.
      if (!createPublicKey(key.privateKey).equals(publicKey))
        throw new Error('private key does not match the public key stored with it');
    }
    return key;
  } catch (err) {
    if (err instanceof KeyFileError) throw err;
    throw new KeyFileError(`${source}: invalid ${algorithm} key: ${(err as Error).message}`);
  }
}

function loadPqc(algorithm: PqcAlgorithm, m: KeyMaterialJson, source: string): PqcKey {
  try {
    const publicKey = b64(m.public_key, 'public key', source);
    checkPqcPublicKey(algorithm, publicKey);
    const key: PqcKey = { kind: 'pqc', algorithm, publicKey };
    if (m.private_key !== undefined)
      key.signingKey = loadPqcPrivateKey(algorithm, b64(m.private_key, 'private key', source), publicKey).signingKey;
    return key;
  } catch (err) {
    if (err instanceof KeyFileError) throw err;
    throw new KeyFileError(`${source}: invalid ${algorithm} key: ${(err as Error).message}`);
  }
}

/** Turns a validated key file into a usable entry (imports and cross-checks the key material). */
export function loadKeyFile(file: KeyFileJson, source: string): KeyringEntry {
  const base = {
    keyId: file.key_id,
    algorithm: file.algorithm,
    status: file.status,
    createdAt: new Date(file.created_at),
    source,
    ...(file.agent_id !== undefined ? { agentId: file.agent_id } : {}),
  };
  const alg = file.algorithm;
  if (alg === 'HMAC-SHA256') {
    const ikm = b64(file.ikm, 'ikm', source);
    if (ikm.length < 16) throw new KeyFileError(`${source}: HMAC-SHA256 ikm must be at least 16 bytes`);
    return { ...base, material: { kind: 'hmac', ikm }, canSign: true };
  }
  if (isHybridAlgorithm(alg)) {
    const parts = hybridComponents(alg);
    const c = file.components!;
    const material: HybridKey = {
      kind: 'hybrid',
      pqc: loadPqc(parts.pqc, c.pqc, `${source} (components.pqc)`),
      classical: loadClassical(parts.classical, c.classical, `${source} (components.classical)`),
    };
    return {
      ...base,
      material,
      canSign: material.pqc.signingKey !== undefined && material.classical.privateKey !== undefined,
    };
  }
  const m: KeyMaterialJson = { public_key: file.public_key! };
  if (file.private_key !== undefined) m.private_key = file.private_key;
  if (isPqcAlgorithm(alg)) {
    const material = loadPqc(alg, m, source);
    return { ...base, material, canSign: material.signingKey !== undefined };
  }
  if (isClassicalAlgorithm(alg)) {
    const material = loadClassical(alg, m, source);
    return { ...base, material, canSign: material.privateKey !== undefined };
  }
  throw new KeyFileError(`${source}: unsupported algorithm ${alg}`);
}

/** Reads every `*.json` file of a directory as a key file (sorted by name, so load order is stable). */
export function readKeyDirectory(dir: string): { file: KeyFileJson; source: string }[] {
  let names: string[];
  try {
    if (!statSync(dir).isDirectory()) throw new Error('not a directory');
    names = readdirSync(dir)
      .filter((n) => n.endsWith('.json'))
      .sort();
  } catch (err) {
    throw new KeyFileError(`key directory ${dir}: ${(err as Error).message}`);
  }
  return names.map((name) => {
    const path = join(dir, name);
    let json: unknown;
    try {
      json = JSON.parse(readFileSync(path, 'utf8'));
    } catch (err) {
      throw new KeyFileError(`${path}: not readable JSON: ${(err as Error).message}`);
    }
    return { file: parseKeyFile(json, path), source: path };
  });
}

export class Keyring {
  readonly #entries = new Map<string, KeyringEntry>();
  #version = 0;

  /** Increases on every change, so callers can cache what they derive from the keyring. */
  get version(): number {
    return this.#version;
  }

  constructor(entries: Iterable<KeyringEntry> = []) {
    for (const e of entries) this.add(e);
  }

  /**
   * Adds an entry. The same key_id may arrive twice only as the public and private file of one key
   * (the private one wins); any other collision is an error, since one key_id must name one key.
   */
  add(entry: KeyringEntry): void {
    const existing = this.#entries.get(entry.keyId);
    if (existing) {
      if (existing.algorithm !== entry.algorithm || !samePublicMaterial(existing, entry)) {
        throw new KeyFileError(
          `key_id "${entry.keyId}" is defined twice with different keys (${existing.source}, ${entry.source})`,
        );
      }
      if (existing.canSign && !entry.canSign) return;
      if (existing.canSign === entry.canSign && existing.status !== entry.status) {
        throw new KeyFileError(
          `key_id "${entry.keyId}" is defined twice with different status (${existing.source}, ${entry.source})`,
        );
      }
    }
    this.#entries.set(entry.keyId, entry);
    this.#version++;
  }

  get(keyId: string): KeyringEntry | undefined {
    return this.#entries.get(keyId);
  }

  entries(): KeyringEntry[] {
    return [...this.#entries.values()];
  }

  /**
   * The key that signs for `algorithm` when the caller names none: the newest `active` key of that algorithm
   * holding private material (rotation: add a newer key, retire or keep the old one — it still verifies).
   */
  activeSigningKey(algorithm: SignatureAlgorithm): KeyringEntry | undefined {
    let best: KeyringEntry | undefined;
    for (const e of this.#entries.values()) {
      if (e.algorithm !== algorithm || !e.canSign || e.status !== 'active') continue;
      if (!best || e.createdAt.getTime() >= best.createdAt.getTime()) best = e;
    }
    return best;
  }

  summaries(): KeyringEntrySummary[] {
    return this.entries().map((e) => ({
      keyId: e.keyId,
      algorithm: e.algorithm,
      status: e.status,
      createdAt: e.createdAt.toISOString(),
      ...(e.agentId !== undefined ? { agentId: e.agentId } : {}),
      canSign: e.canSign,
      fingerprint: publicKeyFingerprint(e),
      source: e.source,
    }));
  }
}

/**
 * A short public identifier of the key: SHA-256 (hex, first 16 bytes) of the public key bytes (raw PQC key or
 * SPKI DER; hybrids: both, PQC first). HMAC keys get "secret" — hashing a secret would only help guess it.
 */
export function publicKeyFingerprint(entry: KeyringEntry): string {
  if (entry.material.kind === 'hmac') return 'secret';
  return createHash('sha256').update(publicKeyHex(entry), 'hex').digest('hex').slice(0, 32);
}

function publicKeyHex(e: KeyringEntry): string {
  const m = e.material;
  switch (m.kind) {
    case 'hmac':
      return Buffer.from(m.ikm).toString('hex');
    case 'pqc':
      return Buffer.from(m.publicKey).toString('hex');
    case 'classical':
      return m.publicKey.export({ format: 'der', type: 'spki' }).toString('hex');
    case 'hybrid':
      return (
        Buffer.from(m.pqc.publicKey).toString('hex') +
        m.classical.publicKey.export({ format: 'der', type: 'spki' }).toString('hex')
      );
  }
}

function samePublicMaterial(a: KeyringEntry, b: KeyringEntry): boolean {
  return publicKeyHex(a) === publicKeyHex(b);
}

/** Builds a keyring from a directory, config objects, the environment and an HMAC IKM (see KeyringSources). */
export function loadKeyring(sources: KeyringSources = {}): Keyring {
  const keyring = new Keyring();
  const env = sources.env ?? {};
  const dirs = [sources.dir, env.GUARDIAN_KEY_DIR].filter((d): d is string => typeof d === 'string' && d !== '');
  for (const dir of new Set(dirs)) {
    for (const { file, source } of readKeyDirectory(dir)) keyring.add(loadKeyFile(file, source));
  }
  (sources.keys ?? []).forEach((k, i) =>
    keyring.add(loadKeyFile(parseKeyFile(k, `config keys[${i}]`), `config keys[${i}]`)),
  );
  if (env.GUARDIAN_KEYS) {
    let parsed: unknown;
    try {
      parsed = JSON.parse(env.GUARDIAN_KEYS);
    } catch {
      throw new KeyFileError('env GUARDIAN_KEYS: not valid JSON');
    }
    const list = Array.isArray(parsed) ? parsed : [parsed];
    list.forEach((k, i) =>
      keyring.add(loadKeyFile(parseKeyFile(k, `env GUARDIAN_KEYS[${i}]`), `env GUARDIAN_KEYS[${i}]`)),
    );
  }
  const hmacKeyId = sources.hmacKeyId ?? 'default';
  let ikm = sources.hmacIkm;
  let ikmSource = 'config hmacIkm';
  if (!ikm && env.GUARDIAN_HMAC_IKM) {
    const decoded = decodeBase64Strict(env.GUARDIAN_HMAC_IKM.trim());
    if (!decoded) throw new KeyFileError('env GUARDIAN_HMAC_IKM: not valid base64');
    ikm = decoded;
    ikmSource = 'env GUARDIAN_HMAC_IKM';
  }
  if (ikm) {
    if (ikm.length < 16) throw new KeyFileError(`${ikmSource}: HMAC-SHA256 IKM must be at least 16 bytes`);
    keyring.add({
      keyId: hmacKeyId,
      algorithm: 'HMAC-SHA256',
      status: 'active',
      createdAt: new Date(0),
      source: ikmSource,
      material: { kind: 'hmac', ikm },
      canSign: true,
    });
  }
  return keyring;
}
