// Hashes, HMACs and X.509 parsing via node:crypto.
import { X509Certificate, createHash, createHmac, timingSafeEqual } from 'node:crypto';
import type { HostImpls } from './registry.ts';
import { BuiltinError, str } from './values.ts';
import { certificateExtensions } from './x509-extensions.ts';

const hash = (alg: string) => (args: unknown[]) => createHash(alg).update(str(args[0], 1), 'utf8').digest('hex');
const hmac = (alg: string) => (args: unknown[]) =>
  createHmac(alg, Buffer.from(str(args[1], 2), 'utf8'))
    .update(str(args[0], 1), 'utf8')
    .digest('hex');

/** Certificates given as PEM, or base64 of PEM or DER (OPA accepts all three). */
function certificateBlobs(input: string): Buffer[] {
  const text = input.includes('-----BEGIN') ? input : Buffer.from(input, 'base64').toString('latin1');
  if (text.includes('-----BEGIN')) {
    const blocks = text.match(/-----BEGIN CERTIFICATE-----[\s\S]*?-----END CERTIFICATE-----/g);
    if (!blocks) throw new BuiltinError('x509: no certificates found in PEM input');
    return blocks.map((b) => Buffer.from(b));
  }
  return [Buffer.from(input, 'base64')];
}

const OIDS: Record<string, number[]> = {
  C: [2, 5, 4, 6],
  O: [2, 5, 4, 10],
  OU: [2, 5, 4, 11],
  CN: [2, 5, 4, 3],
  L: [2, 5, 4, 7],
  ST: [2, 5, 4, 8],
  street: [2, 5, 4, 9],
  postalCode: [2, 5, 4, 17],
  serialNumber: [2, 5, 4, 5],
  emailAddress: [1, 2, 840, 113549, 1, 9, 1],
};

/**
 * Distinguished name as Go's pkix.Name fields (the subset X509Certificate exposes). An empty name (Fulcio
 * certificates have no subject) is undefined in node:crypto; Go's Names is then nil, JSON null.
 */
function pkixName(dn: string | undefined): Record<string, unknown> {
  const fields: Record<string, string[]> = {};
  for (const line of (dn ?? '').split('\n')) {
    const eq = line.indexOf('=');
    if (eq > 0) (fields[line.slice(0, eq)] ??= []).push(line.slice(eq + 1));
  }
  const out: Record<string, unknown> = {};
  const map: [string, string][] = [
    ['C', 'Country'],
    ['O', 'Organization'],
    ['OU', 'OrganizationalUnit'],
    ['L', 'Locality'],
    ['ST', 'Province'],
    ['street', 'StreetAddress'],
    ['postalCode', 'PostalCode'],
  ];
  for (const [short, long] of map) if (fields[short]) out[long] = fields[short];
  if (fields.serialNumber) out.SerialNumber = fields.serialNumber[0];
  if (fields.CN) out.CommonName = fields.CN[0];
  // Go's pkix.AttributeTypeAndValue: the attribute type as its ASN.1 OID.
  const names = Object.entries(fields).flatMap(([type, values]) =>
    values.map((value) => ({ Type: OIDS[type] ?? type, Value: value })),
  );
  out.Names = names.length > 0 ? names : null;
  return out;
}

function subjectAltNames(san: string | undefined): {
  DNSNames?: string[];
  EmailAddresses?: string[];
  IPAddresses?: string[];
  URIStrings?: string[];
} {
  const out: { DNSNames?: string[]; EmailAddresses?: string[]; IPAddresses?: string[]; URIStrings?: string[] } = {};
  if (!san) return out;
  for (const entry of san.split(', ')) {
    const colon = entry.indexOf(':');
    const kind = entry.slice(0, colon);
    const value = entry.slice(colon + 1);
    if (kind === 'DNS') (out.DNSNames ??= []).push(value);
    else if (kind === 'email') (out.EmailAddresses ??= []).push(value);
    else if (kind === 'IP Address') (out.IPAddresses ??= []).push(value);
    else if (kind === 'URI') (out.URIStrings ??= []).push(value);
  }
  return out;
}

/** A certificate as a JSON object with Go's x509.Certificate field names (the commonly used subset). */
export function certificateObject(cert: X509Certificate): Record<string, unknown> {
  return {
    Raw: cert.raw.toString('base64'),
    Version: 3,
    // Go marshals *big.Int as a JSON number; kept exact (bigint) beyond 2^53.
    SerialNumber: exactInteger(BigInt('0x' + cert.serialNumber)),
    Issuer: pkixName(cert.issuer),
    Subject: pkixName(cert.subject),
    NotBefore: new Date(cert.validFrom).toISOString().replace('.000Z', 'Z'),
    NotAfter: new Date(cert.validTo).toISOString().replace('.000Z', 'Z'),
    IsCA: cert.ca,
    PublicKeyAlgorithm: cert.publicKey.asymmetricKeyType ?? 'unknown',
    FingerprintSHA256: cert.fingerprint256.replace(/:/g, '').toLowerCase(),
    ...subjectAltNames(cert.subjectAltName),
    ...certificateExtensions(cert.raw),
  };
}

const exactInteger = (v: bigint): number | bigint => (v <= BigInt(Number.MAX_SAFE_INTEGER) ? Number(v) : v);

export function parseCertificates(input: string): X509Certificate[] {
  return certificateBlobs(input).map((blob) => {
    try {
      return new X509Certificate(blob);
    } catch (e) {
      throw new BuiltinError(`x509: ${(e as Error).message}`);
    }
  });
}

export const cryptoBuiltins: HostImpls = {
  'crypto.sha256': hash('sha256'),
  'crypto.sha1': hash('sha1'),
  'crypto.md5': hash('md5'),
  'crypto.hmac.sha256': hmac('sha256'),
  'crypto.hmac.sha512': hmac('sha512'),
  'crypto.hmac.sha1': hmac('sha1'),
  'crypto.hmac.md5': hmac('md5'),
  'crypto.hmac.equal'([a, b]) {
    // Constant-time comparison of MACs (length leaks, as with Go's hmac.Equal).
    const x = Buffer.from(str(a, 1), 'utf8');
    const y = Buffer.from(str(b, 2), 'utf8');
    return x.length === y.length && timingSafeEqual(x, y);
  },
  'crypto.x509.parse_certificates': ([s]) => parseCertificates(str(s, 1)).map(certificateObject),
};
