// The on-disk key file format (documented in docs/keys.md). One JSON object per key id:
//   <key_id>.key.json  — private material, written mode 0600 (signing)
//   <key_id>.pub.json  — public material only (verification; safe to hand to agents and auditors)
// Binary fields are standard base64. Classical keys are DER (SPKI / PKCS#8); PQC keys are the raw FIPS encodings,
// ML-DSA private keys the 32-byte seed ξ; hybrids embed both component keys so one key_id pins both (ACS §10.2).
import { generateKeyPairSync } from 'node:crypto';
import {
  hybridComponents,
  isClassicalAlgorithm,
  isHybridAlgorithm,
  isPqcAlgorithm,
  isSignatureAlgorithm,
  type ClassicalAlgorithm,
  type PqcAlgorithm,
} from './algorithms.ts';
import { decodeBase64Strict, encodeBase64 } from './base64.ts';
import { exportPkcs8Der, exportSpkiDer } from './classical.ts';
import { generatePqcKeyPair } from './pqc.ts';
import type { SignatureAlgorithm } from './types.ts';

export const KEY_FILE_FORMAT = 'acs-guardian-key/1';

/** `active` keys sign and verify; `retired` keys only verify (rotation: old signatures keep verifying). */
export type KeyStatus = 'active' | 'retired';

export interface KeyMaterialJson {
  /** base64: SPKI DER (ECDSA/RSA) or raw FIPS 204/205 public key (ML-DSA/SLH-DSA). */
  public_key: string;
  /** base64, secret: PKCS#8 DER (ECDSA/RSA), ML-DSA seed ξ (32 bytes), SLH-DSA secret key (64 bytes). */
  private_key?: string;
}

export interface KeyFileJson {
  format: typeof KEY_FILE_FORMAT;
  key_id: string;
  algorithm: SignatureAlgorithm;
  /** ISO 8601; among active keys of one algorithm the newest signs. */
  created_at: string;
  status: KeyStatus;
  /** When set, only requests from this agent_id may be verified with this key. */
  agent_id?: string;
  /** Single-algorithm keys (everything except hybrids and HMAC). */
  public_key?: string;
  private_key?: string;
  /** HMAC-SHA256 only: base64 input keying material (≥ 16 bytes) for the per-session HKDF (ACS §10). */
  ikm?: string;
  /** Hybrids only: both component keys, PQC first (ACS §10.2). */
  components?: { pqc: KeyMaterialJson; classical: KeyMaterialJson };
}

/** Thrown for unreadable or invalid key material; the message names the source, never the secret. */
export class KeyFileError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'KeyFileError';
  }
}

const KEY_ID_PATTERN = /^[A-Za-z0-9][A-Za-z0-9._:@+-]{0,127}$/;

/** Key ids become file names, so they are restricted to a safe, printable alphabet. */
export function isValidKeyId(keyId: unknown): keyId is string {
  return typeof keyId === 'string' && KEY_ID_PATTERN.test(keyId);
}

/** Validates the JSON shape of a key file (not the key material itself: see keyring.ts). */
export function parseKeyFile(value: unknown, source: string): KeyFileJson {
  const fail = (why: string): never => {
    throw new KeyFileError(`${source}: ${why}`);
  };
  if (typeof value !== 'object' || value === null || Array.isArray(value)) fail('key file must be a JSON object');
  const o = value as Record<string, unknown>;
  if (o.format !== KEY_FILE_FORMAT) fail(`"format" must be "${KEY_FILE_FORMAT}"`);
  if (!isValidKeyId(o.key_id)) fail('"key_id" must match ' + KEY_ID_PATTERN.source);
  if (!isSignatureAlgorithm(o.algorithm))
    fail(`"algorithm" must be an ACS §10.1 name, got ${JSON.stringify(o.algorithm)}`);
  const algorithm = o.algorithm as SignatureAlgorithm;
  if (typeof o.created_at !== 'string' || Number.isNaN(Date.parse(o.created_at)))
    fail('"created_at" must be an ISO 8601 timestamp');
  const status = o.status ?? 'active';
  if (status !== 'active' && status !== 'retired') fail('"status" must be "active" or "retired"');
  if (o.agent_id !== undefined && (typeof o.agent_id !== 'string' || o.agent_id === ''))
    fail('"agent_id" must be a non-empty string');
  const b64 = (field: string, v: unknown, required: boolean): string | undefined => {
    if (v === undefined && !required) return undefined;
    if (decodeBase64Strict(v) === null) fail(`"${field}" must be standard padded base64`);
    return v as string;
  };
  const file: KeyFileJson = {
    format: KEY_FILE_FORMAT,
    key_id: o.key_id as string,
    algorithm,
    created_at: o.created_at as string,
    status: status as KeyStatus,
  };
  if (o.agent_id !== undefined) file.agent_id = o.agent_id as string;
  if (algorithm === 'HMAC-SHA256') {
    file.ikm = b64('ikm', o.ikm, true);
  } else if (isHybridAlgorithm(algorithm)) {
    const c = o.components as Record<string, unknown> | undefined;
    if (typeof c !== 'object' || c === null) fail('hybrid keys need "components": {"pqc": …, "classical": …}');
    const part = (name: 'pqc' | 'classical'): KeyMaterialJson => {
      const p = (c as Record<string, unknown>)[name] as Record<string, unknown> | undefined;
      if (typeof p !== 'object' || p === null) fail(`hybrid key is missing "components.${name}"`);
      const m: KeyMaterialJson = { public_key: b64(`components.${name}.public_key`, p!.public_key, true)! };
      const priv = b64(`components.${name}.private_key`, p!.private_key, false);
      if (priv !== undefined) m.private_key = priv;
      return m;
    };
    file.components = { pqc: part('pqc'), classical: part('classical') };
    if ((file.components.pqc.private_key === undefined) !== (file.components.classical.private_key === undefined)) {
      fail('a hybrid key carries private material for both components or for neither');
    }
  } else {
    file.public_key = b64('public_key', o.public_key, true);
    const priv = b64('private_key', o.private_key, false);
    if (priv !== undefined) file.private_key = priv;
  }
  return file;
}

/** True when the file holds secret material (HMAC IKM or a private key). */
export function hasSecretMaterial(file: KeyFileJson): boolean {
  return file.ikm !== undefined || file.private_key !== undefined || file.components?.pqc.private_key !== undefined;
}

/** The same key with every secret removed (what `<key_id>.pub.json` holds). HMAC keys have no public half. */
export function publicPart(file: KeyFileJson): KeyFileJson {
  if (file.algorithm === 'HMAC-SHA256') throw new KeyFileError(`${file.key_id}: HMAC-SHA256 keys have no public part`);
  const { private_key: _p, ikm: _i, components, ...rest } = file;
  const pub: KeyFileJson = { ...rest };
  if (components) {
    pub.components = {
      pqc: { public_key: components.pqc.public_key },
      classical: { public_key: components.classical.public_key },
    };
  }
  return pub;
}

export interface GenerateKeyOptions {
  keyId: string;
  agentId?: string;
  /** Defaults to now. */
  createdAt?: Date;
  /** RSA modulus for RSA-PSS-SHA256 (and its hybrid); default 3072. */
  rsaModulusBits?: number;
}

function generateClassical(algorithm: ClassicalAlgorithm, rsaModulusBits: number): KeyMaterialJson {
  const pair =
    algorithm === 'ECDSA-P256'
      ? generateKeyPairSync('ec', { namedCurve: 'prime256v1' })
      : generateKeyPairSync('rsa', { modulusLength: rsaModulusBits, publicExponent: 0x10001 });
  return {
    public_key: encodeBase64(exportSpkiDer(pair.publicKey)),
    private_key: encodeBase64(exportPkcs8Der(pair.privateKey)),
  };
}

function generatePqc(algorithm: PqcAlgorithm): KeyMaterialJson {
  const pair = generatePqcKeyPair(algorithm);
  return { public_key: encodeBase64(pair.publicKey), private_key: encodeBase64(pair.privateKey) };
}

/** Generates a fresh key of any §10.1 algorithm as a private key file (it includes the public half). */
export function generateKeyFile(algorithm: SignatureAlgorithm, options: GenerateKeyOptions): KeyFileJson {
  if (!isValidKeyId(options.keyId))
    throw new KeyFileError(`invalid key id ${JSON.stringify(options.keyId)}: must match ${KEY_ID_PATTERN.source}`);
  const rsaBits = options.rsaModulusBits ?? 3072;
  if (!Number.isInteger(rsaBits) || rsaBits < 2048 || rsaBits > 8192)
    throw new KeyFileError('RSA modulus must be 2048..8192 bits');
  const file: KeyFileJson = {
    format: KEY_FILE_FORMAT,
    key_id: options.keyId,
    algorithm,
    created_at: (options.createdAt ?? new Date()).toISOString(),
    status: 'active',
  };
  if (options.agentId !== undefined) file.agent_id = options.agentId;
  if (algorithm === 'HMAC-SHA256') {
    file.ikm = encodeBase64(crypto.getRandomValues(new Uint8Array(32)));
  } else if (isHybridAlgorithm(algorithm)) {
    const parts = hybridComponents(algorithm);
    file.components = { pqc: generatePqc(parts.pqc), classical: generateClassical(parts.classical, rsaBits) };
  } else if (isPqcAlgorithm(algorithm)) {
    Object.assign(file, generatePqc(algorithm));
  } else if (isClassicalAlgorithm(algorithm)) {
    Object.assign(file, generateClassical(algorithm, rsaBits));
  }
  return file;
}
