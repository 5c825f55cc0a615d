// JSON-schema `format` in json.match_schema / json.verify_schema, compiled by our compiler and evaluated by
// opa-wasm calling the host implementations. OPA checks formats with its gojsonschema copy
// (internal/gojsonschema/format_checkers.go): seventeen names, each on Go's own parser — time.Parse layouts,
// net.ParseIP, net/mail.ParseAddress, net/url.Parse, regexp.Compile — and every other format passes. The
// expected verdicts are worked out by hand from those Go functions' documented rules.
import { beforeAll, describe, expect, it } from 'vitest';
import { FORMAT_CHECKERS } from '../../../src/rego/builtins/host/jsonschema-formats.ts';
import { compileBundle, evaluateEntrypoint, loadBundle } from '../../../src/rego/index.ts';

// A string operand of json.match_schema is JSON text (OPA's astValueToJSONSchemaLoader): the documents go
// in marshalled, so a string is the value checked.
const POLICY = `package fmts

verdicts := [ok |
	some c in input.cases
	[ok, _] := json.match_schema(json.marshal(c.value), {"format": c.format})
]

match := json.match_schema(json.marshal(input.doc), input.schema)

verify := json.verify_schema(input.schema)
`;

let ev: (ep: string, input: unknown) => unknown;

beforeAll(async () => {
  const built = await compileBundle({
    sources: [{ file: 'fmts.rego', text: POLICY }],
    entrypoints: ['fmts/verdicts', 'fmts/match', 'fmts/verify'],
  });
  const loaded = await loadBundle(built.bundle);
  ev = (ep, input) => {
    const rs = evaluateEntrypoint(loaded, ep, input) as { result: unknown }[];
    return rs.length ? rs[0].result : undefined;
  };
}, 120_000);

const labels = (...sizes: number[]): string => sizes.map((n) => 'a'.repeat(n)).join('.');

/** Per format: strings gojsonschema accepts, then strings it rejects. */
const CASES: Record<string, [accept: string[], reject: string[]]> = {
  // time.Parse("2006-01-02"): four-digit year, two-digit month and day, the day within its month.
  date: [
    ['2024-02-29', '0000-02-29', '9999-12-31', '2023-12-01'],
    [
      '2023-02-29',
      '2024-13-01',
      '2024-00-10',
      '2024-01-00',
      '2024-1-01',
      '2024-01-1',
      '24-01-01',
      '2024-01-01T00:00:00Z',
      ' 2024-01-01',
    ],
  ],
  // "15:04:05Z07:00" or "15:04:05": a one- or two-digit hour, any fraction after the seconds (`.` or `,`),
  // no leap second, an offset hour up to 24 and minute up to 60 (Go tests those with >).
  time: [
    [
      '23:59:59',
      '1:02:03',
      '12:00:00.5',
      '12:00:00,123',
      '12:00:00Z',
      '12:00:00+24:00',
      '12:00:00+01:60',
      '12:00:00-05:30',
      '00:00:00.123456789123Z',
    ],
    [
      '24:00:00',
      '12:60:00',
      '12:00:60',
      '12:00',
      '12:00:00+25:00',
      '12:00:00+01:61',
      '12:00:00z',
      '12:00:00+0100',
      '12:0:00',
      '12:00:00.',
      'T12:00:00Z',
    ],
  ],
  // A time or a date alone, or RFC 3339 (time.RFC3339 / RFC3339Nano layouts, parsed as leniently as above).
  'date-time': [
    [
      '2024-01-02T03:04:05Z',
      '2024-01-02T03:04:05.123+01:00',
      '2024-01-02T03:04:05,5Z',
      '2024-01-02',
      '03:04:05',
      '03:04:05+01:00',
      '2024-01-02T3:04:05Z',
    ],
    [
      '2024-01-02t03:04:05Z',
      '2024-01-02T03:04:05',
      '2024-01-02 03:04:05Z',
      '2024-02-30T00:00:00Z',
      '2024-01-02T03:04:05+0100',
      '2024-01-02T03:04:60Z',
    ],
  ],
  // ASCII labels of 1-63 letters, digits and inner hyphens; fewer than 256 characters in all.
  hostname: [
    ['example.com', 'a', 'a-b.c0', '1.2.3.4', labels(63), labels(63, 63, 63, 63)],
    ['ex_ample.com', '-a.com', 'a-.com', 'a..b', 'a.', '', labels(64), 'exämple.com', labels(63, 63, 63, 62, 1)],
  ],
  // mail.ParseAddress: one address, with a display name or a group of one; UTF-8 allowed (RFC 6532).
  email: [
    [
      'user@example.com',
      'John Doe <john@example.com>',
      '"quoted local"@example.com',
      '"a\\"b"@c',
      'a@[127.0.0.1]',
      'a@[IPv6:::1]',
      'a@[IPv6:1.2.3.4]',
      'a@[::ffff:1.2.3.4]',
      'user@localhost',
      'üser@exämple.com',
      'a@b (comment)',
      'group: a@b;',
      '=?utf-8?q?J=C3=B6rg?= <j@example.com>',
      // An encoded word in a character set Go cannot decode ends the name there, after the first word.
      'Jörg =?x-unknown?q?n?= <j@example.com>',
    ],
    [
      'plainaddress',
      'a@',
      '@b',
      'a..b@c',
      '.a@b',
      'a.@b',
      'a@b..c',
      'a@[300.1.1.1]',
      'a@[::1]',
      'A <a@b',
      'a@b, c@d',
      '=?x-unknown?q?name?= <a@b>',
      'a@b (unclosed',
      'g: a@b, c@d;',
      'g: ;',
      '<a@b> trailing',
    ],
  ],
  // net.ParseIP and a `.` (ipv4) or a `:` (ipv6): an IPv4-mapped IPv6 address has both; no zones.
  ipv4: [
    ['192.168.0.1', '0.0.0.0', '::ffff:1.2.3.4'],
    ['256.1.1.1', '01.2.3.4', '1.2.3', '1.2.3.4.5', '::1', '1.2.3.4%eth0', ' 1.2.3.4'],
  ],
  ipv6: [
    ['::1', '2001:db8::1', '::ffff:1.2.3.4', '1:2:3:4:5:6:7:8', '0001:2::3', '::', '1::'],
    [
      '1.2.3.4',
      'fe80::1%eth0',
      '1:2:3:4:5:6:7:8:9',
      '1::2::3',
      '12345::',
      ':1',
      '1:2:3:4:5:6:7:8::',
      '::ffff:01.2.3.4',
    ],
  ],
  // url.Parse with a scheme and no backslash; an opaque part (`x:%zz`) and the path's spaces go unchecked.
  uri: [
    [
      'https://example.com/a?b#c',
      'mailto:user@example.com',
      'urn:isbn:0451450523',
      'http://[::1]:80/',
      'http://ex%C3%A4mple.com/',
      'https://exämple.com/päth',
      'x:%zz',
      'http://example.com/a b',
      'file:///etc/hosts',
      'http://user:p@ss@host/',
    ],
    [
      '/relative/path',
      'example.com',
      'http://exa mple.com',
      'http://example.com:abc/',
      'http://[1.2.3.4]/',
      'http://example.com/%zz',
      'http://a\\b.com',
      ':nope',
      'http://exa%41mple.com',
      'http://[::1',
      'http://example.com/#%zz',
      'http://ex\u0001ample.com',
    ],
  ],
  // url.Parse alone: relative references too, but a first segment with a colon reads as a bad scheme.
  'uri-reference': [
    ['/relative/path', '', '#frag', '../a', 'a/b:c', '//host/path', '?q', 'a:b', '*'],
    ['a b:c', '1a:b', '%zz', 'a\\b', '/a%2', ':', '//exa mple/'],
  ],
  iri: [['https://例え.jp/パス'], ['パス', 'http://exa mple.jp']],
  'iri-reference': [
    ['パス', 'https://例え.jp/パス'],
    ['a b:c', '%zz'],
  ],
  // url.Parse, then every `{` of the decoded path closed by a later `}`.
  'uri-template': [
    [
      'http://example.com/{id}',
      '/a/{b}/{c}',
      'http://example.com/%7Bid%7D',
      'http://example.com/}',
      '{a}',
      'http://e.com/?q={x',
    ],
    ['http://example.com/{id', 'http://example.com/%7Bid', 'http://exa{mple.com/', 'http://e.com/{a\\}'],
  ],
  uuid: [
    ['123e4567-e89b-12d3-a456-426614174000', '123E4567-E89B-12D3-A456-426614174000'],
    [
      '123e4567e89b12d3a456426614174000',
      '123e4567-e89b-12d3-a456-42661417400g',
      '{123e4567-e89b-12d3-a456-426614174000}',
    ],
  ],
  // regexp.Compile: RE2 syntax (no backreferences, no lookaround); the empty string passes.
  regex: [
    ['', '^a+$', '(?i)abc', '\\d{2,3}', '[[:alpha:]]', '\\pL'],
    ['(', '\\1', '(?=x)', 'a**', '[z-a]'],
  ],
  'json-pointer': [
    ['', '/', '/a~0b/c~1d', '/a/0', '/~01'],
    ['a', '/a~2', '/~', '#/a'],
  ],
  'relative-json-pointer': [
    ['0', '1/a', '2#', '10/a~1b', '0/'],
    ['01', '-1', '#', '1#/a', '', '1a', '1/~'],
  ],
};

describe('json.match_schema formats: gojsonschema accepts and rejects the same strings', () => {
  it("checks exactly gojsonschema's seventeen format names, each with cases here", () => {
    // FormatCheckers in OPA's internal/gojsonschema/format_checkers.go.
    const opa = ['date', 'time', 'date-time', 'hostname', 'email', 'idn-email', 'ipv4', 'ipv6', 'uri'];
    opa.push('uri-reference', 'iri', 'iri-reference', 'uri-template', 'uuid', 'regex', 'json-pointer');
    opa.push('relative-json-pointer');
    expect(Object.keys(FORMAT_CHECKERS).sort()).toEqual([...opa].sort());
    expect(Object.keys(CASES).concat('idn-email').sort()).toEqual([...opa].sort());
  });

  it.each(Object.entries(CASES))('%s', (format, [accept, reject]) => {
    const cases = [...accept, ...reject].map((value) => ({ value, format }));
    const want = [...accept.map(() => true), ...reject.map(() => false)];
    const got = ev('fmts/verdicts', { cases }) as boolean[];
    expect(Object.fromEntries(cases.map((c, i) => [c.value, got[i]]))).toEqual(
      Object.fromEntries(cases.map((c, i) => [c.value, want[i]])),
    );
  });

  it('idn-email is the email checker; idn-hostname is no format gojsonschema knows', () => {
    const values = ['user@example.com', 'üser@exämple.com', 'plainaddress', 'a@b, c@d'];
    expect(ev('fmts/verdicts', { cases: values.map((value) => ({ value, format: 'idn-email' })) })).toEqual([
      true,
      true,
      false,
      false,
    ]);
    const hosts = ['example.com', '-not-a-host-', 'exa mple', ''];
    expect(ev('fmts/verdicts', { cases: hosts.map((value) => ({ value, format: 'idn-hostname' })) })).toEqual([
      true,
      true,
      true,
      true,
    ]);
  });

  it('formats OPA does not check pass any string (ajv-formats would reject these)', () => {
    const unchecked: [string, string][] = [
      ['duration', 'not a duration'],
      ['url', 'not a url'],
      ['byte', '!!'],
      ['int32', 'x'],
      ['int64', '1e99'],
      ['float', 'x'],
      ['double', 'x'],
      ['iso-time', 'x'],
      ['iso-date-time', 'x'],
      ['json-pointer-uri-fragment', 'x'],
      ['binary', 'x'],
      ['password', ''],
      ['no-such-format', 'x'],
    ];
    const cases = unchecked.map(([format, value]) => ({ format, value }));
    expect(ev('fmts/verdicts', { cases })).toEqual(unchecked.map(() => true));
  });

  it('a value that is not a string passes every format', () => {
    const cases = [5, true, null, [1], { a: 1 }].map((value) => ({ value, format: 'email' }));
    expect(ev('fmts/verdicts', { cases })).toEqual([true, true, true, true, true]);
  });

  it("a failed format is gojsonschema's format error: Does not match format '<name>'", () => {
    expect(ev('fmts/match', { doc: 'a b:c', schema: { format: 'iri-reference' } })).toEqual([
      false,
      [
        {
          error: "(Root): Does not match format 'iri-reference'",
          type: 'format',
          field: '(Root)',
          desc: "Does not match format 'iri-reference'",
        },
      ],
    ]);
    const schema = { properties: { contact: { type: 'object', properties: { mail: { format: 'idn-email' } } } } };
    expect(ev('fmts/match', { doc: { contact: { mail: 'nobody' } }, schema })).toEqual([
      false,
      [
        {
          error: "contact.mail: Does not match format 'idn-email'",
          type: 'format',
          field: 'contact.mail',
          desc: "Does not match format 'idn-email'",
        },
      ],
    ]);
  });

  it('a schema naming any format is valid for json.verify_schema', () => {
    for (const format of ['iri', 'idn-hostname', 'no-such-format'])
      expect(ev('fmts/verify', { schema: { type: 'string', format } })).toEqual([true, null]);
  });
});
