// sprintf with Go's fmt semantics as OPA applies them: numbers become Go ints (or *big.Int beyond
// int64, float64 otherwise), strings stay strings, everything else (booleans, null, composites) is
// first turned into its Rego text. So `%v` of `[1, "a"]` is `[1, "a"]`, `%s` of `true` is `true`,
// and a verb that does not fit its operand prints Go's `%!d(string=x)`.
import { utf8Bytes } from '../../utf8.ts';
import { goQuote, goQuoteRune, goRune, regoText } from './format.ts';
import type { HostImpls } from './registry.ts';
import { arr, DecimalText, str } from './values.ts';

type GoArg =
  | { kind: 'int'; v: bigint }
  | { kind: 'bigint'; v: bigint }
  | { kind: 'float'; v: number }
  | { kind: 'string'; v: string };

const INT64_MIN = -(2n ** 63n);
const INT64_MAX = 2n ** 63n - 1n;

function toGoArg(v: unknown): GoArg {
  if (typeof v === 'bigint') return { kind: v >= INT64_MIN && v <= INT64_MAX ? 'int' : 'bigint', v };
  // Integers beyond 2^53 written as digits arrive as bigint (names.ts exactIntegerBuiltins); a double
  // that large came from exponent notation or float arithmetic, which OPA formats as a float64.
  if (typeof v === 'number') return Number.isSafeInteger(v) ? { kind: 'int', v: BigInt(v) } : { kind: 'float', v };
  if (typeof v === 'string') return { kind: 'string', v };
  // OPA: a decimal is a float64 (`1e3` too), and one past the double range (`1e400`) reaches Go as its text.
  if (v instanceof DecimalText) {
    const f = Number(v.text);
    return Number.isFinite(f) ? { kind: 'float', v: f } : { kind: 'string', v: v.text };
  }
  return { kind: 'string', v: regoText(v) };
}

const goTypeName = (a: GoArg): string =>
  ({ int: 'int', bigint: '*big.Int', float: 'float64', string: 'string' })[a.kind];

/** The operand as `%v` prints it, for Go's error forms `%!x(type=value)`. */
function plainText(a: GoArg): string {
  if (a.kind === 'float') return formatFloatG(a.v, -1);
  return a.kind === 'string' ? a.v : a.v.toString();
}

interface Spec {
  minus: boolean;
  plus: boolean;
  sharp: boolean;
  space: boolean;
  zero: boolean;
  width?: number;
  prec?: number;
}

function pad(s: string, spec: Spec, numeric: boolean): string {
  if (spec.width === undefined) return s;
  const len = Array.from(s).length;
  if (len >= spec.width) return s;
  const fill = spec.width - len;
  if (spec.minus) return s + ' '.repeat(fill);
  if (spec.zero) {
    // Zero padding goes after the sign for numbers.
    if (numeric && /^[+\- ]/.test(s)) return s[0] + '0'.repeat(fill) + s.slice(1);
    return '0'.repeat(fill) + s;
  }
  return ' '.repeat(fill) + s;
}

function signed(body: string, negative: boolean, spec: Spec): string {
  if (negative) return '-' + body;
  if (spec.plus) return '+' + body;
  if (spec.space) return ' ' + body;
  return body;
}

function formatInteger(v: bigint, verb: string, spec: Spec): string | undefined {
  const neg = v < 0n;
  const abs = neg ? -v : v;
  let body: string;
  switch (verb) {
    case 'd':
    case 'v':
    case 's': // only *big.Int accepts %s (checked by the caller)
      body = abs.toString(10);
      break;
    case 'x':
      body = (spec.sharp ? '0x' : '') + abs.toString(16);
      break;
    case 'X':
      body = (spec.sharp ? '0X' : '') + abs.toString(16).toUpperCase();
      break;
    case 'o':
      body = (spec.sharp ? '0' : '') + abs.toString(8);
      break;
    case 'O':
      body = '0o' + abs.toString(8);
      break;
    case 'b':
      body = abs.toString(2);
      break;
    default:
      return undefined;
  }
  if (spec.prec !== undefined && body.length < spec.prec) body = body.padStart(spec.prec, '0');
  return pad(signed(body, neg, spec), spec, true);
}

/** Mantissa digits and decimal exponent of the shortest round-trip representation (or `prec` digits). */
function decimalDigits(x: number, digits?: number): { d: string; exp: number } {
  const e = digits === undefined ? x.toExponential() : x.toExponential(digits - 1);
  const [m, ex] = e.split('e');
  return { d: m.replace('.', '').replace('-', ''), exp: Number(ex) };
}

function expForm(d: string, exp: number, upper: boolean): string {
  const mant = d.length > 1 ? `${d[0]}.${d.slice(1)}` : d;
  const es = Math.abs(exp).toString().padStart(2, '0');
  return `${mant}${upper ? 'E' : 'e'}${exp < 0 ? '-' : '+'}${es}`;
}

function fixedForm(d: string, exp: number): string {
  // Digits d represent 0.d × 10^(exp+1).
  const point = exp + 1;
  if (point <= 0) return '0.' + '0'.repeat(-point) + d;
  if (point >= d.length) return d + '0'.repeat(point - d.length);
  return d.slice(0, point) + '.' + d.slice(point);
}

/** Go's %g (strconv 'g'); prec -1 = shortest representation. */
function formatFloatG(x: number, prec: number, upper = false): string {
  if (!Number.isFinite(x)) return Number.isNaN(x) ? 'NaN' : x > 0 ? '+Inf' : '-Inf';
  const a = Math.abs(x);
  const sign = x < 0 || Object.is(x, -0) ? '-' : '';
  if (a === 0) return sign + '0';
  const shortest = prec < 0;
  const p = prec === 0 ? 1 : prec;
  const { d: raw, exp } = decimalDigits(a, shortest ? undefined : p);
  // strconv: shortest %g switches to exponent form from 1e+06 (eprec 6); otherwise at `prec`.
  const eprec = shortest ? 6 : p;
  const d = raw.replace(/0+$/, '') || '0';
  if (exp < -4 || exp >= eprec) return sign + expForm(d, exp, upper);
  return sign + fixedForm(d, exp);
}

function formatFloat(x: number, verb: string, spec: Spec): string | undefined {
  let body: string;
  const neg = x < 0 || Object.is(x, -0);
  const a = Math.abs(x);
  switch (verb) {
    case 'f':
    case 'F':
      body = Number.isFinite(a) ? toFixedExact(a, spec.prec ?? 6) : formatFloatG(a, -1);
      break;
    case 'e':
    case 'E': {
      const prec = spec.prec ?? 6;
      const { d, exp } = decimalDigits(a, prec + 1);
      body = a === 0 ? expForm('0'.repeat(prec + 1), 0, verb === 'E') : expForm(d, exp, verb === 'E');
      break;
    }
    case 'g':
    case 'G':
    case 'v':
      body = formatFloatG(a, spec.prec ?? -1, verb === 'G');
      break;
    default:
      return undefined;
  }
  return pad(signed(body, neg && !Number.isNaN(x), spec), spec, true);
}

/** Fixed-point with Go's rounding (round half to even on the exact binary value). */
function toFixedExact(a: number, prec: number): string {
  if (a >= 1e21) return BigInt(Math.round(a)).toString() + (prec > 0 ? '.' + '0'.repeat(prec) : '');
  return a.toFixed(Math.min(prec, 100));
}

function formatString(s: string, verb: string, spec: Spec): string | undefined {
  let body: string;
  const text = spec.prec !== undefined ? Array.from(s).slice(0, spec.prec).join('') : s;
  switch (verb) {
    case 's':
    case 'v':
      body = text;
      break;
    case 'q':
      body = goQuote(text);
      break;
    case 'x':
    case 'X': {
      const hex = Array.from(utf8Bytes(text), (b) => b.toString(16).padStart(2, '0')).join('');
      body = verb === 'X' ? hex.toUpperCase() : hex;
      break;
    }
    default:
      return undefined;
  }
  return pad(body, spec, false);
}

function formatOne(a: GoArg, verb: string, spec: Spec): string {
  let out: string | undefined;
  if (verb === 'T') return pad(goTypeName(a), spec, false);
  switch (a.kind) {
    case 'int':
      if (verb === 'c') out = pad(goRune(Number(a.v)), spec, false);
      else if (verb === 'q') out = pad(goQuoteRune(Number(a.v)), spec, false);
      else if (verb === 'U') out = pad('U+' + a.v.toString(16).toUpperCase().padStart(4, '0'), spec, false);
      else if (verb !== 's') out = formatInteger(a.v, verb, spec);
      break;
    case 'bigint':
      out = formatInteger(a.v, verb, spec);
      break;
    case 'float':
      out = formatFloat(a.v, verb, spec);
      break;
    case 'string':
      out = formatString(a.v, verb, spec);
      break;
  }
  return out ?? `%!${verb}(${goTypeName(a)}=${plainText(a)})`;
}

/** A width/precision at `i`: digits, or `*` taking the next operand. */
function readNumber(
  format: string,
  i: number,
  args: GoArg[],
  argi: number,
): { value?: number; i: number; argi: number } {
  if (format[i] === '*') {
    const a = args[argi];
    return { value: a && a.kind === 'int' ? Number(a.v) : undefined, i: i + 1, argi: argi + 1 };
  }
  let j = i;
  let n = 0;
  while (j < format.length && format.charCodeAt(j) >= 48 && format.charCodeAt(j) <= 57)
    n = n * 10 + (format.charCodeAt(j++) - 48);
  return { value: j > i ? n : undefined, i: j, argi };
}

/** Go's fmt.Sprintf over OPA-converted operands. */
export function goSprintf(format: string, values: unknown[]): string {
  const args = values.map(toGoArg);
  let out = '';
  let argi = 0;
  let i = 0;
  while (i < format.length) {
    const pct = format.indexOf('%', i);
    if (pct === -1) {
      out += format.slice(i);
      break;
    }
    out += format.slice(i, pct);
    i = pct + 1;
    const spec: Spec = { minus: false, plus: false, sharp: false, space: false, zero: false };
    for (; i < format.length; i++) {
      const f = format[i];
      if (f === '-') spec.minus = true;
      else if (f === '+') spec.plus = true;
      else if (f === '#') spec.sharp = true;
      else if (f === ' ') spec.space = true;
      else if (f === '0') spec.zero = !spec.minus;
      else break;
    }
    const width = readNumber(format, i, args, argi);
    spec.width = width.value;
    i = width.i;
    argi = width.argi;
    if (format[i] === '.') {
      const prec = readNumber(format, i + 1, args, argi);
      spec.prec = prec.value ?? 0;
      i = prec.i;
      argi = prec.argi;
    }
    if (i >= format.length) {
      out += '%!(NOVERB)';
      break;
    }
    const verb = String.fromCodePoint(format.codePointAt(i)!);
    i += verb.length;
    if (verb === '%') {
      out += '%';
      continue;
    }
    if (argi >= args.length) {
      out += `%!${verb}(MISSING)`;
      continue;
    }
    out += formatOne(args[argi++], verb, spec);
  }
  if (argi < args.length) {
    out +=
      '%!(EXTRA ' +
      args
        .slice(argi)
        .map((a) => `${goTypeName(a)}=${plainText(a)}`)
        .join(', ') +
      ')';
  }
  return out;
}

export const sprintfBuiltins: HostImpls = {
  sprintf: ([format, values]) => goSprintf(str(format, 1), arr(values, 2)),
};
