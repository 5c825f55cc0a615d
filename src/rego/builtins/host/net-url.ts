// Go's net/url.Parse as a check (Go 1.25, with the bracketed-host validation of its October 2025 security
// releases): what it accepts and the parts OPA's JSON-schema format checkers read (scheme, decoded path).
// The reading follows the URL package documentation and RFC 3986 as Go applies them: no control
// characters, a scheme of [A-Za-z][A-Za-z0-9+.-]* before the first ':', `%` always followed by two hex
// digits, a host of reg-name characters (or a bracketed IPv6 address) and a numeric port, userinfo of
// RFC 3986 §3.2.1 characters, and a relative reference whose first segment has no ':'.
import { parseNetipAddr } from './net.ts';

/** The parts of a parsed URL the format checkers use. */
export interface GoUrl {
  /** Lower-cased; empty for a relative reference. */
  scheme: string;
  /** Percent-decoded (each `%XX` one character code); empty for an opaque URL (`mailto:x`). */
  path: string;
}

type Mode = 'path' | 'host' | 'zone' | 'userinfo' | 'fragment';

const isHex = (c: string | undefined): boolean => c !== undefined && /^[0-9A-Fa-f]$/.test(c);
const ALNUM = /^[A-Za-z0-9]$/;

/** Go's shouldEscape(c, encodeHost): the ASCII characters a host may hold unescaped are allowed here. */
function hostAllows(c: string): boolean {
  return ALNUM.test(c) || `!$&'()*+,;=:[]<>"-_.~`.includes(c);
}

/** Go's unescape(s, mode): the decoded text, or undefined for a bad escape or a character a host refuses. */
function unescape(s: string, mode: Mode): string | undefined {
  let out = '';
  for (let i = 0; i < s.length; ) {
    const c = s[i];
    if (c === '%') {
      if (!isHex(s[i + 1]) || !isHex(s[i + 2])) return undefined;
      const byte = Number.parseInt(s.slice(i + 1, i + 3), 16);
      const escaped = s.slice(i, i + 3);
      // In a host %-encoding may only stand for non-ASCII bytes, and %25 for the zone's `%` (RFC 6874).
      if (mode === 'host' && byte < 0x80 && escaped !== '%25') return undefined;
      // A zone may escape only what a host could hold unescaped (or a space, for Windows' zone names).
      const plain = byte < 0x80 && hostAllows(String.fromCharCode(byte));
      if (mode === 'zone' && escaped !== '%25' && byte !== 0x20 && !plain) return undefined;
      out += String.fromCharCode(byte);
      i += 3;
      continue;
    }
    if ((mode === 'host' || mode === 'zone') && c.charCodeAt(0) < 0x80 && !hostAllows(c)) return undefined;
    out += c;
    i++;
  }
  return out;
}

/** `:` and digits only, or nothing. */
const validOptionalPort = (port: string): boolean => /^(:\d*)?$/.test(port);

/** RFC 3986 §3.2.1 userinfo characters (and `@`, which Go lets through for `user:p@ss@host`). */
const validUserinfo = (s: string): boolean => /^[A-Za-z0-9\-._:~!$&'()*+,;=%@]*$/.test(s);

function parseHost(host: string): boolean {
  const open = host.lastIndexOf('[');
  if (open > 0) return false;
  if (open === 0) {
    const close = host.lastIndexOf(']');
    if (close < 0) return false;
    const colonPort = host.slice(close + 1);
    if (!validOptionalPort(colonPort) || unescape(colonPort, 'host') === undefined) return false;
    const name = host.slice(1, close);
    const zoneAt = name.indexOf('%25');
    const unescaped =
      zoneAt >= 0
        ? (() => {
            const h = unescape(name.slice(0, zoneAt), 'host');
            const z = unescape(name.slice(zoneAt), 'zone');
            return h === undefined || z === undefined ? undefined : h + z;
          })()
        : unescape(name, 'host');
    if (unescaped === undefined) return false;
    // Only an IPv6 address may stand in brackets (an IPv4-mapped one included, a plain IPv4 one not).
    const addr = parseNetipAddr(unescaped);
    return addr !== undefined && !addr.is4;
  }
  const colon = host.lastIndexOf(':');
  if (colon !== -1 && !validOptionalPort(host.slice(colon))) return false;
  return unescape(host, 'host') !== undefined;
}

function parseAuthority(authority: string): boolean {
  const at = authority.lastIndexOf('@');
  if (!parseHost(at < 0 ? authority : authority.slice(at + 1))) return false;
  if (at < 0) return true;
  const userinfo = authority.slice(0, at);
  if (!validUserinfo(userinfo)) return false;
  // Username and password (after the first `:`) are unescaped apart; only their escapes can fail.
  const colon = userinfo.indexOf(':');
  const parts = colon < 0 ? [userinfo] : [userinfo.slice(0, colon), userinfo.slice(colon + 1)];
  return parts.every((part) => unescape(part, 'userinfo') !== undefined);
}

/** Go's getScheme: the scheme before the first `:`, none when a character outside a scheme comes first. */
function getScheme(raw: string): { scheme: string; rest: string } | undefined {
  for (let i = 0; i < raw.length; i++) {
    const c = raw[i];
    if (/[A-Za-z]/.test(c)) continue;
    if (/[0-9+\-.]/.test(c)) {
      if (i === 0) return { scheme: '', rest: raw };
      continue;
    }
    if (c === ':') return i === 0 ? undefined : { scheme: raw.slice(0, i), rest: raw.slice(i + 1) };
    return { scheme: '', rest: raw };
  }
  return { scheme: '', rest: raw };
}

/** Go's url.Parse(raw): the scheme and decoded path, or undefined where it returns an error. */
export function parseGoUrl(raw: string): GoUrl | undefined {
  const hash = raw.indexOf('#');
  const u = hash < 0 ? raw : raw.slice(0, hash);
  if (hash >= 0 && unescape(raw.slice(hash + 1), 'fragment') === undefined) return undefined;
  // Control characters (below space, and DEL) are refused anywhere before the fragment.
  if (/[\u0000-\u001f\u007f]/.test(u)) return undefined;
  if (u === '*') return { scheme: '', path: '*' };
  const split = getScheme(u);
  if (!split) return undefined;
  const scheme = split.scheme.toLowerCase();
  let rest = split.rest;
  if (rest.endsWith('?') && rest.indexOf('?') === rest.length - 1) rest = rest.slice(0, -1);
  else if (rest.includes('?')) rest = rest.slice(0, rest.indexOf('?'));
  if (!rest.startsWith('/')) {
    if (scheme !== '') return { scheme, path: '' };
    // A relative reference's first segment cannot hold a colon (RFC 3986 §4.2).
    if (rest.split('/', 1)[0].includes(':')) return undefined;
  }
  if ((scheme !== '' || !rest.startsWith('///')) && rest.startsWith('//')) {
    let authority = rest.slice(2);
    rest = '';
    const slash = authority.indexOf('/');
    if (slash >= 0) {
      rest = authority.slice(slash);
      authority = authority.slice(0, slash);
    }
    if (!parseAuthority(authority)) return undefined;
  }
  const path = unescape(rest, 'path');
  return path === undefined ? undefined : { scheme, path };
}
