// Strict JSON parser (RFC 8259) and, in `rego` mode, Rego term syntax for input on the fast path
// (`opa_value_parse`: sets `{1,2}` / `set()`, non-string object keys). Numbers keep their text; strings
// without escapes point into the source buffer (the bump allocator never reuses it).
import { opa_malloc } from "./alloc";
import { NULL_VALUE, TRUE_VALUE, FALSE_VALUE, rt_string, rt_array, rt_array_append, rt_object, rt_set, rt_set_add, objectFromPairs } from "./value";
import { numFromText } from "./number";

const MAX_DEPTH: i32 = 1000;

let pos: usize = 0;
let end: usize = 0;
let depth: i32 = 0;
let regoMode = false;
let failed = false;

@inline function peek(): u32 { return pos < end ? <u32>load<u8>(pos) : 0xFFFFFFFF; }

function skipWs(): void {
  while (pos < end) {
    const c = load<u8>(pos);
    if (c == 0x20 || c == 0x09 || c == 0x0A || c == 0x0D) pos++;
    else break;
  }
}

function fail(): usize { failed = true; return 0; }

function literal(word: string): bool {
  const n = word.length;
  if (end - pos < <usize>n) return false;
  for (let i = 0; i < n; i++) if (load<u8>(pos + i) != <u8>word.charCodeAt(i)) return false;
  pos += n;
  return true;
}

function hex4(p: usize): i32 {
  let x: i32 = 0;
  for (let i = 0; i < 4; i++) {
    const c = <i32>load<u8>(p + i);
    let d: i32;
    if (c >= 0x30 && c <= 0x39) d = c - 0x30;
    else if (c >= 0x61 && c <= 0x66) d = c - 0x61 + 10;
    else if (c >= 0x41 && c <= 0x46) d = c - 0x41 + 10;
    else return -1;
    x = (x << 4) | d;
  }
  return x;
}

function putUtf8(out: usize, cp: u32): usize {
  if (cp < 0x80) { store<u8>(out, <u8>cp); return 1; }
  if (cp < 0x800) { store<u8>(out, <u8>(0xC0 | (cp >> 6))); store<u8>(out + 1, <u8>(0x80 | (cp & 0x3F))); return 2; }
  if (cp < 0x10000) {
    store<u8>(out, <u8>(0xE0 | (cp >> 12))); store<u8>(out + 1, <u8>(0x80 | ((cp >> 6) & 0x3F)));
    store<u8>(out + 2, <u8>(0x80 | (cp & 0x3F))); return 3;
  }
  store<u8>(out, <u8>(0xF0 | (cp >> 18))); store<u8>(out + 1, <u8>(0x80 | ((cp >> 12) & 0x3F)));
  store<u8>(out + 2, <u8>(0x80 | ((cp >> 6) & 0x3F))); store<u8>(out + 3, <u8>(0x80 | (cp & 0x3F)));
  return 4;
}

function parseString(): usize {
  // at opening quote
  pos++;
  const start = pos;
  let escapes = false;
  const quote = i8x16.splat(0x22), backslash = i8x16.splat(0x5C), space = i8x16.splat(0x20);
  while (true) {
    // 16 plain bytes (no quote, backslash or control byte) at a time: inputs carry whole tool outputs
    while (pos + 16 <= end) {
      const v = v128.load(pos);
      const special = i8x16.bitmask(v128.or(v128.or(i8x16.eq(v, quote), i8x16.eq(v, backslash)), i8x16.lt_u(v, space)));
      // jump straight to the first special byte (escaped logs have one every line)
      if (special != 0) { pos += <usize>ctz(special); break; }
      pos += 16;
    }
    if (pos >= end) return fail();
    const c = load<u8>(pos);
    if (c == 0x22) break;
    if (c < 0x20) return fail();
    if (c == 0x5C) { escapes = true; pos += 2; continue; }
    pos++;
  }
  if (pos > end) return fail();
  const rawEnd = pos;
  pos++; // closing quote
  if (!escapes) return rt_string(start, <u32>(rawEnd - start));
  // Escapes never make the text longer than its source.
  const buf = opa_malloc(rawEnd - start);
  let o: usize = 0;
  let p = start;
  while (p < rawEnd) {
    const c = load<u8>(p);
    if (c != 0x5C) {
      // copy up to the next escape in one go
      let q = p + 1;
      while (q + 16 <= rawEnd) {
        const slash = i8x16.bitmask(i8x16.eq(v128.load(q), backslash));
        if (slash != 0) { q += <usize>ctz(slash); break; }
        q += 16;
      }
      while (q < rawEnd && load<u8>(q) != 0x5C) q++;
      const l = q - p;
      memory.copy(buf + o, p, l);
      o += l;
      p += l;
      continue;
    }
    const e = load<u8>(p + 1);
    p += 2;
    switch (e) {
      case 0x22: store<u8>(buf + o, 0x22); o++; break;
      case 0x5C: store<u8>(buf + o, 0x5C); o++; break;
      case 0x2F: store<u8>(buf + o, 0x2F); o++; break;
      case 0x62: store<u8>(buf + o, 0x08); o++; break;
      case 0x66: store<u8>(buf + o, 0x0C); o++; break;
      case 0x6E: store<u8>(buf + o, 0x0A); o++; break;
      case 0x72: store<u8>(buf + o, 0x0D); o++; break;
      case 0x74: store<u8>(buf + o, 0x09); o++; break;
      case 0x75: {
        if (rawEnd - p < 4) return fail();
        let cp = hex4(p);
        if (cp < 0) return fail();
        p += 4;
        if (cp >= 0xD800 && cp < 0xDC00) {
          // surrogate pair; a lone surrogate becomes U+FFFD as in Go
          if (rawEnd - p >= 6 && load<u8>(p) == 0x5C && load<u8>(p + 1) == 0x75) {
            const lo = hex4(p + 2);
            if (lo >= 0xDC00 && lo < 0xE000) {
              cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
              p += 6;
            } else cp = 0xFFFD;
          } else cp = 0xFFFD;
        } else if (cp >= 0xDC00 && cp < 0xE000) cp = 0xFFFD;
        o += putUtf8(buf + o, <u32>cp);
        break;
      }
      default: return fail();
    }
  }
  return rt_string(buf, <u32>o);
}

function isDigit(c: u32): bool { return c >= 0x30 && c <= 0x39; }

function parseNumber(): usize {
  const start = pos;
  if (peek() == 0x2D) pos++;
  if (peek() == 0x30) pos++;
  else if (isDigit(peek())) { while (isDigit(peek())) pos++; }
  else return fail();
  if (peek() == 0x2E) {
    pos++;
    if (!isDigit(peek())) return fail();
    while (isDigit(peek())) pos++;
  }
  if (peek() == 0x65 || peek() == 0x45) {
    pos++;
    if (peek() == 0x2B || peek() == 0x2D) pos++;
    if (!isDigit(peek())) return fail();
    while (isDigit(peek())) pos++;
  }
  return numFromText(start, <u32>(pos - start));
}

function parseValue(): usize {
  skipWs();
  if (pos >= end) return fail();
  const c = <u32>load<u8>(pos);
  if (c == 0x22) return parseString();
  if (c == 0x7B) return parseBrace();
  if (c == 0x5B) return parseArray();
  if (c == 0x2D || isDigit(c)) return parseNumber();
  if (literal("true")) return TRUE_VALUE;
  if (literal("false")) return FALSE_VALUE;
  if (literal("null")) return NULL_VALUE;
  if (regoMode && literal("set(")) {
    skipWs();
    if (peek() != 0x29) return fail();
    pos++;
    return rt_set();
  }
  return fail();
}

function parseArray(): usize {
  pos++;
  if (++depth > MAX_DEPTH) return fail();
  const arr = rt_array(0);
  skipWs();
  if (peek() == 0x5D) { pos++; depth--; return arr; }
  while (true) {
    const v = parseValue();
    if (failed) return 0;
    rt_array_append(arr, v);
    skipWs();
    const c = peek();
    if (c == 0x2C) { pos++; continue; }
    if (c == 0x5D) { pos++; break; }
    return fail();
  }
  depth--;
  return arr;
}

// '{' starts an object, or in rego mode possibly a set literal `{1, 2}`.
function parseBrace(): usize {
  pos++;
  if (++depth > MAX_DEPTH) return fail();
  skipWs();
  if (peek() == 0x7D) { pos++; depth--; return rt_object(); }
  let first: usize;
  if (regoMode) first = parseValue();
  else {
    if (peek() != 0x22) return fail();
    first = parseString();
  }
  if (failed) return 0;
  skipWs();
  if (peek() == 0x3A) {
    // Collect pairs, then sort once (objectFromPairs): inserting one at a time is quadratic for large
    // documents whose keys are not in order.
    let cap: u32 = 8;
    let pairs = opa_malloc(<usize>cap << 3);
    let n: u32 = 0;
    let key = first;
    while (true) {
      // at ':'
      pos++;
      const v = parseValue();
      if (failed) return 0;
      if (n == cap) {
        const np = opa_malloc(<usize>cap << 4);
        memory.copy(np, pairs, <usize>cap << 3);
        pairs = np;
        cap <<= 1;
      }
      store<u32>(pairs + (<usize>n << 3), <u32>key);
      store<u32>(pairs + (<usize>n << 3), <u32>v, 4);
      n++;
      skipWs();
      const c = peek();
      if (c == 0x7D) { pos++; break; }
      if (c != 0x2C) return fail();
      pos++;
      skipWs();
      if (regoMode) key = parseValue();
      else {
        if (peek() != 0x22) return fail();
        key = parseString();
      }
      if (failed) return 0;
      skipWs();
      if (peek() != 0x3A) return fail();
    }
    depth--;
    return objectFromPairs(pairs, n);
  }
  if (!regoMode) return fail();
  const set = rt_set();
  rt_set_add(set, first);
  while (true) {
    skipWs();
    const c = peek();
    if (c == 0x7D) { pos++; break; }
    if (c != 0x2C) return fail();
    pos++;
    const v = parseValue();
    if (failed) return 0;
    rt_set_add(set, v);
  }
  depth--;
  return set;
}

function parseTop(ptr: usize, len: usize, rego: bool): usize {
  pos = ptr;
  end = ptr + len;
  depth = 0;
  regoMode = rego;
  failed = false;
  const v = parseValue();
  if (failed) return 0;
  skipWs();
  if (pos != end) return 0;
  return v;
}

export function opa_json_parse(ptr: usize, len: usize): usize { return parseTop(ptr, len, false); }
export function opa_value_parse(ptr: usize, len: usize): usize { return parseTop(ptr, len, true); }
