// CIDR builtins over IPv4 and IPv6 (addresses as BigInt), with Go's net.ParseCIDR strictness.
import { CIDR_CONTAINS_MATCHES_HOST } from './names.ts';
import type { HostImpls } from './registry.ts';
import { BuiltinError, str } from './values.ts';

/** Largest set net.cidr_expand builds (a /8 would be 16M strings). */
export const MAX_CIDR_EXPANSION = 65_536;

interface Net {
  v6: boolean;
  base: bigint;
  prefix: number;
  /** How OPA prints this network when it is not merged (a bare IPv4 keeps its host bits). */
  display?: string;
}

const bits = (v6: boolean): number => (v6 ? 128 : 32);

/** An address as Go's netip.ParseAddr reads it: IPv4 or IPv6 (`is4`), its 16 bytes, and an IPv6 zone. */
export interface NetipAddr {
  is4: boolean;
  bytes: Uint8Array;
  zone: string;
}

/** Dotted-quad fields of `s` into `out` (Go's parseIPv4Fields): four fields 0..255 without leading zeros. */
function ipv4Fields(s: string, out: Uint8Array, at: number): boolean {
  let val = 0;
  let digits = 0;
  let pos = 0;
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c >= 48 && c <= 57) {
      if (digits === 1 && val === 0) return false;
      val = val * 10 + (c - 48);
      digits++;
      if (val > 255) return false;
    } else if (c === 46) {
      if (i === 0 || i === s.length - 1 || s[i - 1] === '.' || pos === 3) return false;
      out[at + pos++] = val;
      val = 0;
      digits = 0;
    } else return false;
  }
  if (pos < 3) return false;
  out[at + 3] = val;
  return true;
}

/** The IPv6 form (Go's parseIPv6): groups of 1-4 hex digits, at most one `::`, an IPv4 tail, a `%zone`. */
function parseIpv6(input: string): NetipAddr | undefined {
  let s = input;
  let zone = '';
  const pct = s.indexOf('%');
  if (pct !== -1) {
    zone = s.slice(pct + 1);
    s = s.slice(0, pct);
    if (zone === '') return undefined;
  }
  const ip = new Uint8Array(16);
  let ellipsis = -1;
  if (s.startsWith('::')) {
    ellipsis = 0;
    s = s.slice(2);
    if (s === '') return { is4: false, bytes: ip, zone };
  }
  let i = 0;
  while (i < 16) {
    let off = 0;
    let acc = 0;
    for (; off < s.length; off++) {
      const d = Number.parseInt(s[off], 16);
      if (Number.isNaN(d)) break;
      if (off > 3) return undefined;
      acc = acc * 16 + d;
    }
    if (off === 0) return undefined;
    if (off < s.length && s[off] === '.') {
      if ((ellipsis < 0 && i !== 12) || i + 4 > 16) return undefined;
      if (!ipv4Fields(s, ip, i)) return undefined;
      s = '';
      i += 4;
      break;
    }
    ip[i] = acc >> 8;
    ip[i + 1] = acc & 0xff;
    i += 2;
    s = s.slice(off);
    if (s === '') break;
    if (s[0] !== ':' || s.length === 1) return undefined;
    s = s.slice(1);
    if (s[0] === ':') {
      if (ellipsis >= 0) return undefined;
      ellipsis = i;
      s = s.slice(1);
      if (s === '') break;
    }
  }
  if (s !== '') return undefined;
  if (i < 16) {
    if (ellipsis < 0) return undefined;
    const n = 16 - i;
    for (let j = i - 1; j >= ellipsis; j--) ip[j + n] = ip[j];
    ip.fill(0, ellipsis, ellipsis + n);
  } else if (ellipsis >= 0) return undefined;
  return { is4: false, bytes: ip, zone };
}

/** Go's netip.ParseAddr: the first `.` or `:` decides the form; undefined where Go returns an error. */
export function parseNetipAddr(s: string): NetipAddr | undefined {
  for (const c of s) {
    if (c === '.') {
      const bytes = new Uint8Array(16);
      bytes[10] = 0xff;
      bytes[11] = 0xff;
      return ipv4Fields(s, bytes, 12) ? { is4: true, bytes, zone: '' } : undefined;
    }
    if (c === ':') return parseIpv6(s);
    if (c === '%') return undefined;
  }
  return undefined;
}

/** Go's net.ParseIP (netip.ParseAddr without a zone), as the 32- or 128-bit value Go's IP holds. */
function parseIp(s: string): { v6: boolean; value: bigint } | undefined {
  const a = parseNetipAddr(s);
  if (a?.zone !== '') return undefined;
  const from = a.is4 ? 12 : 0;
  let value = 0n;
  for (let k = from; k < 16; k++) value = (value << 8n) | BigInt(a.bytes[k]);
  return { v6: !a.is4, value };
}

function parseCidr(s: string): Net {
  const slash = s.indexOf('/');
  if (slash === -1) throw new BuiltinError(`invalid CIDR address: ${s}`);
  const ip = parseIp(s.slice(0, slash));
  const p = s.slice(slash + 1);
  if (!ip || !/^\d{1,3}$/.test(p) || Number(p) > bits(ip.v6)) throw new BuiltinError(`invalid CIDR address: ${s}`);
  const prefix = Number(p);
  return { v6: ip.v6, base: ip.value & mask(ip.v6, prefix), prefix };
}

function mask(v6: boolean, prefix: number): bigint {
  const n = BigInt(bits(v6));
  return ((1n << n) - 1n) ^ ((1n << (n - BigInt(prefix))) - 1n);
}

const last = (n: Net): bigint => n.base | (((1n << BigInt(bits(n.v6))) - 1n) ^ mask(n.v6, n.prefix));

function formatIp(v6: boolean, value: bigint): string {
  if (!v6) return [24n, 16n, 8n, 0n].map((s) => ((value >> s) & 0xffn).toString()).join('.');
  const groups = Array.from({ length: 8 }, (_, i) => Number((value >> BigInt(112 - 16 * i)) & 0xffffn));
  // Longest run of two or more zero groups becomes "::" (RFC 5952).
  let bestStart = -1;
  let bestLen = 0;
  for (let i = 0; i < 8; ) {
    if (groups[i] !== 0) {
      i++;
      continue;
    }
    let j = i;
    while (j < 8 && groups[j] === 0) j++;
    if (j - i > bestLen && j - i >= 2) {
      bestStart = i;
      bestLen = j - i;
    }
    i = j;
  }
  const hex = groups.map((g) => g.toString(16));
  if (bestStart === -1) return hex.join(':');
  return hex.slice(0, bestStart).join(':') + '::' + hex.slice(bestStart + bestLen).join(':');
}

const formatCidr = (n: Net): string => `${formatIp(n.v6, n.base)}/${n.prefix}`;

/** An IPv4-mapped IPv6 address (::ffff:a.b.c.d) as IPv4, as Go's IPNet.Contains treats it. */
function unmapped(ip: { v6: boolean; value: bigint }): { v6: boolean; value: bigint } {
  if (ip.v6 && ip.value >> 32n === 0xffffn) return { v6: false, value: ip.value & 0xffffffffn };
  return ip;
}

/** Go's IP.DefaultMask: the classful prefix of an IPv4 address. */
function defaultPrefix(v4: bigint): number {
  const first = Number(v4 >> 24n);
  return first < 0x80 ? 8 : first < 0xc0 ? 16 : 24;
}

/** An element of net.cidr_merge: a CIDR, or a bare IPv4 address with its classful mask (OPA). */
function mergeElement(e: unknown): Net {
  if (typeof e !== 'string') throw new BuiltinError('element must be string');
  const ip = parseIp(e);
  if (!ip) return parseCidr(e);
  if (ip.v6) throw new BuiltinError('IPv6 invalid: needs prefix length');
  const prefix = defaultPrefix(ip.value);
  return { v6: false, base: ip.value & mask(false, prefix), prefix, display: `${e}/${prefix}` };
}

/** The largest CIDR blocks exactly covering [first, last]. */
function rangeToCidrs(v6: boolean, first: bigint, lastIp: bigint): Net[] {
  const width = bits(v6);
  const out: Net[] = [];
  let cur = first;
  while (cur <= lastIp) {
    let size = 0;
    // Grow the block while it stays aligned and inside the range.
    while (size < width) {
      const next = size + 1;
      const blockMask = (1n << BigInt(next)) - 1n;
      if ((cur & blockMask) !== 0n || cur + blockMask > lastIp) break;
      size = next;
    }
    out.push({ v6, base: cur, prefix: width - size });
    cur += 1n << BigInt(size);
  }
  return out;
}

/** OPA's net.cidr_merge: merge overlapping and adjacent ranges; untouched networks keep their form. */
function mergeNets(nets: Net[]): string[] {
  const out: string[] = [];
  for (const v6 of [false, true]) {
    const ranges = nets
      .filter((n) => n.v6 === v6)
      .map((n) => ({ first: n.base, last: last(n), net: n as Net | undefined }))
      .sort((a, b) =>
        a.last < b.last ? -1 : a.last > b.last ? 1 : a.first < b.first ? -1 : a.first > b.first ? 1 : 0,
      );
    for (let i = ranges.length - 1; i > 0; i--) {
      if (ranges[i].first - 1n <= ranges[i - 1].last) {
        // biome-ignore lint/complexity/useMathMinMax: bigint operands, which Math.min does not take
        const first = ranges[i - 1].first < ranges[i].first ? ranges[i - 1].first : ranges[i].first;
        ranges[i - 1] = { first, last: ranges[i].last, net: undefined };
        ranges.splice(i, 1);
      }
    }
    for (const r of ranges) {
      if (r.net) out.push(r.net.display ?? formatCidr(r.net));
      else out.push(...rangeToCidrs(v6, r.first, r.last).map(formatCidr));
    }
  }
  return out;
}

/** OPA's net.cidr_contains: whether CIDR `a` contains the CIDR or IP address `b` (OPA names both "operand 1"). */
function cidrContains(a: unknown, b: unknown): boolean {
  const outer = parseCidr(str(a, 1));
  const text = str(b, 1);
  const ip = parseIp(text);
  if (ip) {
    const addr = outer.v6 ? ip : unmapped(ip);
    return addr.v6 === outer.v6 && addr.value >= outer.base && addr.value <= last(outer);
  }
  let inner: Net;
  try {
    inner = parseCidr(text);
  } catch {
    throw new BuiltinError(`not a valid textual representation of an IP address or CIDR: ${text}`);
  }
  if (outer.v6 !== inner.v6) return false;
  return inner.base >= outer.base && last(inner) <= last(outer);
}

/**
 * An operand of net.cidr_contains_matches as `[index, element]` entries (OPA topdown/cidr.go): a string is its
 * own index and CIDR; a collection comes with its `[key, value]` pairs from the compiled module (array
 * positions, set elements, object keys, as `some k, v in x` walks it); anything else has none.
 */
function cidrMatchEntries(operand: unknown, pairs: unknown): unknown[][] {
  if (typeof operand === 'string') return [[operand, operand]];
  return Array.isArray(pairs) ? pairs.filter((p): p is unknown[] => Array.isArray(p) && p.length === 2) : [];
}

/** The CIDR of an element: a string, or the first element of a non-empty array (OPA's error otherwise). */
function cidrOfElement(e: unknown, pos: number): unknown {
  if (typeof e === 'string') return e;
  if (Array.isArray(e) && e.length > 0) return e[0];
  throw new BuiltinError(`operand ${pos}: element must be string or non-empty array`);
}

export const netBuiltins: HostImpls = {
  'net.cidr_contains': ([a, b]) => cidrContains(a, b),
  /**
   * net.cidr_contains_matches as the planner lowers it (names.ts CIDR_CONTAINS_MATCHES_HOST): every
   * `[index1, index2]` whose CIDRs net.cidr_contains accepts, walking operand 2 per element of operand 1 as
   * OPA does, so the first bad element reached is the one reported. Declared to return a set.
   */
  [CIDR_CONTAINS_MATCHES_HOST]([a, pairsA, b, pairsB]) {
    const out: unknown[][] = [];
    const inner = cidrMatchEntries(b, pairsB);
    for (const [i1, e1] of cidrMatchEntries(a, pairsA)) {
      const c1 = typeof a === 'string' ? a : cidrOfElement(e1, 1);
      for (const [i2, e2] of inner) {
        const c2 = typeof b === 'string' ? b : cidrOfElement(e2, 2);
        if (cidrContains(c1, c2)) out.push([i1, i2]);
      }
    }
    return out;
  },
  'net.cidr_intersects'([a, b]) {
    const x = parseCidr(str(a, 1));
    const y = parseCidr(str(b, 1));
    if (x.v6 !== y.v6) return false;
    return x.base <= last(y) && y.base <= last(x);
  },
  'net.cidr_is_valid'([a]) {
    if (typeof a !== 'string') return false;
    try {
      parseCidr(a);
      return true;
    } catch {
      return false;
    }
  },
  'net.cidr_merge'([list]) {
    if (!Array.isArray(list)) throw new BuiltinError('operand must be an array');
    return mergeNets(list.map(mergeElement)).sort();
  },
  'net.cidr_expand'([a]) {
    const n = parseCidr(str(a, 1));
    const size = last(n) - n.base + 1n;
    if (size > BigInt(MAX_CIDR_EXPANSION))
      throw new BuiltinError(`${formatCidr(n)} has ${size} addresses, more than the limit of ${MAX_CIDR_EXPANSION}`);
    const out: string[] = [];
    for (let ip = n.base; ip <= last(n); ip++) out.push(formatIp(n.v6, ip));
    return out.sort();
  },
};
