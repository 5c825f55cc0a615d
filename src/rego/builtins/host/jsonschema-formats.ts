// The JSON-schema `format` checkers of OPA's json.match_schema / json.verify_schema: OPA validates with its
// own copy of gojsonschema (internal/gojsonschema, format_checkers.go), whose FormatCheckers know exactly
// these seventeen names. Any other format — duration, idn-hostname, byte, int32 and the rest — passes
// whatever the string, and a value that is not a string passes every format. The checks are gojsonschema's:
// Go's time.Parse layouts, net.ParseIP, net/mail.ParseAddress, net/url.Parse, regexp.Compile (RE2) and its
// regular expressions. The iri and idn-* names reuse the uri and email checkers, as gojsonschema does.
import { parseNetipAddr } from './net.ts';
import { isMailAddress } from './net-mail.ts';
import { parseGoUrl } from './net-url.ts';
import { compileRegex } from './regex.ts';
import { parseTime } from './time.ts';

/** Whether Go's time.Parse(layout, s) succeeds. */
function parses(layout: string, s: string): boolean {
  try {
    parseTime(layout, s);
    return true;
  } catch {
    return false;
  }
}

/** Go's net.ParseIP: an address without a zone. */
const isIp = (s: string): boolean => {
  const a = parseNetipAddr(s);
  return a !== undefined && a.zone === '';
};

/** One label of gojsonschema's hostname expression: 1-63 of [A-Za-z0-9-], not starting or ending with `-`. */
const LABEL = /^[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?$/;

/** gojsonschema's URI-template check: every `{` outside an expression closed by a later `}`. */
function bracesClosed(path: string): boolean {
  for (let i = 0; i < path.length; i++) {
    if (path[i] !== '{') continue;
    const close = path.indexOf('}', i + 1);
    if (close < 0) return false;
    i = close;
  }
  return true;
}

/** JSON pointer text after any leading part: `~` only as `~0` or `~1` (RFC 6901). */
const tildesEscaped = (s: string): boolean => !/~(?![01])/.test(s);

/** gojsonschema's URI checker: url.Parse succeeds with a scheme, and no backslash anywhere. */
const uri = (s: string): boolean => {
  const u = parseGoUrl(s);
  return u !== undefined && u.scheme !== '' && !s.includes('\\');
};
/** Its URI-reference checker: url.Parse succeeds (a relative reference too), and no backslash. */
const uriReference = (s: string): boolean => parseGoUrl(s) !== undefined && !s.includes('\\');

/** gojsonschema's format checkers by format name, applied to string values. */
export const FORMAT_CHECKERS: Readonly<Record<string, (s: string) => boolean>> = {
  date: (s) => parses('2006-01-02', s),
  time: (s) => parses('15:04:05Z07:00', s) || parses('15:04:05', s),
  // Its date-time checker takes a time or a date alone as well as RFC 3339.
  'date-time': (s) =>
    [
      '15:04:05',
      '15:04:05Z07:00',
      '2006-01-02',
      '2006-01-02T15:04:05Z07:00',
      '2006-01-02T15:04:05.999999999Z07:00',
    ].some((layout) => parses(layout, s)),
  hostname: (s) => s.length < 256 && s.split('.').every((label) => LABEL.test(label)),
  email: isMailAddress,
  'idn-email': isMailAddress,
  ipv4: (s) => isIp(s) && s.includes('.'),
  ipv6: (s) => isIp(s) && s.includes(':'),
  uri,
  'uri-reference': uriReference,
  iri: uri,
  'iri-reference': uriReference,
  'uri-template': (s) => {
    const u = parseGoUrl(s);
    return u !== undefined && !s.includes('\\') && bracesClosed(u.path);
  },
  uuid: (s) => /^[a-f0-9]{8}-[a-f0-9]{4}-[a-f0-9]{4}-[a-f0-9]{4}-[a-f0-9]{12}$/i.test(s),
  regex: (s) => {
    if (s === '') return true;
    try {
      compileRegex(s);
      return true;
    } catch {
      return false;
    }
  },
  'json-pointer': (s) => (s === '' || s.startsWith('/')) && tildesEscaped(s),
  'relative-json-pointer': (s) => {
    const m = /^(?:0|[1-9][0-9]*)/.exec(s);
    if (!m) return false;
    const rest = s.slice(m[0].length);
    return rest === '#' || ((rest === '' || rest.startsWith('/')) && tildesEscaped(rest));
  },
};
