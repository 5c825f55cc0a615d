// Time builtins with Go's semantics: nanoseconds since the epoch as exact BigInt (int64 range),
// Go layout strings ("2006-01-02T15:04:05Z07:00"), IANA zones via Intl, Go's AddDate normalisation.
import type { HostBuiltinContext } from './context.ts';
import type { HostImpls } from './registry.ts';
import { BuiltinError, BuiltinTypeError, int, operandError, str, typeName } from './values.ts';

const NS = 1_000_000_000n;
const INT64_MIN = -(2n ** 63n);
const INT64_MAX = 2n ** 63n - 1n;

const DAYS = ['Sunday', 'Monday', 'Tuesday', 'Wednesday', 'Thursday', 'Friday', 'Saturday'];
const MONTHS = [
  'January',
  'February',
  'March',
  'April',
  'May',
  'June',
  'July',
  'August',
  'September',
  'October',
  'November',
  'December',
];

/** Go's layout constants that OPA accepts by name (time.parse_ns, time.format). */
export const namedLayouts: Record<string, string> = {
  ANSIC: 'Mon Jan _2 15:04:05 2006',
  UnixDate: 'Mon Jan _2 15:04:05 MST 2006',
  RubyDate: 'Mon Jan 02 15:04:05 -0700 2006',
  RFC822: '02 Jan 06 15:04 MST',
  RFC822Z: '02 Jan 06 15:04 -0700',
  RFC850: 'Monday, 02-Jan-06 15:04:05 MST',
  RFC1123: 'Mon, 02 Jan 2006 15:04:05 MST',
  RFC1123Z: 'Mon, 02 Jan 2006 15:04:05 -0700',
  RFC3339: '2006-01-02T15:04:05Z07:00',
  RFC3339Nano: '2006-01-02T15:04:05.999999999Z07:00',
};

// ---- civil calendar (proleptic Gregorian, days since 1970-01-01) --------------------------------

const floorDiv = (a: number, b: number): number => Math.floor(a / b);

export function daysFromCivil(y: number, m: number, d: number): number {
  const yy = m <= 2 ? y - 1 : y;
  const era = floorDiv(yy, 400);
  const yoe = yy - era * 400;
  const doy = floorDiv(153 * (m + (m > 2 ? -3 : 9)) + 2, 5) + d - 1;
  const doe = yoe * 365 + floorDiv(yoe, 4) - floorDiv(yoe, 100) + doy;
  return era * 146097 + doe - 719468;
}

export function civilFromDays(z: number): [number, number, number] {
  const zz = z + 719468;
  const era = floorDiv(zz, 146097);
  const doe = zz - era * 146097;
  const yoe = floorDiv(doe - floorDiv(doe, 1460) + floorDiv(doe, 36524) - floorDiv(doe, 146096), 365);
  const doy = doe - (365 * yoe + floorDiv(yoe, 4) - floorDiv(yoe, 100));
  const mp = floorDiv(5 * doy + 2, 153);
  const d = doy - floorDiv(153 * mp + 2, 5) + 1;
  const m = mp < 10 ? mp + 3 : mp - 9;
  return [era * 400 + yoe + (m <= 2 ? 1 : 0), m, d];
}

const isLeap = (y: number): boolean => (y % 4 === 0 && y % 100 !== 0) || y % 400 === 0;
const daysIn = (y: number, m: number): number =>
  [31, isLeap(y) ? 29 : 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31][m - 1];

// ---- time zones ----------------------------------------------------------------------------------

interface Zone {
  name: string;
  /** Offset from UTC in seconds at a given UTC instant (seconds). */
  offset(utcSec: number): number;
  /** Abbreviation ("EST", "CET") at a given UTC instant, for the MST layout token. */
  abbr(utcSec: number): string;
}

const UTC: Zone = { name: 'UTC', offset: () => 0, abbr: () => 'UTC' };
const zoneCache = new Map<string, Zone>();
const ABBR_LOCALES = ['en-US', 'en-GB', 'en-IN', 'en-AU', 'en-NZ', 'en-ZA', 'en-CA', 'en-IE'];

/** A zone with one fixed offset (parsed "-07:00"). A class: created per parse on a hot path. */
class FixedZone implements Zone {
  constructor(
    private readonly seconds: number,
    readonly name: string,
  ) {}
  offset(): number {
    return this.seconds;
  }
  abbr(): string {
    return this.name || goOffsetAbbr(this.seconds);
  }
}

/** Zone offsets only change on quarter-hour boundaries: cache per 15-minute bucket. */
const OFFSET_CACHE_LIMIT = 4096;

export function loadZone(name: string): Zone {
  if (name === '' || name === 'UTC') return UTC;
  const cached = zoneCache.get(name);
  if (cached) return cached;
  const iana = name === 'Local' ? Intl.DateTimeFormat().resolvedOptions().timeZone : name;
  let parts: Intl.DateTimeFormat;
  let shortNames: Intl.DateTimeFormat[];
  try {
    parts = new Intl.DateTimeFormat('en-US', {
      timeZone: iana,
      hourCycle: 'h23',
      year: 'numeric',
      month: 'numeric',
      day: 'numeric',
      hour: 'numeric',
      minute: 'numeric',
      second: 'numeric',
      era: 'short',
    });
    // Abbreviations ("EST", "CET", "IST") are locale data: each English locale knows its region's.
    shortNames = ABBR_LOCALES.map(
      (locale) => new Intl.DateTimeFormat(locale, { timeZone: iana, timeZoneName: 'short' }),
    );
  } catch {
    throw new BuiltinError(`unknown time zone ${name}`);
  }
  const offsets = new Map<number, number>();
  const zone: Zone = {
    name,
    offset(utcSec) {
      const bucket = Math.floor(utcSec / 900);
      const hit = offsets.get(bucket);
      if (hit !== undefined) return hit;
      const ms = bucket * 900_000;
      const p = Object.fromEntries(parts.formatToParts(ms).map((x) => [x.type, x.value]));
      let year = Number(p.year);
      if (p.era === 'BC' || p.era === 'B') year = 1 - year;
      const local =
        daysFromCivil(year, Number(p.month), Number(p.day)) * 86400 +
        Number(p.hour) * 3600 +
        Number(p.minute) * 60 +
        Number(p.second);
      const offset = local - bucket * 900;
      if (offsets.size >= OFFSET_CACHE_LIMIT) offsets.clear();
      offsets.set(bucket, offset);
      return offset;
    },
    abbr(utcSec) {
      const ms = utcSec * 1000;
      for (const f of shortNames) {
        const tzName = f.formatToParts(ms).find((x) => x.type === 'timeZoneName')?.value ?? '';
        if (/^[A-Z]{3,5}$/.test(tzName) && !/^(GMT|UTC)$/.test(tzName)) return tzName;
      }
      const offset = zone.offset(utcSec);
      return offset === 0 ? 'UTC' : goOffsetAbbr(offset);
    },
  };
  zoneCache.set(name, zone);
  return zone;
}

/** Go prints zones without an abbreviation as "-0700"-style names. */
function goOffsetAbbr(offset: number): string {
  if (offset === 0) return 'UTC';
  const sign = offset < 0 ? '-' : '+';
  const a = Math.abs(offset);
  const h = Math.floor(a / 3600);
  const m = Math.floor((a % 3600) / 60);
  return `${sign}${String(h).padStart(2, '0')}${m ? String(m).padStart(2, '0') : ''}`;
}

// ---- broken-down time ----------------------------------------------------------------------------

interface Broken {
  year: number;
  month: number;
  day: number;
  hour: number;
  minute: number;
  second: number;
  nanos: number;
  weekday: number;
  yday: number;
  offset: number;
  /** Computed on demand (Intl lookups are slow): only the MST layout token needs it. */
  abbr: () => string;
}

function splitNs(ns: bigint): { sec: number; nanos: number } {
  let sec = ns / NS;
  let nanos = ns % NS;
  if (nanos < 0n) {
    nanos += NS;
    sec -= 1n;
  }
  return { sec: Number(sec), nanos: Number(nanos) };
}

export function breakDown(ns: bigint, zone: Zone): Broken {
  const { sec, nanos } = splitNs(ns);
  const offset = zone.offset(sec);
  const local = sec + offset;
  const days = floorDiv(local, 86400);
  const sod = local - days * 86400;
  const [year, month, day] = civilFromDays(days);
  return {
    year,
    month,
    day,
    hour: floorDiv(sod, 3600),
    minute: floorDiv(sod % 3600, 60),
    second: sod % 60,
    nanos,
    weekday: (((days + 4) % 7) + 7) % 7,
    yday: days - daysFromCivil(year, 1, 1) + 1,
    offset,
    abbr: () => zone.abbr(sec),
  };
}

/** Nanoseconds for a local civil time in `zone` (offset resolved like Go: offset at the guessed instant). */
function fromCivil(
  y: number,
  mo: number,
  d: number,
  h: number,
  mi: number,
  s: number,
  nanos: number,
  zone: Zone,
): bigint {
  // Go normalises out-of-range months/days (AddDate relies on it).
  const m0 = mo - 1;
  const yn = y + floorDiv(m0, 12);
  const mn = (((m0 % 12) + 12) % 12) + 1;
  const local = (daysFromCivil(yn, mn, 1) + d - 1) * 86400 + h * 3600 + mi * 60 + s;
  let offset = zone.offset(local);
  // One correction step handles instants near a zone transition.
  offset = zone.offset(local - offset);
  return BigInt(local - offset) * NS + BigInt(nanos);
}

function checkRange(ns: bigint): bigint {
  if (ns < INT64_MIN || ns > INT64_MAX) throw new BuiltinError('time outside of valid range');
  return ns;
}

// ---- operands --------------------------------------------------------------------------------------

/** A nanosecond operand: must be an integer within int64 (OPA: otherwise "timestamp too big"). */
function nsOperand(v: unknown, pos: number): bigint {
  if (typeof v === 'bigint') {
    if (v < INT64_MIN || v > INT64_MAX) throw new BuiltinError('timestamp too big');
    return v;
  }
  if (typeof v !== 'number') throw operandError(pos, 'number', v);
  if (!Number.isInteger(v) || Math.abs(v) >= 2 ** 63) throw new BuiltinError('timestamp too big');
  return BigInt(v);
}

const TIME_OPERAND = 'either number (ns) or [number (ns), string (tz)]';

/**
 * OPA's time operand: `ns`, `[ns]`, `[ns, tz]` or `[ns, tz, layout]` (the layout is only used by
 * time.format). Errors always name "operand 1", even for time.diff's second operand, as OPA's do.
 */
function timeOperand(v: unknown, _pos: number): { ns: bigint; zone: Zone; layout: string } {
  const pos = 1;
  if (Array.isArray(v)) {
    if (v.length === 0) throw new BuiltinTypeError(`operand ${pos} must be ${TIME_OPERAND} but got array`);
    const ns = nsOperandChecked(v[0]);
    const zone = v.length > 1 ? loadZone(str(v[1], 1)) : UTC;
    const layout = v.length > 2 ? str(v[2], 1) : '';
    return { ns, zone, layout };
  }
  if (typeof v !== 'number' && typeof v !== 'bigint')
    throw new BuiltinTypeError(`operand ${pos} must be ${TIME_OPERAND} but got ${typeName(v)}`);
  return { ns: nsOperand(v, pos), zone: UTC, layout: '' };
}

function nsOperandChecked(v: unknown): bigint {
  return nsOperand(v, 1);
}

// ---- Go layouts ------------------------------------------------------------------------------------

type Tok =
  | { t: 'lit'; s: string }
  | { t: 'std'; s: string }
  | { t: 'frac'; s: string; digits: number; optional: boolean };

const STD_TOKENS = [
  'January',
  'Jan',
  'Monday',
  'Mon',
  'MST',
  '2006',
  '002',
  '01',
  '02',
  '03',
  '04',
  '05',
  '06',
  '__2',
  '_2',
  '15',
  '1',
  '2',
  '3',
  '4',
  '5',
  'PM',
  'pm',
  '-07:00:00',
  '-070000',
  '-07:00',
  '-0700',
  '-07',
  'Z07:00:00',
  'Z070000',
  'Z07:00',
  'Z0700',
  'Z07',
];

const layoutCache = new Map<string, Tok[]>();

function tokenize(layout: string): Tok[] {
  const cached = layoutCache.get(layout);
  if (cached) return cached;
  const toks: Tok[] = [];
  let lit = '';
  const flush = () => {
    if (lit) toks.push({ t: 'lit', s: lit });
    lit = '';
  };
  let i = 0;
  outer: while (i < layout.length) {
    const c = layout[i];
    if ((c === '.' || c === ',') && (layout[i + 1] === '0' || layout[i + 1] === '9')) {
      const digit = layout[i + 1];
      let j = i + 1;
      while (layout[j] === digit) j++;
      if (!/[0-9]/.test(layout[j] ?? '')) {
        flush();
        toks.push({ t: 'frac', s: layout.slice(i, j), digits: j - i - 1, optional: digit === '9' });
        i = j;
        continue;
      }
    }
    for (const std of STD_TOKENS) {
      if (layout.startsWith(std, i)) {
        // Go: "Jan"/"Mon" must not be followed by a lowercase letter ("Janet" is literal).
        if ((std === 'Jan' || std === 'Mon') && /[a-z]/.test(layout[i + 3] ?? '')) continue;
        // "_2006" is "_" followed by the year.
        if (std === '_2' && layout.startsWith('_2006', i)) continue;
        flush();
        toks.push({ t: 'std', s: std });
        i += std.length;
        continue outer;
      }
    }
    lit += c;
    i++;
  }
  flush();
  layoutCache.set(layout, toks);
  return toks;
}

const pad2 = (n: number): string => String(n).padStart(2, '0');

function formatOffset(offset: number, tok: string): string {
  if (tok.startsWith('Z') && offset === 0) return 'Z';
  const sign = offset < 0 ? '-' : '+';
  const a = Math.abs(offset);
  const hh = pad2(Math.floor(a / 3600));
  const mm = pad2(Math.floor((a % 3600) / 60));
  const ss = pad2(a % 60);
  const body = tok.replace(/^[Z-]/, '');
  switch (body) {
    case '07:00:00':
      return `${sign}${hh}:${mm}:${ss}`;
    case '070000':
      return `${sign}${hh}${mm}${ss}`;
    case '07:00':
      return `${sign}${hh}:${mm}`;
    case '0700':
      return `${sign}${hh}${mm}`;
    default:
      return `${sign}${hh}`;
  }
}

export function formatTime(b: Broken, layout: string): string {
  let out = '';
  for (const tok of tokenize(layout)) {
    if (tok.t === 'lit') {
      out += tok.s;
      continue;
    }
    if (tok.t === 'frac') {
      let digits = String(b.nanos).padStart(9, '0').slice(0, tok.digits);
      if (tok.optional) {
        digits = digits.replace(/0+$/, '');
        if (digits) out += tok.s[0] + digits;
      } else out += tok.s[0] + digits;
      continue;
    }
    const h12 = b.hour % 12 === 0 ? 12 : b.hour % 12;
    switch (tok.s) {
      case 'January':
        out += MONTHS[b.month - 1];
        break;
      case 'Jan':
        out += MONTHS[b.month - 1].slice(0, 3);
        break;
      case 'Monday':
        out += DAYS[b.weekday];
        break;
      case 'Mon':
        out += DAYS[b.weekday].slice(0, 3);
        break;
      case 'MST':
        out += b.abbr();
        break;
      case '2006':
        out += b.year < 0 ? '-' + String(-b.year).padStart(4, '0') : String(b.year).padStart(4, '0');
        break;
      case '06':
        out += pad2(((b.year % 100) + 100) % 100);
        break;
      case '01':
        out += pad2(b.month);
        break;
      case '1':
        out += String(b.month);
        break;
      case '02':
        out += pad2(b.day);
        break;
      case '2':
        out += String(b.day);
        break;
      case '_2':
        out += String(b.day).padStart(2, ' ');
        break;
      case '002':
        out += String(b.yday).padStart(3, '0');
        break;
      case '__2':
        out += String(b.yday).padStart(3, ' ');
        break;
      case '15':
        out += pad2(b.hour);
        break;
      case '03':
        out += pad2(h12);
        break;
      case '3':
        out += String(h12);
        break;
      case '04':
        out += pad2(b.minute);
        break;
      case '4':
        out += String(b.minute);
        break;
      case '05':
        out += pad2(b.second);
        break;
      case '5':
        out += String(b.second);
        break;
      case 'PM':
        out += b.hour >= 12 ? 'PM' : 'AM';
        break;
      case 'pm':
        out += b.hour >= 12 ? 'pm' : 'am';
        break;
      default:
        out += formatOffset(b.offset, tok.s);
    }
  }
  return out;
}

class ParseFailure extends Error {}

const offsetPatterns = new Map<string, RegExp>();
/** Regex for a numeric zone-offset token ("-07:00", "Z0700", …): sign, hours, minutes?, seconds?. */
function offsetPattern(tok: string): RegExp {
  let re = offsetPatterns.get(tok);
  if (!re) {
    const body = tok
      .slice(1)
      .replace('07', '(\\d{2})')
      .replace(/:00:00$/, ':(\\d{2}):(\\d{2})')
      .replace(/0000$/, '(\\d{2})(\\d{2})')
      .replace(/:00$/, ':(\\d{2})')
      .replace(/00$/, '(\\d{2})');
    re = new RegExp(`^([+-])${body}`);
    offsetPatterns.set(tok, re);
  }
  return re;
}

const SHORT_MONTHS = MONTHS.map((m) => m.slice(0, 3));
const SHORT_DAYS = DAYS.map((d) => d.slice(0, 3));

/** The unparsed rest of a time value (a class, not closures: hot path, see bench/builtins.ts). */
class ValueCursor {
  rest: string;
  constructor(
    readonly value: string,
    readonly layout: string,
  ) {
    this.rest = value;
  }

  fail(what: string): never {
    throw new ParseFailure(
      `parsing time ${JSON.stringify(this.value)} as ${JSON.stringify(this.layout)}: cannot parse ${JSON.stringify(this.rest)} as ${JSON.stringify(what)}`,
    );
  }

  /** Exactly `fixed` digits, or (fixed = 0) 1..maxDigits digits. */
  num(tok: string, fixed: number, maxDigits = fixed): number {
    const want = fixed || maxDigits;
    const rest = this.rest;
    let n = 0;
    let k = 0;
    while (k < want && k < rest.length) {
      const ch = rest.charCodeAt(k);
      if (ch < 48 || ch > 57) break;
      n = n * 10 + (ch - 48);
      k++;
    }
    if (k === 0 || (fixed && k !== fixed)) this.fail(tok);
    this.rest = rest.slice(k);
    return n;
  }

  /** Case-insensitive match of one of `names`; returns its index. */
  lookup(tok: string, names: string[]): number {
    for (let i = 0; i < names.length; i++) {
      const n = names[i];
      if (this.rest.slice(0, n.length).toLowerCase() === n.toLowerCase()) {
        this.rest = this.rest.slice(n.length);
        return i;
      }
    }
    return this.fail(tok);
  }

  /** An optional `.123` / `,123` fraction of a second, as nanoseconds. */
  fraction(): number | undefined {
    const m = /^[.,](\d+)/.exec(this.rest);
    if (!m) return undefined;
    this.rest = this.rest.slice(m[0].length);
    return Number(m[1].slice(0, 9).padEnd(9, '0'));
  }
}

/** Go's time.Parse(layout, value) → nanoseconds since the epoch (UTC unless the value has an offset). */
export function parseTime(layout: string, value: string, defaultZone: Zone = UTC): bigint {
  const toks = tokenize(layout);
  const c = new ValueCursor(value, layout);
  let year = 1;
  let month = 1;
  let day = 1;
  let yday = -1;
  let hour = 0;
  let minute = 0;
  let second = 0;
  let nanos = 0;
  let pm: boolean | undefined;
  let offset: number | undefined;
  for (let k = 0; k < toks.length; k++) {
    const tok = toks[k];
    if (tok.t === 'lit') {
      if (!c.rest.startsWith(tok.s)) c.fail(tok.s);
      c.rest = c.rest.slice(tok.s.length);
      continue;
    }
    if (tok.t === 'frac') {
      if (tok.optional) nanos = c.fraction() ?? nanos;
      else {
        const digits = c.rest.slice(1, 1 + tok.digits);
        if (!/^[.,]/.test(c.rest) || digits.length !== tok.digits || !/^\d+$/.test(digits)) c.fail(tok.s);
        nanos = Number(digits.padEnd(9, '0').slice(0, 9));
        c.rest = c.rest.slice(1 + tok.digits);
      }
      continue;
    }
    switch (tok.s) {
      case 'January':
        month = c.lookup(tok.s, MONTHS) + 1;
        break;
      case 'Jan':
        month = c.lookup(tok.s, SHORT_MONTHS) + 1;
        break;
      case 'Monday':
        c.lookup(tok.s, DAYS);
        break;
      case 'Mon':
        c.lookup(tok.s, SHORT_DAYS);
        break;
      case 'MST': {
        const m = /^(UTC|GMT)([+-]\d{1,2})?|^[A-Z]{3,5}/.exec(c.rest);
        if (!m) c.fail(tok.s);
        offset = m![2] ? Number(m![2]) * 3600 : (offset ?? 0);
        c.rest = c.rest.slice(m![0].length);
        break;
      }
      case '2006': {
        const m = /^\d{4}/.exec(c.rest);
        if (!m) c.fail(tok.s);
        year = Number(m![0]);
        c.rest = c.rest.slice(4);
        break;
      }
      case '06': {
        const y = c.num(tok.s, 2);
        year = y >= 69 ? 1900 + y : 2000 + y;
        break;
      }
      case '01':
        month = c.num(tok.s, 2);
        break;
      case '1':
        month = c.num(tok.s, 0, 2);
        break;
      case '02':
        day = c.num(tok.s, 2);
        break;
      case '_2':
        if (c.rest.startsWith(' ')) c.rest = c.rest.slice(1);
        day = c.num(tok.s, 0, 2);
        break;
      case '2':
        day = c.num(tok.s, 0, 2);
        break;
      case '002':
        yday = c.num(tok.s, 3);
        break;
      case '__2':
        c.rest = c.rest.replace(/^ {1,2}/, '');
        yday = c.num(tok.s, 0, 3);
        break;
      case '15':
        hour = c.num(tok.s, 0, 2);
        break;
      case '03':
        hour = c.num(tok.s, 2);
        break;
      case '3':
        hour = c.num(tok.s, 0, 2);
        break;
      case '04':
        minute = c.num(tok.s, 2);
        break;
      case '4':
        minute = c.num(tok.s, 0, 2);
        break;
      case '05':
      case '5':
        second = tok.s === '05' ? c.num(tok.s, 2) : c.num(tok.s, 0, 2);
        // Go accepts a fractional second after the seconds field even if the layout has none.
        if (toks[k + 1]?.t !== 'frac') nanos = c.fraction() ?? nanos;
        break;
      case 'PM':
      case 'pm': {
        const m = /^(AM|PM|am|pm)/.exec(c.rest);
        if (!m) c.fail(tok.s);
        pm = m![0].toUpperCase() === 'PM';
        c.rest = c.rest.slice(2);
        break;
      }
      default: {
        if (tok.s.startsWith('Z') && c.rest.startsWith('Z')) {
          offset = 0;
          c.rest = c.rest.slice(1);
          break;
        }
        const m = offsetPattern(tok.s).exec(c.rest);
        if (!m) c.fail(tok.s);
        const [hh, mm, ss] = [m![2], m![3], m![4]].map((x) => Number(x ?? 0));
        // Go checks an offset with > (24 hours, 60 minutes or seconds pass); the last field out of range names it.
        const wide = ss > 60 ? 'second' : mm > 60 ? 'minute' : hh > 24 ? 'hour' : undefined;
        if (wide)
          throw new ParseFailure(`parsing time ${JSON.stringify(value)}: time zone offset ${wide} out of range`);
        offset = (m![1] === '-' ? -1 : 1) * (hh * 3600 + mm * 60 + ss);
        c.rest = c.rest.slice(m![0].length);
      }
    }
  }
  if (c.rest !== '')
    throw new ParseFailure(`parsing time ${JSON.stringify(value)}: extra text: ${JSON.stringify(c.rest)}`);
  if (pm !== undefined) {
    if (hour > 12) throw new ParseFailure(`parsing time ${JSON.stringify(value)}: hour out of range`);
    if (pm && hour < 12) hour += 12;
    if (!pm && hour === 12) hour = 0;
  }
  if (yday >= 0) {
    if (yday < 1 || yday > (isLeap(year) ? 366 : 365))
      throw new ParseFailure(`parsing time ${JSON.stringify(value)}: day-of-year out of range`);
    [, month, day] = civilFromDays(daysFromCivil(year, 1, 1) + yday - 1);
  }
  if (month < 1 || month > 12) throw new ParseFailure(`parsing time ${JSON.stringify(value)}: month out of range`);
  if (day < 1 || day > daysIn(year, month))
    throw new ParseFailure(`parsing time ${JSON.stringify(value)}: day out of range`);
  if (hour > 23) throw new ParseFailure(`parsing time ${JSON.stringify(value)}: hour out of range`);
  if (minute > 59) throw new ParseFailure(`parsing time ${JSON.stringify(value)}: minute out of range`);
  if (second > 59) throw new ParseFailure(`parsing time ${JSON.stringify(value)}: second out of range`);
  const zone = offset !== undefined ? new FixedZone(offset, '') : defaultZone;
  return fromCivil(year, month, day, hour, minute, second, nanos, zone);
}

function parseOrError(layout: string, value: string): bigint {
  try {
    return checkRange(parseTime(layout, value));
  } catch (e) {
    if (e instanceof ParseFailure) throw new BuiltinError(e.message);
    throw e;
  }
}

// ---- durations -------------------------------------------------------------------------------------

const UNITS: Record<string, bigint> = {
  ns: 1n,
  us: 1000n,
  µs: 1000n,
  μs: 1000n,
  ms: 1_000_000n,
  s: NS,
  m: 60n * NS,
  h: 3600n * NS,
};

/** Go's time.ParseDuration, exact. */
export function parseDuration(s: string): bigint {
  const bad = (): never => {
    throw new BuiltinError(`time: invalid duration ${JSON.stringify(s)}`);
  };
  let rest = s;
  let neg = false;
  if (rest[0] === '-' || rest[0] === '+') {
    neg = rest[0] === '-';
    rest = rest.slice(1);
  }
  if (rest === '0') return 0n;
  if (rest === '') bad();
  let total = 0n;
  while (rest !== '') {
    const m = /^(\d*)(?:\.(\d*))?([^\d.]+)/.exec(rest);
    if (!m || (m[1] === '' && (m[2] ?? '') === '')) bad();
    const unit = UNITS[m![3]];
    if (unit === undefined)
      throw new BuiltinError(`time: unknown unit ${JSON.stringify(m![3])} in duration ${JSON.stringify(s)}`);
    const whole = BigInt(m![1] || '0');
    const frac = m![2] ?? '';
    let v = whole * unit;
    if (frac) v += (BigInt(frac) * unit) / 10n ** BigInt(frac.length);
    total += v;
    if (total > INT64_MAX) bad();
    rest = rest.slice(m![0].length);
  }
  return neg ? -total : total;
}

// ---- diff ------------------------------------------------------------------------------------------

function diff(a: Broken, b: Broken): number[] {
  let year = b.year - a.year;
  let month = b.month - a.month;
  let day = b.day - a.day;
  let hour = b.hour - a.hour;
  let min = b.minute - a.minute;
  let sec = b.second - a.second;
  if (sec < 0) {
    sec += 60;
    min--;
  }
  if (min < 0) {
    min += 60;
    hour--;
  }
  if (hour < 0) {
    hour += 24;
    day--;
  }
  if (day < 0) {
    // Borrow the length of a's month (Go: 32 - Date(y, m, 32).Day()).
    day += daysIn(a.year, a.month);
    month--;
  }
  if (month < 0) {
    month += 12;
    year--;
  }
  return [year, month, day, hour, min, sec];
}

/** Exact integers beyond 2^53 stay bigint (the adapter sends them as raw JSON). */
const nsResult = (ns: bigint): number | bigint =>
  ns >= BigInt(Number.MIN_SAFE_INTEGER) && ns <= BigInt(Number.MAX_SAFE_INTEGER) ? Number(ns) : ns;

export const timeBuiltins: HostImpls = {
  'time.now_ns': (_args, ctx: HostBuiltinContext) => nsResult(ctx.evaluation().nowNs),
  'time.parse_ns': ([layout, value]) => {
    const l = str(layout, 1);
    const v = str(value, 2);
    return nsResult(parseOrError(Object.hasOwn(namedLayouts, l) ? namedLayouts[l] : l, v));
  },
  'time.parse_rfc3339_ns': ([value]) => nsResult(parseOrError(namedLayouts.RFC3339, str(value, 1))),
  'time.parse_duration_ns': ([value]) => nsResult(parseDuration(str(value, 1))),
  'time.date'([x]) {
    const { ns, zone } = timeOperand(x, 1);
    const b = breakDown(ns, zone);
    return [b.year, b.month, b.day];
  },
  'time.clock'([x]) {
    const { ns, zone } = timeOperand(x, 1);
    const b = breakDown(ns, zone);
    return [b.hour, b.minute, b.second];
  },
  'time.weekday'([x]) {
    const { ns, zone } = timeOperand(x, 1);
    return DAYS[breakDown(ns, zone).weekday];
  },
  'time.add_date'([x, y, m, d]) {
    const { ns, zone } = timeOperand(x, 1);
    const years = int(y, 2);
    const months = int(m, 3);
    const days = int(d, 4);
    // Go's AddDate works on the civil date in the operand's location, then normalises.
    const b = breakDown(ns, zone);
    const out = fromCivil(b.year + years, b.month + months, b.day + days, b.hour, b.minute, b.second, b.nanos, zone);
    return nsResult(checkRange(out));
  },
  'time.diff'([x1, x2]) {
    const t1 = timeOperand(x1, 1);
    const t2 = timeOperand(x2, 2);
    // Both in the first operand's location; the earlier one first.
    let [a, b] = [t1.ns, t2.ns];
    if (a > b) [a, b] = [b, a];
    return diff(breakDown(a, t1.zone), breakDown(b, t1.zone));
  },
  'time.format'([x]) {
    const { ns, zone, layout } = timeOperand(x, 1);
    // Default RFC3339Nano; a Go constant name, or else a literal layout.
    const l =
      layout === '' ? namedLayouts.RFC3339Nano : Object.hasOwn(namedLayouts, layout) ? namedLayouts[layout] : layout;
    return formatTime(breakDown(ns, zone), l);
  },
};
