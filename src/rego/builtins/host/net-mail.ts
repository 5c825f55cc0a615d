// Go's net/mail.ParseAddress as a check: whether a string is one RFC 5322 address as Go reads it — an
// addr-spec (`local@domain`, a quoted local part, a dot-atom or IP domain literal) with an optional
// parenthesised display name, a `Name <local@domain>` mailbox, or a group holding exactly one of those.
// Go's reading (package documentation): RFC 5322 with RFC 6532's UTF-8, obsolete forms and folding left
// out, the specials ()[]:;@\, allowed unquoted in names; RFC 2047 encoded words in names are decoded, and
// one naming a character set Go cannot decode makes the address invalid.
import { parseNetipAddr } from './net.ts';

class NotAnAddress extends Error {}

const fail = (): never => {
  throw new NotAnAddress();
};

/** RFC 5322 VCHAR, with any non-ASCII character (RFC 6532). */
const isVchar = (r: number): boolean => (r >= 0x21 && r <= 0x7e) || r >= 0x80;
const isWsp = (r: number): boolean => r === 0x20 || r === 0x09;
const isQtext = (r: number): boolean => r !== 0x5c && r !== 0x22 && isVchar(r);
const isDtext = (r: number): boolean => r !== 0x5b && r !== 0x5d && r !== 0x5c && isVchar(r);
/** atext (RFC 5322 §3.2.3), `.` with `dot`. */
function isAtext(r: number, dot: boolean): boolean {
  if (r === 0x2e) return dot;
  if ('()<>[]:;@\\,"'.includes(String.fromCodePoint(r))) return false;
  return isVchar(r);
}

/** A lone surrogate: not valid UTF-8 text, which Go's decoder reports as an error. */
const isBroken = (r: number): boolean => r >= 0xd800 && r <= 0xdfff;

const B64 = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/;

/** Go's RFC 2047 "Q" decoding succeeds: `_`, `=XX` (any-case hex), printable ASCII, tab, CR, LF. */
function qDecodes(s: string): boolean {
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c === 0x3d) {
      if (i + 2 >= s.length || !/^[0-9A-Fa-f]{2}$/.test(s.slice(i + 1, i + 3))) return false;
      i += 2;
    } else if (!(c === 0x5f || (c >= 0x20 && c <= 0x7e) || c === 0x0a || c === 0x0d || c === 0x09)) return false;
  }
  return true;
}

/**
 * Whether `word` is an RFC 2047 encoded word Go's mime.WordDecoder decodes but then fails on for its
 * character set: Go decodes UTF-8, ISO-8859-1 and US-ASCII and reports any other as an error.
 */
function unsupportedCharsetWord(word: string): boolean {
  if (word.length < 8 || !word.startsWith('=?') || !word.endsWith('?=')) return false;
  if ((word.match(/\?/g) ?? []).length !== 4) return false;
  const [charset, encoding, text] = word.slice(2, -2).split('?');
  if (charset === '' || encoding.length !== 1) return false;
  const decodes = /[Bb]/.test(encoding) ? B64.test(text) : /[Qq]/.test(encoding) ? qDecodes(text) : false;
  return decodes && !['utf-8', 'iso-8859-1', 'us-ascii'].includes(charset.toLowerCase());
}

class AddressParser {
  constructor(private s: string) {}

  private empty(): boolean {
    return this.s.length === 0;
  }
  private peek(): string {
    return this.s[0];
  }
  private consume(c: string): boolean {
    if (this.empty() || this.peek() !== c) return false;
    this.s = this.s.slice(1);
    return true;
  }
  private skipSpace(): void {
    this.s = this.s.replace(/^[ \t]+/, '');
  }
  private skipCfws(): boolean {
    this.skipSpace();
    while (this.consume('(')) {
      if (this.comment() === undefined) return false;
      this.skipSpace();
    }
    return true;
  }
  /** A parenthesised comment (the `(` consumed), nesting and `\` escapes kept; undefined when unclosed. */
  private comment(): string | undefined {
    let depth = 1;
    let text = '';
    while (!this.empty() && depth > 0) {
      if (this.peek() === '\\' && this.s.length > 1) this.s = this.s.slice(1);
      else if (this.peek() === '(') depth++;
      else if (this.peek() === ')') depth--;
      if (depth > 0) text += this.s[0];
      this.s = this.s.slice(1);
    }
    return depth === 0 ? text : undefined;
  }

  single(): void {
    const addresses = this.address(true);
    if (!this.skipCfws() || !this.empty() || addresses !== 1) fail();
  }

  /** One address at the start; returns how many mailboxes it held (a group may hold any number). */
  private address(handleGroup: boolean): number {
    this.skipSpace();
    if (this.empty()) fail();
    // addr-spec first, as Go does; a name-addr otherwise.
    if (this.tryAddrSpec()) {
      this.skipSpace();
      if (!this.empty() && this.peek() === '(') this.displayNameComment();
      return 1;
    }
    if (this.peek() !== '<') this.phrase();
    this.skipSpace();
    if (handleGroup && this.consume(':')) return this.groupList();
    if (!this.consume('<')) fail();
    this.addrSpec();
    if (!this.consume('>')) fail();
    return 1;
  }

  private groupList(): number {
    this.skipSpace();
    if (this.consume(';')) {
      if (!this.skipCfws()) fail();
      return 0;
    }
    let n = 0;
    for (;;) {
      this.skipSpace();
      n += this.address(false);
      if (!this.skipCfws()) fail();
      if (this.consume(';')) {
        if (!this.skipCfws()) fail();
        return n;
      }
      if (!this.consume(',')) fail();
    }
  }

  private tryAddrSpec(): boolean {
    const orig = this.s;
    try {
      this.addrSpec();
      return true;
    } catch (e) {
      if (!(e instanceof NotAnAddress)) throw e;
      this.s = orig;
      return false;
    }
  }

  private addrSpec(): void {
    this.skipSpace();
    if (this.empty()) fail();
    if (this.peek() === '"') {
      if (this.quotedString() === '') fail();
    } else this.atom(true, false);
    if (!this.consume('@')) fail();
    this.skipSpace();
    if (this.empty()) fail();
    if (this.peek() === '[') this.domainLiteral();
    else this.atom(true, false);
  }

  /** `1*word`; an error after the first word ends the phrase there (Go ignores it). */
  private phrase(): void {
    let words = 0;
    for (;;) {
      if (words > 0 && !this.skipCfws()) fail();
      this.skipSpace();
      if (this.empty()) return;
      try {
        if (this.peek() === '"') this.quotedString();
        else if (unsupportedCharsetWord(this.atom(true, true))) fail();
      } catch (e) {
        if (!(e instanceof NotAnAddress) || words === 0) throw e;
        return;
      }
      words++;
    }
  }

  private quotedString(): string {
    let i = 1;
    let out = '';
    let escaped = false;
    for (;;) {
      const r = this.s.codePointAt(i);
      if (r === undefined) fail();
      const ch = String.fromCodePoint(r as number);
      const rune = r as number;
      if (isBroken(rune)) fail();
      if (escaped) {
        if (!isVchar(rune) && !isWsp(rune)) fail();
        out += ch;
        escaped = false;
      } else if (isQtext(rune) || isWsp(rune)) out += ch;
      else if (ch === '"') break;
      else if (ch === '\\') escaped = true;
      else fail();
      i += ch.length;
    }
    this.s = this.s.slice(i + 1);
    return out;
  }

  /** A (dot-)atom; unless `permissive`, no leading, trailing or doubled dot. */
  private atom(dot: boolean, permissive: boolean): string {
    let i = 0;
    for (;;) {
      const r = this.s.codePointAt(i);
      if (r !== undefined && isBroken(r)) fail();
      if (r === undefined || !isAtext(r, dot)) break;
      i += r > 0xffff ? 2 : 1;
    }
    if (i === 0) fail();
    const atom = this.s.slice(0, i);
    this.s = this.s.slice(i);
    if (!permissive && (atom.startsWith('.') || atom.includes('..') || atom.endsWith('.'))) fail();
    return atom;
  }

  /** `[dtext]` holding an IPv4 address (or an IPv4-mapped IPv6 one), or `IPv6:` and an IPv6 address. */
  private domainLiteral(): void {
    if (!this.consume('[')) fail();
    let text = '';
    for (;;) {
      if (this.empty()) fail();
      if (this.peek() === ']') break;
      const r = this.s.codePointAt(0) as number;
      if (isBroken(r) || !isDtext(r)) fail();
      const ch = String.fromCodePoint(r);
      text += ch;
      this.s = this.s.slice(ch.length);
    }
    if (!this.consume(']')) fail();
    const v6 = text.startsWith('IPv6:');
    const addr = parseNetipAddr(v6 ? text.slice(5) : text);
    if (addr?.zone !== '') fail();
    const b = (addr as NonNullable<typeof addr>).bytes;
    // Go's IP.To4: an IPv4 address, or IPv6 in the ::ffff:0:0/96 range.
    const v4 = b.slice(0, 10).every((x) => x === 0) && b[10] === 0xff && b[11] === 0xff;
    if (!v6 && !v4) fail();
  }

  /** `(comment)` after an addr-spec: its words decoded as RFC 2047 where they are encoded words. */
  private displayNameComment(): void {
    if (!this.consume('(')) fail();
    const text = this.comment();
    if (text === undefined) fail();
    for (const word of (text as string).split(/[ \t]+/)) if (word !== '' && unsupportedCharsetWord(word)) fail();
  }
}

/** Whether Go's mail.ParseAddress(s) returns an address rather than an error. */
export function isMailAddress(s: string): boolean {
  try {
    new AddressParser(s).single();
    return true;
  } catch (e) {
    if (e instanceof NotAnAddress) return false;
    throw e;
  }
}
