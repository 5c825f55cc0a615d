// CIDR builtins over IPv4 and IPv6 (addresses as BigInt), with Go's net.ParseCIDR strictness.
import { isIP } from 'node:net';
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

function parseIp(s: string): { v6: boolean; value: bigint } | undefined {
  const kind = isIP(s);
  if (kind === 4) {
    // Go rejects leading zeros ("01.2.3.4"); node accepts only canonical dotted quads too.
    return { v6: false, value: s.split('.').reduce((acc, o) => (acc << 8n) | BigInt(Number(o)), 0n) };
  }
  if (kind === 6) {
    if (s.includes('%')) return undefined;
    let text = s;
    // Embedded IPv4 tail (::ffff:1.2.3.4).
    const v4 = /(\d+\.\d+\.\d+\.\d+)$/.exec(text);
    if (v4) {
      const n = parseIp(v4[1])!.value;
      text = text.slice(0, -v4[1].length) + ((n >> 16n) & 0xffffn).toString(16) + ':' + (n & 0xffffn).toString(16);
    }
    const [head, tail] = text.includes('::') ? text.split('::') : [text, undefined];
    const h = head ? head.split(':') : [];
    const t = tail !== undefined && tail !== '' ? tail.split(':') : [];
    const groups = tail === undefined ? h : [...h, ...Array(8 - h.length - t.length).fill('0'), ...t];
    return { v6: true, value: groups.reduce((acc, g) => (acc << 16n) | BigInt(parseInt(g, 16)), 0n) };
  }
  return undefined;
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

export const netBuiltins: HostImpls = {
  // OPA names "operand 1" for both operands of these two builtins.
  'net.cidr_contains'([a, b]) {
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
