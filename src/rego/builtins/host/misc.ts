// semver, uuid, units, the replay-safe "random" builtins, and print/trace.
import { createHash } from 'node:crypto';
import type { HostBuiltinContext } from './context.ts';
import { regoText } from './format.ts';
import type { HostImpls } from './registry.ts';
import { BuiltinError, BuiltinHaltError, DecimalText, int, operandError, RegoSet, str } from './values.ts';

// ---- semver (2.0.0, no leading "v") ------------------------------------------------------------------

const SEMVER =
  /^(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)(?:-((?:0|[1-9]\d*|\d*[A-Za-z-][0-9A-Za-z-]*)(?:\.(?:0|[1-9]\d*|\d*[A-Za-z-][0-9A-Za-z-]*))*))?(?:\+([0-9A-Za-z-]+(?:\.[0-9A-Za-z-]+)*))?$/;

function parseSemver(s: string, pos: number): { core: bigint[]; pre: string[] } {
  const m = SEMVER.exec(s);
  if (!m) throw new BuiltinError(`operand ${pos}: string ${s} is not a valid SemVer`);
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

const UUID =
  /^(?:urn:uuid:)?\{?([0-9a-fA-F]{8})-?([0-9a-fA-F]{4})-?([0-9a-fA-F]{4})-?([0-9a-fA-F]{4})-?([0-9a-fA-F]{12})\}?$/;

function parseUuid(s: string): Record<string, unknown> | undefined {
  const m = UUID.exec(s);
  if (!m) return undefined;
  const hex = m.slice(1).join('').toLowerCase();
  const bytes = Buffer.from(hex, 'hex');
  const version = bytes[6] >> 4;
  const v = bytes[8];
  const variant =
    v >> 7 === 0
      ? 'Reserved, NCS backward compatibility.'
      : v >> 6 === 2
        ? 'RFC4122'
        : v >> 5 === 6
          ? 'Reserved, Microsoft Corporation backward compatibility.'
          : 'Reserved for future definition.';
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
  return createHash('sha256')
    .update(ctx.evaluation().seed)
    .update('\0')
    .update(builtin)
    .update('\0')
    .update(key)
    .digest();
}

function seededUuid(ctx: HostBuiltinContext, key: string): string {
  const b = seededBytes(ctx, 'uuid.rfc4122', key).subarray(0, 16);
  b[6] = (b[6] & 0x0f) | 0x40; // version 4
  b[8] = (b[8] & 0x3f) | 0x80; // RFC 4122 variant
  const h = b.toString('hex');
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20)}`;
}

// ---- units ---------------------------------------------------------------------------------------------

/** OPA's extractNumAndUnit: the leading number (digits, '.', signs, an exponent) and the unit after it. */
function splitAmount(s: string): { num: string; unit: string; exponentTooLarge: boolean } {
  let i = 0;
  for (; i < s.length; i++) {
    const c = s[i];
    if (/[0-9.+-]/.test(c)) continue;
    if (c === 'e' || c === 'E') {
      const next = s[i + 1];
      if (next === undefined || !/[0-9+-]/.test(next)) break;
      if (next === '+' || next === '-') i++;
      const digits = /^\d*/.exec(s.slice(i + 1))![0].length;
      if (digits > 6) return { num: '', unit: '', exponentTooLarge: true };
      continue;
    }
    break;
  }
  return { num: s.slice(0, i), unit: s.slice(i), exponentTooLarge: false };
}

/** A decimal literal as an exact fraction n / d (big.Rat SetString). */
function parseRational(num: string): { n: bigint; d: bigint } | undefined {
  const m = /^([+-]?)(\d*)(?:\.(\d*))?(?:[eE]([+-]?\d+))?$/.exec(num);
  if (!m || (m[2] === '' && (m[3] ?? '') === '')) return undefined;
  const frac = m[3] ?? '';
  let n = BigInt((m[2] || '0') + frac) * (m[1] === '-' ? -1n : 1n);
  let d = 10n ** BigInt(frac.length);
  const exp = Number(m[4] ?? 0);
  if (exp > 0) n *= 10n ** BigInt(exp);
  else if (exp < 0) d *= 10n ** BigInt(-exp);
  return { n, d };
}

const SI_UNITS: Record<string, [bigint, bigint]> = {
  '': [1n, 1n],
  m: [1n, 1000n],
  k: [1000n, 1n],
  K: [1000n, 1n],
  M: [10n ** 6n, 1n],
  g: [10n ** 9n, 1n],
  G: [10n ** 9n, 1n],
  t: [10n ** 12n, 1n],
  T: [10n ** 12n, 1n],
  p: [10n ** 15n, 1n],
  P: [10n ** 15n, 1n],
  e: [10n ** 18n, 1n],
  E: [10n ** 18n, 1n],
  ki: [1n << 10n, 1n],
  Ki: [1n << 10n, 1n],
  mi: [1n << 20n, 1n],
  Mi: [1n << 20n, 1n],
  gi: [1n << 30n, 1n],
  Gi: [1n << 30n, 1n],
  ti: [1n << 40n, 1n],
  Ti: [1n << 40n, 1n],
  pi: [1n << 50n, 1n],
  Pi: [1n << 50n, 1n],
  ei: [1n << 60n, 1n],
  Ei: [1n << 60n, 1n],
};

const BYTE_UNITS: Record<string, bigint> = {
  '': 1n,
  kb: 1000n,
  k: 1000n,
  mb: 10n ** 6n,
  m: 10n ** 6n,
  gb: 10n ** 9n,
  g: 10n ** 9n,
  tb: 10n ** 12n,
  t: 10n ** 12n,
  pb: 10n ** 15n,
  p: 10n ** 15n,
  eb: 10n ** 18n,
  e: 10n ** 18n,
  kib: 1n << 10n,
  ki: 1n << 10n,
  mib: 1n << 20n,
  mi: 1n << 20n,
  gib: 1n << 30n,
  gi: 1n << 30n,
  tib: 1n << 40n,
  ti: 1n << 40n,
  pib: 1n << 50n,
  pi: 1n << 50n,
  eib: 1n << 60n,
  ei: 1n << 60n,
};

const exact = (v: bigint): number | bigint =>
  v >= BigInt(Number.MIN_SAFE_INTEGER) && v <= BigInt(Number.MAX_SAFE_INTEGER) ? Number(v) : v;

/** units.parse: SI (m = milli, M = mega) and binary units, exact; non-integers with 10 decimals like OPA. */
function parseUnits(raw: string): number | bigint {
  // OPA's messages carry the builtin name themselves.
  const fail = (msg: string): never => {
    throw new BuiltinError(`units.parse: ${msg}`);
  };
  const s = raw.replace(/"/g, '');
  if (s.includes(' ')) fail('spaces not allowed in resource strings');
  const { num, unit: rawUnit, exponentTooLarge } = splitAmount(s);
  if (exponentTooLarge) fail('exponent too large');
  if (num === '') fail('no amount provided');
  const unit = rawUnit.length > 1 ? rawUnit[0] + rawUnit.slice(1).toLowerCase() : rawUnit;
  const factor = SI_UNITS[unit];
  if (!factor) fail(`unit ${unit} not recognized`);
  const r = parseRational(num) ?? fail('could not parse amount to a number');
  const n = r.n * factor[0];
  const d = r.d * factor[1];
  if (n % d === 0n) return exact(n / d);
  return Number((Number(n) / Number(d)).toFixed(10));
}

/** units.parse_bytes: case-insensitive byte units, truncated to an exact integer. */
function parseBytes(raw: string): number | bigint {
  const fail = (msg: string): never => {
    throw new BuiltinError(`units.parse_bytes: ${msg}`);
  };
  const s = raw.toLowerCase().replace(/"/g, '');
  if (s.includes(' ')) fail('spaces not allowed in resource strings');
  const { num, unit, exponentTooLarge } = splitAmount(s);
  if (exponentTooLarge) fail('exponent too large');
  if (num === '') fail('no byte amount provided');
  const factor = BYTE_UNITS[unit];
  if (factor === undefined) fail(`byte unit ${unit} not recognized`);
  const r = parseRational(num) ?? fail('could not parse byte amount to a number');
  return exact((r.n * factor) / r.d);
}

// ---- print ---------------------------------------------------------------------------------------------

/** One printed operand: strings raw, other values in Rego syntax (OPA's print). */
const printText = (v: unknown): string => (typeof v === 'string' ? v : regoText(v));

/**
 * OPA's internal.print: each operand is the set of its values; one line per combination of values
 * (cross product), `<undefined>` for an operand without values.
 */
function printLines(operands: unknown[]): string[] {
  let lines: string[][] = [[]];
  for (const op of operands) {
    // Each operand's values are a set: RegoSet from a compiled module (names.ts regoSetBuiltins).
    const values = op instanceof RegoSet ? op.elements : Array.isArray(op) ? op : [];
    const texts = values.length === 0 ? ['<undefined>'] : values.map(printText);
    lines = lines.flatMap((prefix) => texts.map((t) => [...prefix, t]));
  }
  return lines.map((parts) => parts.join(' '));
}

// ---- template strings -----------------------------------------------------------------------------

/**
 * OPA's internal.template_string (topdown/template_string.go over print.go's cross product): the parts of a
 * lowered template string, each a string, number, boolean or null written as is (a string without quotes),
 * or the set of an expression's values: `<undefined>` when empty, its one value as print writes it, and an
 * error ending the evaluation when it has more than one.
 */
function templateString(parts: unknown): string {
  if (!Array.isArray(parts)) throw operandError(1, 'array', parts);
  let out = '';
  for (const p of parts) {
    if (p === null || typeof p !== 'object' || p instanceof DecimalText) {
      out += printText(p);
      continue;
    }
    if (!(p instanceof RegoSet)) {
      throw new BuiltinHaltError(
        'eval_internal_error',
        `illegal argument type: ${Array.isArray(p) ? 'array' : 'object'}`,
      );
    }
    if (p.elements.length > 1)
      throw new BuiltinHaltError('eval_conflict_error', 'template-strings must not produce multiple outputs');
    out += p.elements.length === 0 ? '<undefined>' : printText(p.elements[0]);
  }
  return out;
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
    for (const line of printLines(Array.isArray(operands) ? operands : [])) ctx.print(line);
    return null;
  },
  'internal.template_string': ([parts]) => templateString(parts),
  print(args, ctx) {
    ctx.print(args.map(printText).join(' '));
    return null;
  },
  trace([s], ctx) {
    ctx.trace(str(s, 1));
    return true;
  },
};
