// base64, hex, URL query, JSON and YAML encodings with Go's behaviour (strict base64, Go's
// json.Marshal escaping and sorted keys, url.QueryEscape).
import YAML from 'yaml';
import type { HostImpls } from './registry.ts';
import { BuiltinError, BuiltinTypeError, DecimalText, obj, str, typeName, type JsonValue } from './values.ts';

const utf8 = (s: string): Buffer => Buffer.from(s, 'utf8');

const STD = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/;
const URL_PADDED = /^(?:[A-Za-z0-9_-]{4})*(?:[A-Za-z0-9_-]{2}==|[A-Za-z0-9_-]{3}=)?$/;
const URL_RAW = /^(?:[A-Za-z0-9_-]{4})*(?:[A-Za-z0-9_-]{2,3})?$/;

/** Go's base64.StdEncoding.DecodeString: padding required; only CR and LF are skipped. */
function decodeStd(s: string): Buffer {
  const text = s.replace(/[\r\n]/g, '');
  if (!STD.test(text)) throw new BuiltinError(`illegal base64 data at input byte ${firstBad(text, /[A-Za-z0-9+/=]/)}`);
  return Buffer.from(text, 'base64');
}

function firstBad(s: string, ok: RegExp): number {
  for (let i = 0; i < s.length; i++) if (!ok.test(s[i])) return i;
  return Math.max(0, s.length - (s.length % 4 || 4));
}

// Go's json.Marshal escapes <, >, & and U+2028/U+2029 (HTML-safe output).
const htmlEscape = (json: string): string =>
  json.replace(/[<>&\u2028\u2029]/g, (c) => '\\u' + c.charCodeAt(0).toString(16).padStart(4, '0'));

/**
 * Go's json.Marshal of an OPA value: object keys sorted, compact, HTML-safe escaping. Integers beyond 2^53
 * arrive as bigint (names.ts exactIntegerBuiltins) and are written as their digits, as OPA writes the number
 * it holds; JSON.stringify would refuse them.
 */
export function goJsonMarshal(v: unknown, indent?: { prefix: string; indent: string }): string {
  let out = htmlEscape(jsonText(v, indent?.indent ?? '', ''));
  // OPA prefixes every line, the first one included (MarshalIndent skips the first; OPA adds it).
  if (indent?.prefix) out = indent.prefix + out.split('\n').join('\n' + indent.prefix);
  return out;
}

/** JSON.stringify(v, null, step) with sorted object keys and bigints as digits; `at` is the current indent. */
function jsonText(v: unknown, step: string, at: string): string {
  if (typeof v === 'bigint') return v.toString(10);
  if (v instanceof DecimalText) return v.text;
  if (v === null || typeof v !== 'object') return JSON.stringify(v) ?? 'null';
  const inner = at + step;
  const open = step ? `\n${inner}` : '';
  const sep = step ? `,\n${inner}` : ',';
  const close = step ? `\n${at}` : '';
  if (Array.isArray(v)) {
    if (v.length === 0) return '[]';
    return `[${open}${v.map((x) => jsonText(x, step, inner)).join(sep)}${close}]`;
  }
  const record = v as Record<string, unknown>;
  const keys = Object.keys(record)
    .filter((k) => record[k] !== undefined)
    .sort();
  if (keys.length === 0) return '{}';
  const colon = step ? ': ' : ':';
  return `{${open}${keys.map((k) => JSON.stringify(k) + colon + jsonText(record[k], step, inner)).join(sep)}${close}}`;
}

/** Go's url.QueryEscape: unreserved bytes stay, space becomes '+', the rest %XX. */
function queryEscape(s: string): string {
  let out = '';
  for (const b of utf8(s)) {
    const c = String.fromCharCode(b);
    if (/[A-Za-z0-9\-_.~]/.test(c)) out += c;
    else if (c === ' ') out += '+';
    else out += '%' + b.toString(16).toUpperCase().padStart(2, '0');
  }
  return out;
}

/** Go's url.QueryUnescape. */
function queryUnescape(s: string): string {
  const bytes: number[] = [];
  for (let i = 0; i < s.length; i++) {
    const c = s[i];
    if (c === '%') {
      const hex = s.slice(i + 1, i + 3);
      if (!/^[0-9A-Fa-f]{2}$/.test(hex))
        throw new BuiltinError(`invalid URL escape ${JSON.stringify(s.slice(i, i + 3))}`);
      bytes.push(parseInt(hex, 16));
      i += 2;
    } else if (c === '+') bytes.push(0x20);
    else bytes.push(...utf8(c));
  }
  return Buffer.from(bytes).toString('utf8');
}

const encodeObjectError = 'operand 1 values must be string, array[string], or set[string]';

function stringValues(v: unknown): string[] {
  if (typeof v === 'string') return [v];
  if (Array.isArray(v)) {
    return v.map((e) => {
      if (typeof e !== 'string') throw new BuiltinTypeError(encodeObjectError);
      return e;
    });
  }
  throw new BuiltinTypeError(encodeObjectError);
}

// JSON numbers that a double cannot hold exactly (long digit runs) would lose precision in
// JSON.parse; for those we hand the module the original text (opa-wasm accepts raw JSON bytes).
const LONG_NUMBER = /(?<![\w."])-?\d{16,}/;

function parseJson(s: string): unknown {
  try {
    return JSON.parse(s);
  } catch (e) {
    throw new BuiltinError((e as Error).message);
  }
}

const yamlOptions = { version: '1.1' as const, uniqueKeys: false };

export const encodingBuiltins: HostImpls = {
  'base64.encode': ([s]) => utf8(str(s, 1)).toString('base64'),
  'base64.decode': ([s]) => decodeStd(str(s, 1)).toString('utf8'),
  'base64.is_valid': ([s]) => typeof s === 'string' && STD.test(s.replace(/[\r\n]/g, '')),
  'base64url.encode': ([s]) => {
    const raw = utf8(str(s, 1)).toString('base64url');
    return raw + '='.repeat((4 - (raw.length % 4)) % 4);
  },
  'base64url.encode_no_pad': ([s]) => utf8(str(s, 1)).toString('base64url'),
  'base64url.decode'([s]) {
    const input = str(s, 1);
    // OPA accepts padded and unpadded URL-safe base64.
    if (!URL_PADDED.test(input) && !URL_RAW.test(input))
      throw new BuiltinError(`illegal base64 data at input byte ${firstBad(input, /[A-Za-z0-9_\-=]/)}`);
    return Buffer.from(input, 'base64url').toString('utf8');
  },
  'hex.encode': ([s]) => utf8(str(s, 1)).toString('hex'),
  'hex.decode'([s]) {
    const input = str(s, 1);
    const bad = /[^0-9a-fA-F]/.exec(input);
    if (bad)
      throw new BuiltinError(
        `encoding/hex: invalid byte: U+${bad[0].codePointAt(0)!.toString(16).toUpperCase().padStart(4, '0')} ${goQuoteRune(bad[0])}`,
      );
    if (input.length % 2) throw new BuiltinError('encoding/hex: odd length hex string');
    return Buffer.from(input, 'hex').toString('utf8');
  },
  'urlquery.encode': ([s]) => queryEscape(str(s, 1)),
  'urlquery.decode': ([s]) => queryUnescape(str(s, 1)),
  'urlquery.encode_object'([o]) {
    const object = obj(o, 1);
    const parts: string[] = [];
    for (const k of Object.keys(object).sort()) {
      for (const v of stringValues(object[k])) parts.push(`${queryEscape(k)}=${queryEscape(v)}`);
    }
    return parts.join('&');
  },
  'urlquery.decode_object'([s]) {
    const out: Record<string, string[]> = {};
    for (const part of str(s, 1).split(/&/)) {
      if (part === '') continue;
      if (part.includes(';')) throw new BuiltinError('invalid semicolon separator in query');
      const eq = part.indexOf('=');
      const k = queryUnescape(eq === -1 ? part : part.slice(0, eq));
      const v = eq === -1 ? '' : queryUnescape(part.slice(eq + 1));
      (out[k] ??= []).push(v);
    }
    return out;
  },
  'json.marshal': ([v]) => goJsonMarshal(v),
  'json.marshal_with_options'([v, o]) {
    const opts = obj(o, 2);
    // OPA checks the keys in sorted order and reports the first problem.
    for (const k of Object.keys(opts).sort()) {
      const val = opts[k];
      if (k === 'pretty') {
        if (typeof val !== 'boolean') throw new BuiltinTypeError(`operand 2 key ${k} failed cast to bool`);
      } else if (k === 'indent' || k === 'prefix') {
        if (typeof val !== 'string')
          throw new BuiltinTypeError(
            `operand 2 key ${k} failed cast to string: operand 1 must be string but got ${typeName(val)}`,
          );
      } else throw new BuiltinTypeError(`operand 2 object contained unknown key ${k}`);
    }
    const pretty = (opts.pretty as boolean | undefined) ?? ('indent' in opts || 'prefix' in opts);
    if (!pretty) return goJsonMarshal(v);
    return goJsonMarshal(v, {
      prefix: (opts.prefix as string | undefined) ?? '',
      indent: (opts.indent as string | undefined) ?? '\t',
    });
  },
  'json.unmarshal'([s]) {
    const text = str(s, 1);
    const value = parseJson(text);
    return LONG_NUMBER.test(text) ? new TextEncoder().encode(text).buffer : value;
  },
  'json.is_valid'([s]) {
    if (typeof s !== 'string') return false;
    try {
      JSON.parse(s);
      return true;
    } catch {
      return false;
    }
  },
  'yaml.marshal': ([v]) => YAML.stringify(v, { ...yamlOptions, sortMapEntries: true, indentSeq: false, lineWidth: 0 }),
  'yaml.unmarshal'([s]) {
    const text = str(s, 1);
    const docs = YAML.parseAllDocuments(text, yamlOptions);
    const list = Array.isArray(docs) ? docs : [docs];
    const first = list[0];
    if (!first) return null;
    if (first.errors.length) throw new BuiltinError(first.errors[0].message);
    return jsonCompatible(first.toJS({ maxAliasCount: 100 }));
  },
  'yaml.is_valid'([s]) {
    if (typeof s !== 'string') return false;
    const docs = YAML.parseAllDocuments(s, yamlOptions);
    const list = Array.isArray(docs) ? docs : [docs];
    return list.every((d) => d.errors.length === 0);
  },
};

/** YAML may produce Dates, Maps with non-string keys, etc.; convert to what JSON can carry. */
function jsonCompatible(v: unknown): JsonValue {
  if (v === undefined || v === null) return null;
  if (v instanceof Date) return v.toISOString();
  if (v instanceof Map) {
    const out: Record<string, JsonValue> = {};
    for (const [k, val] of v) out[typeof k === 'string' ? k : JSON.stringify(k)] = jsonCompatible(val);
    return out;
  }
  if (v instanceof Set) return [...v].map(jsonCompatible);
  if (Array.isArray(v)) return v.map(jsonCompatible);
  if (typeof v === 'object') {
    const out: Record<string, JsonValue> = {};
    for (const [k, val] of Object.entries(v)) out[k] = jsonCompatible(val);
    return out;
  }
  if (typeof v === 'bigint') return Number(v);
  if (typeof v === 'number' && !Number.isFinite(v))
    throw new BuiltinError(`yaml value ${v} cannot be represented in JSON`);
  return v as JsonValue;
}

function goQuoteRune(c: string): string {
  return `'${c}'`;
}
