// Static data segment appended after the runtime's own data: IR strings as prebuilt string values (so a
// `string_index` operand costs nothing at run time), constant numbers, booleans, null, NUL-terminated
// error messages, and prebuilt objects for builtins()/entrypoints()/the CallDynamicStmt mapping.
// Layouts must match runtime/assembly/value.ts and number.ts.
import { compareUtf8, utf8Bytes } from '../utf8.ts';

const T_NULL = 1;
const T_BOOL = 2;
const T_NUMBER = 3;
const T_STRING = 4;
const T_ARRAY = 5;
const T_OBJECT = 6;
const T_SET = 7;
const K_INT = 0;
const K_DEC = 2;
const K_BIG = 3;

// JSON's number grammar, and the literal text OPA's parser keeps for a number written with a leading dot
// (parseNumber: `.5`, `-.5`, `.05e3`), which reaches the module as written through MakeNumberRefStmt.
const NUMBER_TEXT = /^-?((0|[1-9][0-9]*)(\.[0-9]+)?|\.[0-9]+)([eE][+-]?[0-9]+)?$/;

export type StaticValue = string | number | bigint | boolean | null | { [key: string]: StaticValue };

export class StaticData {
  private buf = new Uint8Array(4096);
  private view = new DataView(this.buf.buffer);
  private size = 0;
  private readonly strings = new Map<string, number>();
  private readonly cstrings = new Map<string, number>();
  private readonly numbers = new Map<string, number>();
  private nullAddr = 0;
  private trueAddr = 0;
  private falseAddr = 0;

  constructor(readonly base: number) {
    if (base % 8 !== 0) throw new Error('static data base must be 8-aligned');
  }

  get end(): number {
    return this.base + this.size;
  }

  bytes(): Uint8Array {
    return this.buf.slice(0, this.size);
  }

  private reserve(size: number, align = 8): number {
    let off = this.size;
    off = (off + align - 1) & ~(align - 1);
    const need = off + size;
    if (need > this.buf.length) {
      let cap = this.buf.length;
      while (cap < need) cap *= 2;
      const nb = new Uint8Array(cap);
      nb.set(this.buf);
      this.buf = nb;
      this.view = new DataView(nb.buffer);
    }
    this.size = need;
    return off;
  }

  private raw(bytes: Uint8Array, align = 1): number {
    const off = this.reserve(bytes.length, align);
    this.buf.set(bytes, off);
    return this.base + off;
  }

  /** NUL-terminated bytes (messages for opa_abort). */
  cstring(s: string): number {
    let a = this.cstrings.get(s);
    if (a === undefined) {
      const b = utf8Bytes(s);
      const off = this.reserve(b.length + 1, 1);
      this.buf.set(b, off);
      this.buf[off + b.length] = 0;
      a = this.base + off;
      this.cstrings.set(s, a);
    }
    return a;
  }

  string(s: string): number {
    let a = this.strings.get(s);
    if (a === undefined) {
      const b = utf8Bytes(s);
      const p = b.length > 0 ? this.raw(b) : 0;
      const off = this.reserve(16);
      this.view.setUint32(off, T_STRING, true);
      this.view.setUint32(off + 4, b.length, true);
      this.view.setUint32(off + 8, p, true);
      a = this.base + off;
      this.strings.set(s, a);
    }
    return a;
  }

  null(): number {
    if (!this.nullAddr) {
      const off = this.reserve(8);
      this.buf[off] = T_NULL;
      this.nullAddr = this.base + off;
    }
    return this.nullAddr;
  }

  bool(b: boolean): number {
    if (b && this.trueAddr) return this.trueAddr;
    if (!b && this.falseAddr) return this.falseAddr;
    const off = this.reserve(8);
    this.buf[off] = T_BOOL;
    this.buf[off + 1] = b ? 1 : 0;
    if (b) this.trueAddr = this.base + off;
    else this.falseAddr = this.base + off;
    return this.base + off;
  }

  int(i: bigint | number): number {
    const v = BigInt(i);
    if (v < -(2n ** 63n) || v >= 2n ** 63n) return this.numberText(v.toString());
    const key = `i:${v}`;
    let a = this.numbers.get(key);
    if (a === undefined) {
      const off = this.reserve(24);
      this.view.setUint32(off, T_NUMBER | (K_INT << 8), true);
      this.view.setBigInt64(off + 8, v, true);
      a = this.base + off;
      this.numbers.set(key, a);
    }
    return a;
  }

  /** Number from its literal text (MakeNumberRefStmt); same classification as the runtime's numFromText. */
  numberText(text: string): number {
    if (!NUMBER_TEXT.test(text)) throw new Error(`invalid number literal ${JSON.stringify(text)}`);
    const integral = /^-?[0-9]+$/.test(text);
    const digits = text.startsWith('-') ? text.length - 1 : text.length;
    if (integral && digits <= 18) return this.int(BigInt(text));
    const key = `t:${text}`;
    let a = this.numbers.get(key);
    if (a === undefined) {
      const p = this.raw(utf8Bytes(text));
      const off = this.reserve(24);
      this.view.setUint32(off, T_NUMBER | ((integral ? K_BIG : K_DEC) << 8), true);
      this.view.setUint32(off + 4, text.length, true);
      this.view.setFloat64(off + 8, Number(text), true);
      this.view.setUint32(off + 16, p, true);
      a = this.base + off;
      this.numbers.set(key, a);
    }
    return a;
  }

  /** Immutable static value; objects have string keys (sorted by UTF-8 bytes like the runtime). */
  value(v: StaticValue): number {
    if (v === null) return this.null();
    if (typeof v === 'boolean') return this.bool(v);
    if (typeof v === 'string') return this.string(v);
    if (typeof v === 'bigint') return this.int(v);
    if (typeof v === 'number') {
      if (Number.isInteger(v)) return this.int(v);
      return this.numberText(JSON.stringify(v));
    }
    const keys = Object.keys(v).sort(compareUtf8);
    const pairs = keys.map((k) => [this.string(k), this.value(v[k])] as const);
    const ents = pairs.length > 0 ? this.reserve(pairs.length * 8) : -1;
    pairs.forEach(([k, val], i) => {
      this.view.setUint32(ents + i * 8, k, true);
      this.view.setUint32(ents + i * 8 + 4, val, true);
    });
    const off = this.reserve(16);
    this.view.setUint32(off, T_OBJECT, true);
    this.view.setUint32(off + 4, pairs.length, true);
    this.view.setUint32(off + 8, pairs.length, true);
    this.view.setUint32(off + 12, ents >= 0 ? this.base + ents : 0, true);
    return this.base + off;
  }

  /**
   * Immutable array, set or object from value addresses already in this segment (static-composites.ts):
   * set elements and object entries must come sorted and unique by the runtime's compareValues; `slots` is
   * the elements, or the keys and values alternating. Same layout as rt_array/rt_set/rt_object with cap = len.
   */
  composite(kind: 'array' | 'set' | 'object', slots: number[]): number {
    const len = kind === 'object' ? slots.length / 2 : slots.length;
    const ents = slots.length > 0 ? this.reserve(slots.length * 4) : -1;
    slots.forEach((a, i) => this.view.setUint32(ents + i * 4, a, true));
    const off = this.reserve(16);
    this.view.setUint32(off, kind === 'array' ? T_ARRAY : kind === 'set' ? T_SET : T_OBJECT, true);
    this.view.setUint32(off + 4, len, true);
    this.view.setUint32(off + 8, len, true);
    this.view.setUint32(off + 12, ents >= 0 ? this.base + ents : 0, true);
    return this.base + off;
  }
}
