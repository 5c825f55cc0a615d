// The extension fields of Go's x509.Certificate, which crypto.x509.parse_certificates returns as JSON (OPA
// marshals the parsed certificates): Extensions (pkix.Extension: Id as the OID's arcs, Critical, Value as
// base64 of the extnValue bytes), KeyUsage (a bit mask), ExtKeyUsage and UnknownExtKeyUsage. node:crypto's
// X509Certificate does not expose extensions, so they are read from the DER (RFC 5280 §4.1).
import { BuiltinError } from './values.ts';

interface Tlv {
  tag: number;
  /** Content bytes. */
  body: Buffer;
  /** Offset just past this element. */
  end: number;
}

function readTlv(buf: Buffer, at: number): Tlv {
  if (at + 2 > buf.length) throw new BuiltinError('x509: malformed certificate');
  const tag = buf[at];
  let len = buf[at + 1];
  let start = at + 2;
  if (len & 0x80) {
    const n = len & 0x7f;
    if (n === 0 || n > 4 || start + n > buf.length) throw new BuiltinError('x509: malformed certificate');
    len = 0;
    for (let i = 0; i < n; i++) len = len * 256 + buf[start + i];
    start += n;
  }
  if (start + len > buf.length) throw new BuiltinError('x509: malformed certificate');
  return { tag, body: buf.subarray(start, start + len), end: start + len };
}

function children(body: Buffer): Tlv[] {
  const out: Tlv[] = [];
  for (let at = 0; at < body.length; ) {
    const t = readTlv(body, at);
    out.push(t);
    at = t.end;
  }
  return out;
}

/** An OBJECT IDENTIFIER's arcs, as Go's asn1.ObjectIdentifier ([]int). */
function oidArcs(body: Buffer): number[] {
  const values: number[] = [];
  let v = 0;
  for (const b of body) {
    v = v * 128 + (b & 0x7f);
    if (!(b & 0x80)) {
      values.push(v);
      v = 0;
    }
  }
  if (values.length === 0) return [];
  const first = values[0];
  const head = first < 80 ? [Math.floor(first / 40), first % 40] : [2, first - 80];
  return [...head, ...values.slice(1)];
}

const TAG_BOOLEAN = 0x01;
const TAG_BIT_STRING = 0x03;
const TAG_OCTET_STRING = 0x04;
const TAG_OID = 0x06;
const TAG_EXTENSIONS = 0xa3; // [3] EXPLICIT in TBSCertificate

// Go's crypto/x509 extKeyUsageOIDs, in the order of its ExtKeyUsage constants.
const EXT_KEY_USAGES: readonly string[] = [
  '2.5.29.37.0',
  '1.3.6.1.5.5.7.3.1',
  '1.3.6.1.5.5.7.3.2',
  '1.3.6.1.5.5.7.3.3',
  '1.3.6.1.5.5.7.3.4',
  '1.3.6.1.5.5.7.3.5',
  '1.3.6.1.5.5.7.3.6',
  '1.3.6.1.5.5.7.3.7',
  '1.3.6.1.5.5.7.3.8',
  '1.3.6.1.5.5.7.3.9',
  '1.3.6.1.4.1.311.10.3.3',
  '2.16.840.1.113730.4.1',
  '1.3.6.1.4.1.311.2.1.22',
  '1.3.6.1.4.1.311.61.1.1',
];

export interface CertificateExtensionFields {
  Extensions: { Id: number[]; Critical: boolean; Value: string }[];
  KeyUsage: number;
  /** null when the certificate has no extended key usage (Go's nil slice). */
  ExtKeyUsage: number[] | null;
  UnknownExtKeyUsage: number[][] | null;
}

/** Go's parseKeyUsageExtension: bit i of the BIT STRING (most significant first) sets 1 << i, for i < 9. */
function keyUsage(extnValue: Buffer): number {
  const bits = readTlv(extnValue, 0);
  if (bits.tag !== TAG_BIT_STRING || bits.body.length === 0) throw new BuiltinError('x509: invalid key usage');
  const unused = bits.body[0];
  const bytes = bits.body.subarray(1);
  const bitLength = bytes.length * 8 - unused;
  let usage = 0;
  for (let i = 0; i < 9 && i < bitLength; i++) if ((bytes[i >> 3] >> (7 - (i & 7))) & 1) usage |= 1 << i;
  return usage;
}

/** The extension fields of a DER certificate. */
export function certificateExtensions(der: Buffer): CertificateExtensionFields {
  const out: CertificateExtensionFields = { Extensions: [], KeyUsage: 0, ExtKeyUsage: null, UnknownExtKeyUsage: null };
  const cert = readTlv(der, 0);
  const tbs = readTlv(cert.body, 0);
  const wrapper = children(tbs.body).find((t) => t.tag === TAG_EXTENSIONS);
  if (!wrapper) return out;
  for (const ext of children(readTlv(wrapper.body, 0).body)) {
    const [id, ...rest] = children(ext.body);
    if (id?.tag !== TAG_OID) throw new BuiltinError('x509: malformed extension');
    const critical = rest[0]?.tag === TAG_BOOLEAN ? rest[0].body[0] !== 0 : false;
    const value = rest.find((t) => t.tag === TAG_OCTET_STRING);
    if (!value) throw new BuiltinError('x509: malformed extension');
    const arcs = oidArcs(id.body);
    out.Extensions.push({ Id: arcs, Critical: critical, Value: value.body.toString('base64') });
    const dotted = arcs.join('.');
    if (dotted === '2.5.29.15') out.KeyUsage = keyUsage(value.body);
    else if (dotted === '2.5.29.37') {
      for (const usage of children(readTlv(value.body, 0).body)) {
        const oid = oidArcs(usage.body);
        const known = EXT_KEY_USAGES.indexOf(oid.join('.'));
        if (known >= 0) (out.ExtKeyUsage ??= []).push(known);
        else (out.UnknownExtKeyUsage ??= []).push(oid);
      }
    }
  }
  return out;
}
