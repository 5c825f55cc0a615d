// OPA decodes its JSON files with Go's encoding/json (OPA v1/util/json.go UnmarshalJSON: a Decoder with UseNumber,
// one Decode, then one Token() refusing a second value); src/rego/bundle/go-json.ts gives the same errors. The
// expected texts are Go's: encoding/json scanner.go (`invalid character … looking for beginning of value` and the
// other contexts, quoteChar), stream.go (`EOF`, `unexpected EOF`, tokenError), decode.go (UnmarshalTypeError), and
// OPA's own `error: invalid character '%s' after top-level value` for a token after the value.
import { describe, expect, it } from 'vitest';
import { decodeGoJson, type GoType, isGoJsonValid, parseGoJson } from '../../../src/rego/bundle/go-json.ts';

const bytes = (s: string | number[]): Uint8Array =>
  typeof s === 'string' ? new TextEncoder().encode(s) : new Uint8Array(s);

function errorOf(input: string | number[]): string {
  try {
    parseGoJson(bytes(input));
  } catch (e) {
    return (e as Error).message;
  }
  throw new Error(`expected ${JSON.stringify(input)} to be refused`);
}

describe('parseGoJson: util.UnmarshalJSON', () => {
  it('reads what Go reads, with JSON.parse values', () => {
    expect(parseGoJson(bytes(' {"a": [1, 2.5, {"b": null}], "c": "\\u00e9"}\n'))).toEqual({
      a: [1, 2.5, { b: null }],
      c: 'é',
    });
    expect(parseGoJson(bytes('{"a":1,"a":2}'))).toEqual({ a: 2 });
  });

  it('names the byte the scanner refuses and what it was looking for', () => {
    const cases: [string, string][] = [
      ['{"a":1,}', "invalid character '}' looking for beginning of object key string"],
      ['{"a" 1}', "invalid character '1' after object key"],
      ['{"a":1 "b":2}', `invalid character '"' after object key:value pair`],
      ["{'a':1}", "invalid character '\\'' looking for beginning of object key string"],
      ['{a:1}', "invalid character 'a' looking for beginning of object key string"],
      ['[1,]', "invalid character ']' looking for beginning of value"],
      ['[1 2]', "invalid character '2' after array element"],
      ['[01]', "invalid character '1' after array element"],
      ['{"a": [1, 2}', "invalid character '}' after array element"],
      ['-x', "invalid character 'x' in numeric literal"],
      ['1.x', "invalid character 'x' after decimal point in numeric literal"],
      ['1e+x', "invalid character 'x' in exponent of numeric literal"],
      ['trux', "invalid character 'x' in literal true (expecting 'e')"],
      ['falsy', "invalid character 'y' in literal false (expecting 'e')"],
      ['nulx', "invalid character 'x' in literal null (expecting 'l')"],
      ['"a\\x"', "invalid character 'x' in string escape code"],
      ['"a\\u12g4"', "invalid character 'g' in \\u hexadecimal character escape"],
      ['"a\tb"', "invalid character '\\t' in string literal"],
      ['{"a":NaN}', "invalid character 'N' looking for beginning of value"],
      ['{"a":.5}', "invalid character '.' looking for beginning of value"],
      ['/* c */{}', "invalid character '/' looking for beginning of value"],
      ['\\', "invalid character '\\\\' looking for beginning of value"],
    ];
    for (const [input, message] of cases) expect(errorOf(input), input).toBe(message);
  });

  it("quotes the byte as Go's quoteChar does: escapes for control bytes, the byte as a Latin-1 rune", () => {
    expect(errorOf([0x7b, 0x22, 0x61, 0x22, 0x3a, 0x01, 0x7d])).toBe(
      "invalid character '\\x01' looking for beginning of value",
    );
    expect(errorOf('{"a":\x07}')).toBe("invalid character '\\a' looking for beginning of value");
    expect(errorOf('{"a":\x7f}')).toBe("invalid character '\\x7f' looking for beginning of value");
    // A UTF-8 BOM is not skipped: its first byte 0xEF is the rune ï.
    expect(errorOf([0xef, 0xbb, 0xbf, 0x7b, 0x7d])).toBe("invalid character 'ï' looking for beginning of value");
    // é is C3 A9: the scanner stops at C3, printed as Ã; 0x85 and 0xA0 are not printable runes.
    expect(errorOf('{"a":é}')).toBe("invalid character 'Ã' looking for beginning of value");
    expect(errorOf([0x5b, 0x85, 0x5d])).toBe("invalid character '\\u0085' looking for beginning of value");
    expect(errorOf([0x5b, 0xa0, 0x5d])).toBe("invalid character '\\u00a0' looking for beginning of value");
  });

  it('an empty input is EOF, a value cut short unexpected EOF, nesting past 10000 exceeded max depth', () => {
    expect(errorOf('')).toBe('EOF');
    expect(errorOf(' \n\t')).toBe('EOF');
    for (const cut of ['{', '{"a"', '{"a":', '{"a":1', '[1,', '"abc', 'tru', '-', '1.', '1e+'])
      expect(errorOf(cut), cut).toBe('unexpected EOF');
    expect(errorOf('['.repeat(10001))).toBe("invalid character '[' exceeded max depth");
    expect(errorOf('['.repeat(10000))).toBe('unexpected EOF');
  });

  it("after the value: OPA's one Token() call", () => {
    const cases: [string, string][] = [
      // A value starting with a delimiter is the Delim token, printed with %s.
      ['{"a":1} {"b":2}', "error: invalid character '{' after top-level value"],
      ['{"a":1} [1]', "error: invalid character '[' after top-level value"],
      // A string, number or bool is decoded; %s prints a string as it is, a json.Number as its text.
      ['{"a":1} "x"', "error: invalid character 'x' after top-level value"],
      ['{"a":1} "a\\"b"', `error: invalid character 'a"b' after top-level value`],
      ['{"a":1} -0.5e+3', "error: invalid character '-0.5e+3' after top-level value"],
      ['0123', "error: invalid character '123' after top-level value"],
      ['{"a":1} true', "error: invalid character '%!s(bool=true)' after top-level value"],
      // A closing bracket, `:` or `,` is Token()'s own error at the top level.
      ['{"a":1}}', "invalid character '}' looking for beginning of value"],
      ['[]]', "invalid character ']' looking for beginning of value"],
      ['{"a":1} :', "invalid character ':' looking for beginning of value"],
      // Anything else is the second Decode's error.
      ['{"a":1} x', "invalid character 'x' looking for beginning of value"],
      ['123abc', "invalid character 'a' looking for beginning of value"],
      ['{"a":1} "abc', 'unexpected EOF'],
    ];
    for (const [input, message] of cases) expect(errorOf(input), input).toBe(message);
    // null is a nil token: OPA sees no second value, and reads no further.
    expect(parseGoJson(bytes('{"a":1} null'))).toEqual({ a: 1 });
    expect(parseGoJson(bytes('{"a":1} null xyz'))).toEqual({ a: 1 });
  });

  it('strings as Go decodes them: invalid UTF-8 and lone surrogate escapes become U+FFFD', () => {
    expect(parseGoJson(bytes([0x7b, 0x22, 0x61, 0x22, 0x3a, 0x22, 0xe2, 0x82, 0x41, 0x22, 0x7d]))).toEqual({
      a: '\ufffd\ufffdA',
    });
    expect(parseGoJson(bytes('{"a":"\\ud800", "\\udc00":"\\ud83d\\ude00"}'))).toEqual({
      a: '\ufffd',
      '\ufffd': '😀',
    });
  });

  it('isGoJsonValid is json.Valid: one value and nothing after it', () => {
    expect(isGoJsonValid(bytes(' {"a": 1}\n'))).toBe(true);
    expect(isGoJsonValid(bytes('{"a": 1} x'))).toBe(false);
    expect(isGoJsonValid(bytes('{"a": 1} null'))).toBe(false);
    expect(isGoJsonValid(bytes(''))).toBe(false);
  });
});

describe('decodeGoJson: a Decode into a Go struct', () => {
  const point: GoType = {
    kind: 'struct',
    pkg: 'geo',
    name: 'Point',
    fields: [
      { name: 'label', type: { kind: 'string' } },
      { name: 'tags', type: { kind: 'pointer', elem: { kind: 'slice', elem: { kind: 'string' } } } },
      { name: 'n', type: { kind: 'int' } },
      { name: 'extra', type: { kind: 'map', elem: { kind: 'any' } } },
    ],
  };
  const decodeError = (input: string): string => {
    try {
      decodeGoJson(bytes(input), point);
    } catch (e) {
      return (e as Error).message;
    }
    throw new Error(`expected ${input} to be refused`);
  };

  it("reports the first type error with Go's struct, field path and type", () => {
    expect(decodeError('{"tags": "a"}')).toBe(
      'json: cannot unmarshal string into Go struct field Point.tags of type []string',
    );
    expect(decodeError('{"tags": [1]}')).toBe(
      'json: cannot unmarshal number into Go struct field Point.tags of type string',
    );
    expect(decodeError('{"n": 1.5}')).toBe(
      'json: cannot unmarshal number 1.5 into Go struct field Point.n of type int',
    );
    expect(decodeError('{"extra": []}')).toBe(
      'json: cannot unmarshal array into Go struct field Point.extra of type map[string]interface {}',
    );
    expect(decodeError('{"label": 1, "n": "x"}')).toBe(
      'json: cannot unmarshal number into Go struct field Point.label of type string',
    );
    expect(decodeError('["x"]')).toBe('json: cannot unmarshal array into Go value of type geo.Point');
    expect(decodeError('')).toBe('EOF');
  });

  it('matches keys exactly, else ignoring case; skips unknown keys and what follows the value', () => {
    expect(decodeGoJson(bytes('{"LABEL": "x", "other": [1], "n": 2} trailing'), point)).toEqual({ label: 'x', n: 2 });
    expect(decodeGoJson(bytes('null'), point)).toBeUndefined();
    // A second Decode into the same value keeps the map entries it has (Go reuses the map).
    const first = decodeGoJson(bytes('{"extra": {"a": 1}}'), point);
    expect(decodeGoJson(bytes('{"extra": {"b": 2}}'), point, first)).toEqual({ extra: { a: 1, b: 2 } });
  });
});
