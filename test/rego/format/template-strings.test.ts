// `guardian policy fmt` on template strings, as opa fmt's writeTemplateString writes them (v1/format): text
// re-escaped (`{` as `\{`, in `$"..."` with Go's string quoting), each expression formatted inside its braces,
// and a scalar literal the parser kept as a term written inline without braces. The layout cases are in
// cases/template_strings.rego and (comments inside expressions, their indentation) in
// cases/template_strings_comments.rego; here: the inline scalars, and that output formats to itself and
// evaluates to what the input did.
import { describe, expect, it } from 'vitest';
import { formatSource } from '../../../src/rego/format/index.ts';
import { evaluateQuery } from '../../../src/rego/index.ts';

const fmt = (body: string): string => formatSource('t.rego', `package t\n\n${body}\n`).split('\n\n')[1].trim();

describe('opa fmt of template strings', () => {
  it('scalar literals are written inline (their value is the same text)', () => {
    expect(fmt('x := $"n={1} f={1.50} b={ true } z={null} s={ "a{b" }"')).toBe(
      'x := $"n=1 f=1.50 b=true z=null s=a\\{b"',
    );
  });

  it('text is re-escaped: braces, quotes, control characters; raw text keeps newlines', () => {
    expect(fmt('x := $"\\{a} \\"q\\" \\t \\u0001"')).toBe('x := $"\\{a} \\"q\\" \\t \\x01"');
    // Text without a backslash is taken as written, a control character too; it is written escaped.
    expect(fmt('x := $"a\x02b{1}"')).toBe('x := $"a\\x02b1"');
    expect(fmt('x := $`a\n\\{b}\n"c"`')).toBe('x := $`a\n\\{b}\n"c"`');
    // A raw template keeps `\}` as written (OPA's scanner drops the backslash of `\{` only).
    expect(fmt('x := $`\\{a\\}`')).toBe('x := $`\\{a\\}`');
  });

  it('a comment after a scalar does not keep it an expression: the scalar goes inline, the comment to the line end', () => {
    expect(fmt('x := $"{1 # one\n}"')).toBe('x := $"1" # one');
    expect(fmt('x := $"{# one\n1}"')).toBe('x := $"{ # one\n\t1}"');
  });

  it('expressions are formatted as terms are elsewhere', () => {
    expect(fmt('x := $"{ input.a+1 } {  [ 1,2 ] } {{ "k" :1}} {f( 1 )}"')).toBe(
      'x := $"{input.a + 1} {[1, 2]} {{"k": 1}} {f(1)}"',
    );
    expect(fmt('x := $"{input.a == 1}"')).toBe('x := $"{input.a == 1}"');
    expect(fmt('x := $""')).toBe('x := $""');
  });

  const policy = `package t

import rego.v1

f(x) := $"f({ x })"

p := [$"{ i }:{v} {1}" | some i, v in input.xs]

q := $\`raw
{  f(input.name)  } \\{literal} { {"a": [1, 2]} }\`

r contains $"deny {x}" if some x in input.xs

s := $"{input.missing} {  input.name  } \\"quoted\\""
`;

  it('formats to a fixed point whose evaluation is unchanged', async () => {
    const once = formatSource('t.rego', policy);
    expect(formatSource('t.rego', once)).toBe(once);
    const evaluate = (text: string) =>
      evaluateQuery({
        sources: [{ file: 't.rego', text }],
        query: 'x := data.t',
        input: { xs: ['a', 'b'], name: 'n' },
      });
    const [before, after] = await Promise.all([evaluate(policy), evaluate(once)]);
    expect(after).toEqual(before);
    expect(before).toEqual([
      {
        x: {
          p: ['0:a 1', '1:b 1'],
          q: 'raw\nf(n) {literal} {"a": [1, 2]}',
          r: ['deny a', 'deny b'],
          s: '<undefined> n "quoted"',
        },
      },
    ]);
  });
});
