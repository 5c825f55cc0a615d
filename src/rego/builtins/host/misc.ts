// semver, uuid, units, the replay-safe "random" builtins, and print/trace.
import { createHash } from 'node:crypto';
import type { HostBuiltinContext } from './context.ts';
import { regoText } from './format.ts';
import type { HostImpls } from './registry.ts';
import { BuiltinError, int, str } from './values.ts';

// ---- semver (2.0.0, no leading "v") ------------------------------------------------------------------

const SEMVER =
  /^(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)(?:-((?:0|[1-9]\d*|\d*[A-Za-z-][0-9A-Za-z-]*)(?:\.(?:0|[1-9]\d*|\d*[A-Za-z-][0-9A-Za-z-]*))*))?(?:\+([0-9A-Za-z-]+(?:\.[0-9A-Za-z-]+)*))?$/;

function parseSemver(s: string, pos: number): { core: bigint[]; pre: string[] } {
  const m = SEMVER.exec(s);
  if (!m) throw new BuiltinError(`operand ${pos}: string ${JSON.stringify(s)} is not a valid SemVer`);
  return { core: [BigInt(m[1]), BigInt(m[2]), BigInt(m[3])], pre: m[4] ? m[4].split('.') : [] };
}

function compareSemver(a: string, b: string): number {
  const x = parseSemver(a, 1);
  const y = parseSemver(b, 2);
  for (let i = 0; i < 3; i++) if (x.core[i] !== y.core[i]) return x.core[i] < y.core[i] ? -1 : 1;
  // A pre-release sorts before the release; identifiers compare numerically when numeric.
  if (!x.pre.length || !y.pre.length) return x.pre.length === y.pre.length ? 0 : x.pre.length ? -1 : 1;
  for (let i = 0; i < Math.min(x.pre.length, y.pre.length); i++) {
    const p = x.pre[i];
    const q = y.pre[i];
    if (p === q) continue;
    const pn = /^\d+$/.test(p);
    const qn = /^\d+$/.test(q);
    if (pn && qn) return BigInt(p) < BigInt(q) ? -1 : 1;
    if (pn !== qn) return pn ? -1 : 1;
    return p < q ? -1 : 1;
  }
  return Math.sign(x.pre.length - y.pre.length);
}

// ---- uuid ---------------------------------------------------------------------------------------------

const UUID = /^(?:urn:uuid:)?\{?([0-9a-fA-F]{8})-?([0-9a-fA-F]{4})-?([0-9a-fA-F]{4})-?([0-9a-fA-F]{4})-?([0-9a-fA-F]{12})\}?$/;

function parseUuid(s: string): Record<string, unknown> | undefined {
  const m = UUID.exec(s);
  if (!m) return undefined;
  const hex = m.slice(1).join('').toLowerCase();
  const bytes = Buffer.from(hex, 'hex');
  const version = bytes[6] >> 4;
  const v = bytes[8];
  const variant = v >> 7 === 0 ? 'Reserved, NCS backward compatibility.' : v >> 6 === 2 ? 'RFC4122' : v >> 5 === 6 ? 'Reserved, Microsoft Corporation backward compatibility.' : 'Reserved for future definition.';
  const out: Record<string, unknown> = { variant, version };
  if (variant === 'RFC4122' && (version === 1 || version === 2)) {
    // 60-bit count of 100 ns intervals since 1582-10-15, as Unix nanoseconds.
    const timeLow = BigInt('0x' + hex.slice(0, 8));
    const timeMid = BigInt('0x' + hex.slice(8, 12));
    const timeHi = BigInt('0x' + hex.slice(12, 16)) & 0x0fffn;
    const ticks = (timeHi << 48n) | (timeMid << 32n) | timeLow;
    const ns = (ticks - 122192928000000000n) * 100n;
    out.time = Number(ns);
    out.clocksequence = ((bytes[8] & 0x3f) << 8) | bytes[9];
    out.nodeid = hex.slice(20).match(/../g)!.join('-');
    // First node octet: bit 1 = locally administered, bit 0 = multicast.
    out.macvariables = `${bytes[10] & 2 ? 'local' : 'global'}:${bytes[10] & 1 ? 'multicast' : 'unicast'}`;
    if (version === 2) {
      out.id = Number(timeLow);
      out.domain = ['Person', 'Group', 'Org'][bytes[9]] ?? `Domain${bytes[9]}`;
    }
  }
  return out;
}

/** Deterministic bytes for an evaluation: SHA-256(seed, builtin, key). Replaying with the recorded seed repeats them. */
function seededBytes(ctx: HostBuiltinContext, builtin: string, key: string): Buffer {
  return createHash('sha256').update(ctx.evaluation().seed).update('\0').update(builtin).update('\0').update(key).digest();
}

function seededUuid(ctx: HostBuiltinContext, key: string): string {
  const b = seededBytes(ctx, 'uuid.rfc4122', key).subarray(0, 16);
  b[6] = (b[6] & 0x0f) | 0x40; // version 4
  b[8] = (b[8] & 0x3f) | 0x80; // RFC 4122 variant
  const h = b.toString('hex');
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20)}`;
}

// ---- units ---------------------------------------------------------------------------------------------

const SI: Record<string, number> = { '': 1, m: 1e-3, k: 1e3, K: 1e3, M: 1e6, G: 1e9, T: 1e12, P: 1e15, E: 1e18 };
const IEC: Record<string, number> = { ki: 2 ** 10, mi: 2 ** 20, gi: 2 ** 30, ti: 2 ** 40, pi: 2 ** 50, ei: 2 ** 60 };

function splitAmount(s: string, name: string): { amount: number; unit: string } {
  const text = s.replace(/"/g, '').trim();
  const m = /^([+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?)\s*([A-Za-z]*)$/.exec(text);
  if (!m) throw new BuiltinError(text === '' ? 'no amount provided' : `could not parse ${name === 'units.parse_bytes' ? 'byte amount' : 'amount'} to a number`);
  return { amount: Number(m[1]), unit: m[2] };
}

function parseUnits(s: string): number {
  const { amount, unit } = splitAmount(s, 'units.parse');
  const iec = IEC[unit.toLowerCase()];
  if (iec !== undefined && unit.length === 2 && unit[1] === 'i') return amount * iec;
  const si = SI[unit];
  if (si === undefined) throw new BuiltinError(`unknown unit ${JSON.stringify(unit)}`);
  return amount * si;
}

function parseBytes(s: string): number | bigint {
  const { amount, unit } = splitAmount(s, 'units.parse_bytes');
  let u = unit.toLowerCase();
  if (u.endsWith('b')) u = u.slice(0, -1);
  let factor: bigint;
  if (u === '') factor = 1n;
  else if (u.endsWith('i') && IEC[u] !== undefined) factor = BigInt(IEC[u]);
  else if (u.length === 1 && 'kmgtpe'.includes(u)) factor = 1000n ** BigInt('kmgtpe'.indexOf(u) + 1);
  else throw new BuiltinError(`byte unit ${JSON.stringify(unit)} not recognized`);
  if (Number.isInteger(amount)) {
    const v = BigInt(amount) * factor;
    return v <= BigInt(Number.MAX_SAFE_INTEGER) ? Number(v) : v;
  }
  return Math.floor(amount * Number(factor));
}

// ---- print ---------------------------------------------------------------------------------------------

/** OPA's print formatting: strings raw, other values in Rego syntax, undefined operands as <undefined>. */
function printOperand(values: unknown): string {
  if (!Array.isArray(values) || values.length === 0) return '<undefined>';
  return values.map((v) => (typeof v === 'string' ? v : regoText(v))).join(' ');
}

export const miscBuiltins: HostImpls = {
  'semver.compare': ([a, b]) => compareSemver(str(a, 1), str(b, 2)),
  'semver.is_valid': ([a]) => typeof a === 'string' && SEMVER.test(a),
  'uuid.parse': ([s]) => parseUuid(str(s, 1)),
  'uuid.rfc4122'([k], ctx) {
    const key = str(k, 1);
    const memoKey = `uuid.rfc4122\0${key}`;
    let v = ctx.memo.get(memoKey) as string | undefined;
    if (v === undefined) {
      v = seededUuid(ctx, key);
      ctx.memo.set(memoKey, v);
    }
    return v;
  },
  'rand.intn'([k, n], ctx) {
    const key = str(k, 1);
    const bound = Math.abs(int(n, 2));
    if (bound === 0) return 0;
    const b = seededBytes(ctx, 'rand.intn', `${key}\0${bound}`);
    return Number(b.readBigUInt64BE(0) % BigInt(bound));
  },
  'units.parse': ([s]) => parseUnits(str(s, 1)),
  'units.parse_bytes': ([s]) => parseBytes(str(s, 1)),
  'internal.print'([operands], ctx) {
    const list = Array.isArray(operands) ? operands : [];
    ctx.print(list.map(printOperand).join(' '));
    return null;
  },
  print(args, ctx) {
    ctx.print(args.map((v) => (typeof v === 'string' ? v : regoText(v))).join(' '));
    return null;
  },
  trace([s], ctx) {
    ctx.print(str(s, 1));
    return true;
  },
};
