// X.509 parsing and JWT verification against real keys and a real certificate (generated with
// node:crypto / openssl, signed independently of the code under test).
import {
  createHmac,
  createSign,
  generateKeyPairSync,
  sign as cryptoSign,
  constants,
  type KeyObject,
} from 'node:crypto';
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { HostBuiltinContext } from '../../../src/rego/builtins/index.ts';
import { builtins, call } from './call.ts';

const certPem = readFileSync(new URL('./fixtures/cert.pem', import.meta.url), 'utf8');

const b64url = (v: unknown) => Buffer.from(typeof v === 'string' ? v : JSON.stringify(v)).toString('base64url');

function token(header: object, payload: object, signer: (input: string) => Buffer): string {
  const input = `${b64url(header)}.${b64url(payload)}`;
  return `${input}.${signer(input).toString('base64url')}`;
}

const hs = (alg: string, secret: string) => (input: string) =>
  createHmac(`sha${alg.slice(2)}`, secret)
    .update(input)
    .digest();
const rs = (alg: string, key: KeyObject) => (input: string) =>
  createSign(`sha${alg.slice(2)}`)
    .update(input)
    .sign(key);
const ps = (alg: string, key: KeyObject) => (input: string) =>
  cryptoSign(`sha${alg.slice(2)}`, Buffer.from(input), {
    key,
    padding: constants.RSA_PKCS1_PSS_PADDING,
    saltLength: constants.RSA_PSS_SALTLEN_DIGEST,
  });
const es = (alg: string, key: KeyObject) => (input: string) =>
  cryptoSign(`sha${alg.slice(2)}`, Buffer.from(input), { key, dsaEncoding: 'ieee-p1363' });

const rsa = generateKeyPairSync('rsa', { modulusLength: 2048 });
const otherRsa = generateKeyPairSync('rsa', { modulusLength: 2048 });
const curves: Record<string, string> = { ES256: 'P-256', ES384: 'P-384', ES512: 'P-521' };
const ec = Object.fromEntries(
  Object.entries(curves).map(([alg, namedCurve]) => [alg, generateKeyPairSync('ec', { namedCurve })]),
);
const rsaPem = rsa.publicKey.export({ type: 'spki', format: 'pem' }) as string;

describe('crypto.x509.parse_certificates', () => {
  it('parses a PEM certificate into Go x509.Certificate fields', () => {
    const [cert] = call('crypto.x509.parse_certificates', certPem) as Record<string, unknown>[];
    expect(cert.SerialNumber).toBe(4660);
    expect((cert.Subject as { Names: unknown[] }).Names).toContainEqual({ Type: [2, 5, 4, 3], Value: 'guardian.test' });
    expect(cert.Subject).toMatchObject({
      CommonName: 'guardian.test',
      Country: ['DE'],
      Organization: ['ACS Guardian Test'],
      OrganizationalUnit: ['Builtins'],
    });
    expect(cert.Issuer).toMatchObject({ CommonName: 'guardian.test' });
    expect(cert.DNSNames).toEqual(['guardian.test', '*.guardian.test']);
    expect(cert.IPAddresses).toEqual(['10.0.0.1']);
    expect(cert.EmailAddresses).toEqual(['ops@guardian.test']);
    expect(cert.URIStrings).toEqual(['spiffe://guardian.test/builtins']);
    expect(cert.NotAfter).toMatch(/^2126-11-05T16:06:15Z$/);
    expect(cert.IsCA).toBe(true);
  });

  it('reads extensions, key usage and extended key usage as Go does, and an empty subject', () => {
    // openssl: empty subject and issuer; keyUsage = critical, digitalSignature, keyEncipherment;
    // extendedKeyUsage = codeSigning, serverAuth, 1.2.3.4.5; a critical URI SAN; 1.3.6.1.4.1.57264.1.2 as
    // ASN1:UTF8String:push.
    const pem = readFileSync(new URL('./fixtures/cert-no-subject.pem', import.meta.url), 'utf8');
    const [cert] = call('crypto.x509.parse_certificates', pem) as Record<string, unknown>[];
    expect(cert.Subject).toEqual({ Names: null });
    expect(cert.Issuer).toEqual({ Names: null });
    // Go's KeyUsage bits: DigitalSignature = 1, KeyEncipherment = 4; ExtKeyUsage CodeSigning = 3, ServerAuth = 1
    expect(cert.KeyUsage).toBe(5);
    expect(cert.ExtKeyUsage).toEqual([3, 1]);
    expect(cert.UnknownExtKeyUsage).toEqual([[1, 2, 3, 4, 5]]);
    const extensions = cert.Extensions as { Id: number[]; Critical: boolean; Value: string }[];
    expect(extensions.map((e) => [e.Id.join('.'), e.Critical])).toEqual([
      ['2.5.29.15', true],
      ['2.5.29.37', false],
      ['2.5.29.17', true],
      ['1.3.6.1.4.1.57264.1.2', false],
      ['2.5.29.14', false],
    ]);
    // the extnValue bytes, base64 (Go's []byte): UTF8String "push" is 0c 04 70 75 73 68
    expect(extensions[3].Value).toBe(Buffer.from([0x0c, 0x04, 0x70, 0x75, 0x73, 0x68]).toString('base64'));
    expect(cert.URIStrings).toEqual(['https://guardian.test/workflows/build.yaml']);
    // no key usage extensions: Go's zero KeyUsage and nil slices
    const [plain] = call('crypto.x509.parse_certificates', certPem) as Record<string, unknown>[];
    expect(plain.KeyUsage).toBe(0);
    expect(plain.ExtKeyUsage).toBeNull();
    expect((plain.Extensions as { Id: number[] }[]).map((e) => e.Id.join('.'))).toEqual([
      '2.5.29.14',
      '2.5.29.35',
      '2.5.29.19',
      '2.5.29.17',
    ]);
  });

  it('accepts base64-encoded PEM and base64 DER, and several certificates', () => {
    const b64pem = Buffer.from(certPem).toString('base64');
    const der = certPem.replace(/-----[A-Z ]+-----|\s/g, '');
    expect(call('crypto.x509.parse_certificates', b64pem)).toEqual(call('crypto.x509.parse_certificates', certPem));
    expect(call('crypto.x509.parse_certificates', der)).toEqual(call('crypto.x509.parse_certificates', certPem));
    expect(call('crypto.x509.parse_certificates', certPem + certPem)).toHaveLength(2);
  });

  it('rejects garbage with a builtin error', () => {
    expect(() =>
      call('crypto.x509.parse_certificates', '-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----'),
    ).toThrow(/eval_builtin_error: crypto.x509.parse_certificates: x509:/);
  });
});

describe('io.jwt.decode', () => {
  it('returns header, claims and the hex signature', () => {
    const t = token({ alg: 'HS256', typ: 'JWT' }, { sub: 'agent-1', n: 1 }, hs('HS256', 'secret'));
    const [header, payload, sig] = call('io.jwt.decode', t) as [object, object, string];
    expect(header).toEqual({ alg: 'HS256', typ: 'JWT' });
    expect(payload).toEqual({ sub: 'agent-1', n: 1 });
    expect(sig).toBe(hs('HS256', 'secret')(t.split('.').slice(0, 2).join('.')).toString('hex'));
  });

  it('unwraps nested tokens (cty: JWT)', () => {
    const inner = token({ alg: 'HS256' }, { sub: 'inner' }, hs('HS256', 'k'));
    const outer = `${b64url({ alg: 'HS256', cty: 'JWT' })}.${b64url(inner)}.${Buffer.from('sig').toString('base64url')}`;
    expect((call('io.jwt.decode', outer) as unknown[])[1]).toEqual({ sub: 'inner' });
  });
});

describe('io.jwt.verify_*', () => {
  for (const alg of ['HS256', 'HS384', 'HS512']) {
    it(`${alg}: right secret verifies, wrong secret and tampered claims do not`, () => {
      const t = token({ alg }, { sub: 'a' }, hs(alg, 'right'));
      const name = `io.jwt.verify_${alg.toLowerCase()}`;
      expect(call(name, t, 'right')).toBe(true);
      expect(call(name, t, 'wrong')).toBe(false);
      const [h, , s] = t.split('.');
      expect(call(name, `${h}.${b64url({ sub: 'b' })}.${s}`, 'right')).toBe(false);
    });
  }

  for (const alg of ['RS256', 'RS384', 'RS512', 'PS256', 'PS384', 'PS512']) {
    it(`${alg}: PEM public key and JWK set`, () => {
      const signer = alg.startsWith('RS') ? rs(alg, rsa.privateKey) : ps(alg, rsa.privateKey);
      const t = token({ alg }, { sub: 'a' }, signer);
      const name = `io.jwt.verify_${alg.toLowerCase()}`;
      expect(call(name, t, rsaPem)).toBe(true);
      const jwks = JSON.stringify({
        keys: [otherRsa.publicKey.export({ format: 'jwk' }), rsa.publicKey.export({ format: 'jwk' })],
      });
      expect(call(name, t, jwks)).toBe(true);
      expect(call(name, t, otherRsa.publicKey.export({ type: 'spki', format: 'pem' }))).toBe(false);
    });
  }

  for (const alg of ['ES256', 'ES384', 'ES512']) {
    it(`${alg}: raw r||s signatures against the EC public key`, () => {
      const t = token({ alg }, { sub: 'a' }, es(alg, ec[alg].privateKey));
      const name = `io.jwt.verify_${alg.toLowerCase()}`;
      expect(call(name, t, ec[alg].publicKey.export({ type: 'spki', format: 'pem' }))).toBe(true);
      expect(call(name, t, JSON.stringify(ec[alg].publicKey.export({ format: 'jwk' })))).toBe(true);
      expect(call(name, t, rsaPem)).toBe(false);
    });
  }

  it('verifies against the key inside a PEM certificate', () => {
    // The fixture's private key is not kept; a token signed by another key must fail against it.
    const t = token({ alg: 'ES256' }, { sub: 'a' }, es('ES256', ec.ES256.privateKey));
    expect(call('io.jwt.verify_es256', t, certPem)).toBe(false);
  });

  it('unparseable key material is a builtin error', () => {
    const t = token({ alg: 'RS256' }, {}, rs('RS256', rsa.privateKey));
    expect(() => call('io.jwt.verify_rs256', t, 'not a key')).toThrow(
      /eval_builtin_error: io.jwt.verify_rs256: failed to parse a JWK key/,
    );
  });
});

describe('io.jwt.decode_verify', () => {
  const nowNs = 1_700_000_000n * 1_000_000_000n;
  const ctx = new HostBuiltinContext({ strict: true });
  const verify = builtins(ctx);
  const claims = { iss: 'guardian', aud: 'agents', exp: 1_700_000_100, nbf: 1_699_999_900, sub: 'a' };
  const t = token({ alg: 'HS256' }, claims, hs('HS256', 's3cret'));

  it('valid token: [true, header, claims] at the evaluation clock', () => {
    ctx.beginEvaluation({ now: nowNs });
    expect(verify('io.jwt.decode_verify', t, { secret: 's3cret', iss: 'guardian', aud: 'agents' })).toEqual([
      true,
      { alg: 'HS256' },
      claims,
    ]);
  });

  it('each failed constraint gives [false, {}, {}]', () => {
    ctx.beginEvaluation({ now: nowNs });
    const invalid = [false, {}, {}];
    expect(verify('io.jwt.decode_verify', t, { secret: 'nope', aud: 'agents' })).toEqual(invalid);
    expect(verify('io.jwt.decode_verify', t, { secret: 's3cret', aud: 'agents', iss: 'other' })).toEqual(invalid);
    expect(verify('io.jwt.decode_verify', t, { secret: 's3cret' })).toEqual(invalid); // token has aud, constraint none
    expect(verify('io.jwt.decode_verify', t, { secret: 's3cret', aud: 'other' })).toEqual(invalid);
    expect(verify('io.jwt.decode_verify', t, { secret: 's3cret', aud: 'agents', alg: 'RS256' })).toEqual(invalid);
    expect(verify('io.jwt.decode_verify', t, { secret: 's3cret', aud: 'agents', time: 1_700_000_200 * 1e9 })).toEqual(
      invalid,
    ); // expired
    expect(verify('io.jwt.decode_verify', t, { secret: 's3cret', aud: 'agents', time: 1_699_999_000 * 1e9 })).toEqual(
      invalid,
    ); // not yet valid
  });

  it('asymmetric: cert constraint with a PEM key', () => {
    const rt = token({ alg: 'RS256' }, { sub: 'a' }, rs('RS256', rsa.privateKey));
    expect((verify('io.jwt.decode_verify', rt, { cert: rsaPem }) as unknown[])[0]).toBe(true);
  });

  it('needs exactly one of cert/secret and known constraint names', () => {
    expect(() => verify('io.jwt.decode_verify', t, {})).toThrow(/exactly one of cert or secret/);
    expect(() => verify('io.jwt.decode_verify', t, { secret: 'a', cert: 'b' })).toThrow(
      /exactly one of cert or secret/,
    );
    expect(() => verify('io.jwt.decode_verify', t, { secret: 'a', colour: 1 })).toThrow(
      /unknown token validation constraint: colour/,
    );
  });
});
