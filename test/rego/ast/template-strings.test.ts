// Template strings in the parser, as OPA's scanner (scanTemplateString / scanRawTemplateString) and parser
// (parseTemplateString) read them: pieces of text with `\{` escapes, `{expr}` parts, scalar literals kept as
// terms, and OPA's error texts for what a template expression must not be.
import { describe, expect, it } from 'vitest';
import { parseModule, parseQuery } from '../../../src/rego/ast/index.ts';
import type { Term } from '../../../src/rego/ast/index.ts';
import { isExprPart } from '../../../src/rego/ast/types.ts';
import { RegoErrors } from '../../../src/rego/errors.ts';

/** Drop locations (and expression indexes) so structural comparisons stay readable. */
function strip<T>(x: T): T {
  return JSON.parse(JSON.stringify(x, (k, v) => (k === 'location' || k === 'index' ? undefined : v))) as T;
}

/** The value term of `x := <text>` in a module. */
function tmpl(text: string): Term {
  const m = parseModule('p.rego', `package p\nx := ${text}\n`);
  return strip(m.rules[0].head.value as Term);
}

function parseError(text: string, options: { templateStrings?: boolean } = {}): string {
  try {
    parseModule('p.rego', `package p\nx := ${text}\n`, options);
  } catch (e) {
    expect(e).toBeInstanceOf(RegoErrors);
    const err = (e as RegoErrors).errors[0];
    return `${err.location?.row}:${err.location?.col}: ${err.message}`;
  }
  throw new Error('expected a parse error');
}

const ref = (...path: string[]): Term => ({
  type: 'ref',
  value: [{ type: 'var', value: 'input' }, ...path.map((value): Term => ({ type: 'string', value }))],
});
const expr = (term: Term) => ({ negated: false, terms: { type: 'term', term }, with: [] });

describe('template strings: parts', () => {
  it('text, expressions and text', () => {
    expect(tmpl('$"hello {input.name}!"')).toEqual({
      type: 'templatestring',
      multiLine: false,
      parts: [{ type: 'string', value: 'hello ' }, expr(ref('name')), { type: 'string', value: '!' }],
    });
  });

  it('no parts for $"" (empty text is dropped), one for plain text', () => {
    expect(tmpl('$""')).toEqual({ type: 'templatestring', multiLine: false, parts: [] });
    expect(tmpl('$`abc`')).toEqual({
      type: 'templatestring',
      multiLine: true,
      parts: [{ type: 'string', value: 'abc' }],
    });
  });

  it('scalar literals stay terms; other expressions are expressions', () => {
    const t = tmpl('$"{1}{"s"}{true}{null}{[1]}{x}"') as Extract<Term, { type: 'templatestring' }>;
    expect(t.parts.map((p) => ('terms' in p ? `expr:${p.terms.type}` : `term:${p.type}`))).toEqual([
      'term:number',
      'term:string',
      'term:boolean',
      'term:null',
      'expr:term',
      'expr:term',
    ]);
  });

  it('a scalar after a comment in its braces stays an expression; a comment after it does not count', () => {
    // OPA's parseTemplateString compares the comments its scanner holds before and after the `{` is
    // stepped over, so only one between `{` and the expression's first token keeps the expression.
    const before = tmpl('$`{# one\n1}`') as Extract<Term, { type: 'templatestring' }>;
    expect('terms' in before.parts[0]).toBe(true);
    const after = tmpl('$`{1 # one\n}`') as Extract<Term, { type: 'templatestring' }>;
    expect(after.parts).toEqual([{ type: 'number', value: '1' }]);
  });

  it('escapes: \\{ in both forms, JSON escapes in $"..." only', () => {
    expect(tmpl('$"\\{a} \\"b\\" \\u00e9\\n\\\\"')).toEqual({
      type: 'templatestring',
      multiLine: false,
      parts: [{ type: 'string', value: '{a} "b" é\n\\' }],
    });
    expect(tmpl('$`\\{a} \\n "q"`')).toEqual({
      type: 'templatestring',
      multiLine: true,
      parts: [{ type: 'string', value: '{a} \\n "q"' }],
    });
  });

  it('\\} is no escape: kept as written in the raw form, an illegal escape sequence in $"..."', () => {
    // OPA's scanTemplateString / scanRawTemplateString drop the backslash of `\{` only (scanner.go and
    // scanner_test.go as OPA has them now; an earlier test version also had "both braces").
    expect(tmpl('$`foo \\{1 + 2\\} bar`')).toEqual({
      type: 'templatestring',
      multiLine: true,
      parts: [{ type: 'string', value: 'foo {1 + 2\\} bar' }],
    });
    expect(parseError('$"foo \\{1 + 2\\} bar"')).toBe('2:6: illegal escape sequence');
    expect(parseError('$"a {1} \\}"')).toBe('2:13: illegal escape sequence');
  });

  it('`\\u` and the three characters after the u belong to the escape: a { there opens no expression', () => {
    expect(tmpl('$"\\u00e9{1}"')).toEqual({
      type: 'templatestring',
      multiLine: false,
      parts: [
        { type: 'string', value: 'é' },
        { type: 'number', value: '1' },
      ],
    });
    expect(parseError('$"\\u{abc"')).toBe('2:6: illegal template-string part: "\\u{abc"');
  });

  it('text without a backslash is taken as written, control characters included (OPA decodes JSON only with one)', () => {
    expect(tmpl('$"a\tb {1}"')).toEqual({
      type: 'templatestring',
      multiLine: false,
      parts: [
        { type: 'string', value: 'a\tb ' },
        { type: 'number', value: '1' },
      ],
    });
  });

  it('an escaped brace next to an expression: $"\\{{1} + 2}"', () => {
    const t = tmpl('$"\\{{1} + 2}"') as Extract<Term, { type: 'templatestring' }>;
    expect(t.parts).toEqual([
      { type: 'string', value: '{' },
      { type: 'number', value: '1' },
      { type: 'string', value: ' + 2}' },
    ]);
  });

  it('raw strings span lines; rows after them stay right', () => {
    const m = parseModule('p.rego', 'package p\nx := $`a\n{input.y}\nb`\ny := 1\n');
    expect(strip(m.rules[0].head.value)).toEqual({
      type: 'templatestring',
      multiLine: true,
      parts: [{ type: 'string', value: 'a\n' }, expr(ref('y')), { type: 'string', value: '\nb' }],
    });
    expect(m.rules[1].location?.row).toBe(5);
  });

  it('braces of sets, objects and comprehensions inside an expression; nested template strings', () => {
    const t = tmpl('$"{ {"a": {1}} } {[y | y := {2}[_]]} {$"in {input.z}"} end"') as Extract<
      Term,
      { type: 'templatestring' }
    >;
    expect(
      t.parts.map((p) => (!isExprPart(p) ? p.type : p.terms.type === 'term' ? p.terms.term.type : 'expr')),
    ).toEqual(['object', 'string', 'arraycomprehension', 'string', 'templatestring', 'string']);
  });

  it('calls, operators and with modifiers inside expressions', () => {
    const t = tmpl('$"{count(input.xs) + 1} {input.a with input.a as 2}"') as Extract<Term, { type: 'templatestring' }>;
    const [sum, , withExpr] = t.parts;
    expect('terms' in sum && sum.terms.type).toBe('call');
    expect('terms' in withExpr && withExpr.with.length).toBe(1);
  });

  it('in a query', () => {
    const [e] = strip(parseQuery('y := $"v{1}"'));
    expect(e.terms.type === 'call' && e.terms.args[1].type).toBe('templatestring');
  });
});

describe("template strings: what OPA's scanner and parser make of the edges", () => {
  const kinds = (t: Term): string[] =>
    (t as Extract<Term, { type: 'templatestring' }>).parts.map((p) =>
      !isExprPart(p)
        ? `${p.type}:${'value' in p ? String(p.value) : ''}`
        : `expr:${p.terms.type === 'term' ? p.terms.term.type : p.terms.type}`,
    );

  it('a string inside an expression is scanned as a string: its braces and quotes open and close nothing', () => {
    expect(kinds(tmpl('$"a {"}"} {`{`} {concat("", ["{", "}"])} b"'))).toEqual([
      'string:a ',
      'string:}',
      'string: ',
      'string:{',
      'string: ',
      'expr:call',
      'string: b',
    ]);
  });

  it('{{ opens an expression that is a set or an object, and }} closes it and the expression', () => {
    expect(kinds(tmpl('$"{{1}}"'))).toEqual(['expr:set']);
    expect(kinds(tmpl('$"{{"a": {1}}}"'))).toEqual(['expr:object']);
  });

  it('raw templates span lines inside and around expressions, nested ones included', () => {
    expect(kinds(tmpl('$`a\n{$`b\n{input.c}`\n}\nd`'))).toEqual(['string:a\n', 'expr:templatestring', 'string:\nd']);
  });

  it('a $"..." template may break lines inside an expression, and hold comments there', () => {
    const m = parseModule('p.rego', 'package p\nx := $"a {\n  input.y # why\n} b"\ny := 1\n');
    expect(strip(m.rules[0].head.value)).toEqual({
      type: 'templatestring',
      multiLine: false,
      parts: [{ type: 'string', value: 'a ' }, expr(ref('y')), { type: 'string', value: ' b' }],
    });
    expect(m.comments.map((c) => [c.location.row, c.text])).toEqual([[3, ' why']]);
    expect(m.rules[1].location?.row).toBe(5);
  });

  it.each([
    // The `"` after an unclosed expression starts a plain string, which the line end leaves open.
    ['$"a {x"', '2:12: non-terminated string'],
    ['$"a {x} b {y"', '2:18: non-terminated string'],
    ['$`a {x`', '2:12: non-terminated string'],
    ['$"{x} {y z}"', '2:15: expected } to end template string expression'],
  ])('%s', (text, want) => {
    expect(parseError(text)).toBe(want);
  });
});

describe('template strings: errors as OPA words them', () => {
  it.each([
    ['$"{not input.x}"', "2:9: unexpected negation ('not') in template-string expression"],
    ['$"{a = 1}"', "2:9: unexpected unification ('=') in template-string expression"],
    ['$"{a := 1}"', "2:9: unexpected assignment (':=') in template-string expression"],
    ['$"{some a in [1]}"', "2:9: unexpected 'some' in template-string expression"],
    ['$"{every a in [1] { a }}"', "2:9: unexpected 'every' in template-string expression"],
    ['$"{1 2}"', '2:11: expected } to end template string expression'],
    ['$"abc', '2:6: non-terminated string'],
    ['$"a\nb"', '2:6: non-terminated string'],
    ['$`abc', '2:6: non-terminated string'],
    ['$ "a"', '2:6: illegal $ character'],
    ['$x', '2:6: illegal $ character'],
    ['$"\\q"', '2:6: illegal escape sequence'],
    ['$"a\tb\\n\x01"', '2:6: illegal template-string part: "a\tb\\n\x01"'],
  ])('%s', (text, want) => {
    expect(parseError(text)).toBe(want);
  });

  it('without the template_strings capabilities feature', () => {
    expect(parseError('$"a {input.b}"', { templateStrings: false })).toBe(
      '2:6: template strings are not supported by current capabilities',
    );
    expect(() => parseQuery('$"a"', 'q', { templateStrings: false })).toThrow(
      'template strings are not supported by current capabilities',
    );
  });
});
