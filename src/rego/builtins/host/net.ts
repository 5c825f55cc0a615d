// CIDR builtins over IPv4 and IPv6 (addresses as BigInt), with Go's net.ParseCIDR strictness.
import { isIP } from 'node:net';
import type { HostImpls } from './registry.ts';
import { BuiltinError, BuiltinTypeError, operandError, str, typeName } from './values.ts';

/** Largest set net.cidr_expand builds (a /8 would be 16M strings). */
export const MAX_CIDR_EXPANSION = 65_536;

interface Net {
  v6: boolean;
  base: bigint;
  prefix: number;
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

/** The CIDR or plain IP operand of net.cidr_contains (an IP is a /32 or /128). */
function cidrOrIp(s: string): Net {
  if (s.includes('/')) return parseCidr(s);
  const ip = parseIp(s);
  if (!ip) throw new BuiltinError(`invalid IP address: ${s}`);
  return { v6: ip.v6, base: ip.value, prefix: bits(ip.v6) };
}

/** Merge adjacent and nested networks into the smallest covering list (OPA's net.cidr_merge). */
function mergeNets(nets: Net[]): Net[] {
  const out: Net[] = [];
  for (const v6 of [false, true]) {
    let list = nets.filter((n) => n.v6 === v6).sort((a, b) => (a.base < b.base ? -1 : a.base > b.base ? 1 : a.prefix - b.prefix));
    // Drop networks contained in a previous one.
    const kept: Net[] = [];
    for (const n of list) {
      const prev = kept[kept.length - 1];
      if (prev && n.base >= prev.base && last(n) <= last(prev)) continue;
      kept.push(n);
    }
    list = kept;
    // Repeatedly join sibling pairs (x/p and its buddy) into x/(p-1).
    let changed = true;
    while (changed) {
      changed = false;
      const next: Net[] = [];
      for (let i = 0; i < list.length; i++) {
        const a = list[i];
        const b = list[i + 1];
        if (b && a.prefix === b.prefix && a.prefix > 0) {
          const parent = { v6, prefix: a.prefix - 1, base: a.base & mask(v6, a.prefix - 1) };
          if (parent.base === a.base && last(parent) === last(b)) {
            next.push(parent);
            i++;
            changed = true;
            continue;
          }
        }
        next.push(a);
      }
      list = next;
    }
    out.push(...list);
  }
  return out;
}

export const netBuiltins: HostImpls = {
  'net.cidr_contains'([a, b]) {
    const outer = parseCidr(str(a, 1));
    const inner = cidrOrIp(str(b, 2));
    if (outer.v6 !== inner.v6) return false;
    return inner.base >= outer.base && last(inner) <= last(outer);
  },
  'net.cidr_intersects'([a, b]) {
    const x = parseCidr(str(a, 1));
    const y = parseCidr(str(b, 2));
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
    if (!Array.isArray(list)) throw operandError(1, 'one of {array, set}', list);
    const nets = list.map((e) => {
      if (typeof e !== 'string') throw new BuiltinTypeError(`operand 1 must be array of strings but got array containing ${typeName(e)}`);
      return cidrOrIp(e);
    });
    return mergeNets(nets).map(formatCidr).sort();
  },
  'net.cidr_expand'([a]) {
    const n = parseCidr(str(a, 1));
    const size = last(n) - n.base + 1n;
    if (size > BigInt(MAX_CIDR_EXPANSION)) throw new BuiltinError(`${formatCidr(n)} has ${size} addresses, more than the limit of ${MAX_CIDR_EXPANSION}`);
    const out: string[] = [];
    for (let ip = n.base; ip <= last(n); ip++) out.push(formatIp(n.v6, ip));
    return out.sort();
  },
};
