// JWT decoding and signature verification (JWS compact serialisation) with node:crypto, which is
// synchronous — opa-wasm calls host builtins synchronously, so async libraries cannot be used here.
import {
  X509Certificate,
  createHmac,
  createPublicKey,
  timingSafeEqual,
  verify,
  constants,
  type KeyObject,
} from 'node:crypto';
import type { HostBuiltinContext } from './context.ts';
import type { HostImpls } from './registry.ts';
import { BuiltinError, isObject, obj, str, type JsonObject } from './values.ts';

interface DecodedJwt {
  header: JsonObject;
  payload: JsonObject;
  signature: Buffer;
  signingInput: string;
}

function b64json(part: string, what: string): JsonObject {
  if (!/^[A-Za-z0-9_-]*={0,2}$/.test(part))
    throw new BuiltinError(`JWT ${what} had invalid encoding: illegal base64 data`);
  let v: unknown;
  try {
    v = JSON.parse(Buffer.from(part, 'base64url').toString('utf8'));
  } catch (e) {
    throw new BuiltinError(`JWT ${what} had invalid encoding: ${(e as Error).message}`);
  }
  if (!isObject(v)) throw new BuiltinError(`JWT ${what} must be a JSON object`);
  return v;
}

export function decodeJwt(token: string): DecodedJwt {
  const parts = token.split('.');
  if (parts.length === 1) throw new BuiltinError('encoded JWT had no period separators');
  if (parts.length === 5) throw new BuiltinError('JWT is a JWE object, which is not supported');
  if (parts.length !== 3) throw new BuiltinError(`encoded JWT must have 3 sections, found ${parts.length}`);
  const header = b64json(parts[0], 'header');
  let payload: JsonObject;
  if (header.cty === 'JWT') {
    // Nested JWT: the payload is itself a token; OPA returns the innermost claims.
    const inner = decodeJwt(Buffer.from(parts[1], 'base64url').toString('utf8'));
    payload = inner.payload;
  } else payload = b64json(parts[1], 'payload');
  return { header, payload, signature: Buffer.from(parts[2], 'base64url'), signingInput: `${parts[0]}.${parts[1]}` };
}

/** Public keys from a PEM certificate, a PEM public key, or a JWK / JWK set (JSON). */
function publicKeys(material: string): KeyObject[] {
  const text = material.trim();
  try {
    if (text.startsWith('{')) {
      const jwk = JSON.parse(text) as { keys?: JsonObject[] } & JsonObject;
      const list = Array.isArray(jwk.keys) ? jwk.keys : [jwk];
      return list.map((k) => createPublicKey({ key: k as unknown as import('node:crypto').JsonWebKey, format: 'jwk' }));
    }
    if (text.includes('BEGIN CERTIFICATE')) {
      const blocks = text.match(/-----BEGIN CERTIFICATE-----[\s\S]*?-----END CERTIFICATE-----/g) ?? [];
      return blocks.map((b) => new X509Certificate(b).publicKey);
    }
    return [createPublicKey(text)];
  } catch (e) {
    throw new BuiltinError(`failed to parse a JWK key (set): ${(e as Error).message}`);
  }
}

const HASH: Record<string, string> = { '256': 'sha256', '384': 'sha384', '512': 'sha512' };

function verifyWithKey(alg: string, jwt: DecodedJwt, key: KeyObject): boolean {
  const family = alg.slice(0, 2);
  const hash = HASH[alg.slice(2)];
  if (!hash) return false;
  const data = Buffer.from(jwt.signingInput);
  try {
    if (family === 'RS') return key.asymmetricKeyType === 'rsa' && verify(hash, data, key, jwt.signature);
    if (family === 'PS') {
      return verify(
        hash,
        data,
        { key, padding: constants.RSA_PKCS1_PSS_PADDING, saltLength: constants.RSA_PSS_SALTLEN_DIGEST },
        jwt.signature,
      );
    }
    if (family === 'ES')
      return key.asymmetricKeyType === 'ec' && verify(hash, data, { key, dsaEncoding: 'ieee-p1363' }, jwt.signature);
  } catch {
    return false;
  }
  return false;
}

function verifyHmac(alg: string, jwt: DecodedJwt, secret: string): boolean {
  const hash = HASH[alg.slice(2)];
  if (!hash || !alg.startsWith('HS')) return false;
  const mac = createHmac(hash, Buffer.from(secret, 'utf8')).update(jwt.signingInput).digest();
  return mac.length === jwt.signature.length && timingSafeEqual(mac, jwt.signature);
}

function verifyAsymmetric(alg: string, token: string, material: string): boolean {
  const jwt = decodeJwt(token);
  return publicKeys(material).some((k) => verifyWithKey(alg, jwt, k));
}

/** io.jwt.decode_verify: signature + alg/iss/aud/exp/nbf constraints; invalid → [false, {}, {}]. */
function decodeVerify(token: string, constraints: JsonObject, ctx: HostBuiltinContext): unknown[] {
  const invalid = [false, {}, {}];
  for (const k of Object.keys(constraints)) {
    if (!['cert', 'secret', 'alg', 'iss', 'aud', 'time'].includes(k))
      throw new BuiltinError(`unknown token validation constraint: ${k}`);
  }
  const hasCert = typeof constraints.cert === 'string';
  const hasSecret = typeof constraints.secret === 'string';
  if (hasCert === hasSecret) throw new BuiltinError('exactly one of cert or secret must be given as a string');
  const jwt = decodeJwt(token);
  const alg = typeof jwt.header.alg === 'string' ? jwt.header.alg : '';
  if (typeof constraints.alg === 'string' && constraints.alg !== alg) return invalid;
  const ok = hasSecret
    ? verifyHmac(alg, jwt, constraints.secret as string)
    : publicKeys(constraints.cert as string).some((k) => verifyWithKey(alg, jwt, k));
  if (!ok) return invalid;
  const claims = jwt.payload;
  if (typeof constraints.iss === 'string' && claims.iss !== constraints.iss) return invalid;
  const aud = claims.aud;
  if (aud !== undefined) {
    if (typeof constraints.aud !== 'string') return invalid;
    const list = Array.isArray(aud) ? aud : [aud];
    if (!list.includes(constraints.aud)) return invalid;
  } else if (typeof constraints.aud === 'string') return invalid;
  const nowNs = typeof constraints.time === 'number' ? constraints.time : Number(ctx.evaluation().nowNs);
  const nowSec = nowNs / 1e9;
  if (typeof claims.exp === 'number' && nowSec >= claims.exp) return invalid;
  if (typeof claims.nbf === 'number' && nowSec < claims.nbf) return invalid;
  return [true, jwt.header, claims];
}

const asym = (alg: string) => (args: unknown[]) => verifyAsymmetric(alg, str(args[0], 1), str(args[1], 2));
const hs = (alg: string) => (args: unknown[]) => verifyHmac(alg, decodeJwt(str(args[0], 1)), str(args[1], 2));

export const jwtBuiltins: HostImpls = {
  'io.jwt.decode'([t]) {
    const jwt = decodeJwt(str(t, 1));
    return [jwt.header, jwt.payload, jwt.signature.toString('hex')];
  },
  'io.jwt.decode_verify': ([t, c], ctx) => decodeVerify(str(t, 1), obj(c, 2), ctx),
  'io.jwt.verify_hs256': hs('HS256'),
  'io.jwt.verify_hs384': hs('HS384'),
  'io.jwt.verify_hs512': hs('HS512'),
  'io.jwt.verify_rs256': asym('RS256'),
  'io.jwt.verify_rs384': asym('RS384'),
  'io.jwt.verify_rs512': asym('RS512'),
  'io.jwt.verify_ps256': asym('PS256'),
  'io.jwt.verify_ps384': asym('PS384'),
  'io.jwt.verify_ps512': asym('PS512'),
  'io.jwt.verify_es256': asym('ES256'),
  'io.jwt.verify_es384': asym('ES384'),
  'io.jwt.verify_es512': asym('ES512'),
};
