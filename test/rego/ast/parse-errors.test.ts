// Which parse errors a module gets, how many and in which order, as OPA reports them: its Parse loop stops at
// the first statement that fails (ast/parser.go), with every error recorded in that statement; a module that
// parses is then checked as a whole, every error collected (parseModule in ast/parser_ext.go, checkRegoV1Rule
// in ast/rego_v1.go). The texts, locations and detail lines are OPA's (its source and parser tests).
import { describe, expect, it } from 'vitest';
import { parseModule } from '../../../src/rego/ast/index.ts';
import { RegoErrors } from '../../../src/rego/errors.ts';

/** Every error of parsing `text` as p.rego, formatted (`file:row:col: code: message` and the detail lines). */
function errorsOf(text: string, regoVersion: 0 | 1 = 1): string[] {
  try {
    parseModule('p.rego', text, { regoVersion });
  } catch (e) {
    if (!(e instanceof RegoErrors)) throw e;
    return e.errors.map((x) => x.format());
  }
  throw new Error('expected parse errors');
}

/** The first line of each error. */
const messagesOf = (text: string, regoVersion: 0 | 1 = 1): string[] =>
  errorsOf(text, regoVersion).map((e) => e.split('\n')[0]);

describe('a module that parses: every rule is checked, every error reported', () => {
  it('a Rego v0 module read as v1 gets one error per missing keyword, in rule order, without source lines', () => {
    const src = [
      'package p',
      '',
      'allow {',
      '\tinput.admin',
      '}',
      '',
      'deny[msg] {',
      '\tmsg := "no"',
      '}',
      '',
      'f(x) {',
      '\tx > 1',
      '}',
      '',
      'g(x) = y {',
      '\ty := x',
      '} else = 0 {',
      '\ttrue',
      '}',
      '',
    ].join('\n');
    const want = [
      'p.rego:3:1: rego_parse_error: `if` keyword is required before rule body',
      'p.rego:7:1: rego_parse_error: `if` keyword is required before rule body',
      'p.rego:7:1: rego_parse_error: `contains` keyword is required for partial set rules',
      'p.rego:11:1: rego_parse_error: `if` keyword is required before function body',
      'p.rego:15:1: rego_parse_error: `if` keyword is required before function body',
      'p.rego:17:3: rego_parse_error: `if` keyword is required before function body',
    ];
    expect(errorsOf(src)).toEqual(want);
    expect(() => parseModule('p.rego', src)).toThrow(`6 errors occurred:\n${want.join('\n')}`);
  });

  it('chained bodies are rules of their own, each checked', () => {
    expect(messagesOf('package p\np { input.a } { input.b }')).toEqual([
      'p.rego:2:1: rego_parse_error: `if` keyword is required before rule body',
      'p.rego:2:15: rego_parse_error: `if` keyword is required before rule body',
    ]);
  });

  it('statement errors come first in statement order, then the Rego v1 checks (parseModule)', () => {
    expect(errorsOf('package p\n"a"\npackage q\nx.y.z\nnot input.x\n')).toEqual([
      'p.rego:2:1: rego_parse_error: string cannot be used for rule name',
      'p.rego:3:1: rego_parse_error: unexpected package',
      'p.rego:5:1: rego_parse_error: negated expressions cannot be used for rule head',
      'p.rego:4:1: rego_parse_error: rule must have value assignment and/or body declaration',
    ]);
  });

  it('without a package the first statement gives only "package expected"; the others are still checked', () => {
    expect(errorsOf('p { true }\nq { true }\n')).toEqual([
      'p.rego:1:1: rego_parse_error: package expected',
      'p.rego:2:1: rego_parse_error: `if` keyword is required before rule body',
    ]);
  });

  it('a module with no statement is empty', () => {
    expect(errorsOf('')).toEqual(['p.rego:0:0: rego_parse_error: empty module']);
    expect(errorsOf('# only a comment\n')).toEqual(['p.rego:0:0: rego_parse_error: empty module']);
  });

  it('statements that are no rules: each is named (ParseRuleFromExpr)', () => {
    expect(
      messagesOf('package p\np\n1 == 2\ncount(x)\nsome x\nevery x in [1] { x }\n{}\nf()\na := 1; b := 2\ninput'),
    ).toEqual([
      'p.rego:2:1: rego_parse_error: var cannot be used for rule name',
      'p.rego:3:1: rego_parse_error: rule name conflicts with built-in function',
      'p.rego:4:1: rego_parse_error: rule name conflicts with built-in function',
      "p.rego:5:1: rego_parse_error: 'some' declarations cannot be used for rule head",
      'p.rego:6:1: rego_parse_error: expression cannot be used for rule head',
      'p.rego:7:1: rego_parse_error: object cannot be used for rule name',
      'p.rego:8:1: rego_parse_error: rule argument list must take at least one argument',
      'p.rego:9:1: rego_parse_error: multiple expressions cannot be used for rule head',
      'p.rego:10:1: rego_parse_error: refs cannot be used for rule head',
    ]);
  });

  it('an operator right after a rule name is a syntax error; with a space the statement is a builtin call', () => {
    expect(messagesOf('package p\np==1\nq := 1')).toEqual(['p.rego:2:2: rego_parse_error: unexpected equal token']);
    expect(messagesOf('package p\np == 1\nf(x) == 1\n')).toEqual([
      'p.rego:2:1: rego_parse_error: rule name conflicts with built-in function',
      'p.rego:3:1: rego_parse_error: rule name conflicts with built-in function',
    ]);
  });

  it('in Rego v0 the keywords are names: `p contains 1 if …` is three statements naming no rule', () => {
    expect(messagesOf('package p\np contains 1 if { true }\n', 0)).toEqual([
      'p.rego:2:1: rego_parse_error: var cannot be used for rule name',
      'p.rego:2:3: rego_parse_error: var cannot be used for rule name',
      'p.rego:2:12: rego_parse_error: number cannot be used for rule name',
    ]);
  });

  it('statements need no line break between them', () => {
    const m = parseModule('p.rego', 'package p\na := 1 b := 2');
    expect(m.rules.map((r) => r.head.reference[0])).toMatchObject([{ value: 'a' }, { value: 'b' }]);
  });
});

describe('the parse stops at the first statement that fails', () => {
  it('nothing after it is read, and the module is not checked', () => {
    expect(errorsOf('package p\nallow { true }\nq if { x := }\nr if { ] }\n')).toEqual([
      'p.rego:3:13: rego_parse_error: unexpected } token\n\tq if { x := }\n\t            ^',
    ]);
  });

  it('a value that does not parse: its error, then the head’s (OPA parser tests)', () => {
    expect(errorsOf('package p\ndefault f :=')).toEqual([
      'p.rego:2:12: rego_parse_error: unexpected eof token\n\tdefault f :=\n\t           ^',
      'p.rego:2:12: rego_parse_error: unexpected eof token: expected default rule value term (e.g., default f := <VALUE>)\n\tdefault f :=\n\t           ^',
    ]);
    expect(messagesOf('package p\nf := { "foo" = "bar" }')).toEqual([
      'p.rego:2:14: rego_parse_error: unexpected eq token: non-terminated set',
      'p.rego:2:14: rego_parse_error: unexpected eq token: expected rule value term (e.g., f := <VALUE> { ... })',
    ]);
    expect(messagesOf('package p\nf(_) := { "foo" = "bar" }')[1]).toBe(
      'p.rego:2:17: rego_parse_error: unexpected eq token: expected function value term (e.g., f(...) := <VALUE> { ... })',
    );
    expect(messagesOf('package p\nf[_] := { "foo" = "bar" }')[1]).toBe(
      'p.rego:2:17: rego_parse_error: unexpected eq token: expected rule value term (e.g., f[_] := <VALUE> { ... })',
    );
    // With `=` OPA's example prints the head's key, which parseHead has not set: Go prints a nil term as <nil>.
    expect(messagesOf('package p\np =')).toEqual([
      'p.rego:2:3: rego_parse_error: unexpected eof token',
      'p.rego:2:3: rego_parse_error: unexpected eof token: expected rule value term (e.g., p[<nil>] = <VALUE> { ... })',
    ]);
    expect(messagesOf('package p\np contains if { true }')).toEqual([
      'p.rego:2:12: rego_parse_error: unexpected if keyword',
      'p.rego:2:12: rego_parse_error: unexpected if keyword: expected rule key term (e.g., p contains <VALUE> { ... })',
    ]);
  });

  it('a right operand that does not parse leaves OPA the left one: no error about the value', () => {
    expect(messagesOf('package p\nx := 1 + }')).toEqual(['p.rego:2:10: rego_parse_error: unexpected } token']);
    expect(messagesOf('package p\nx := [1 + ]')).toEqual(['p.rego:2:11: rego_parse_error: unexpected ] token']);
  });

  it('an error OPA records without giving up on the statement ends the parse after it', () => {
    expect(messagesOf('package p\nf(a) contains x if { x := a }\nq { true }')).toEqual([
      'p.rego:2:6: rego_parse_error: unexpected contains keyword: the contains keyword can only be used with multi-value rule definitions (e.g., f contains <VALUE> { ... })',
    ]);
    expect(messagesOf('package p\np if { input.x with f(x) as 1 }')).toEqual([
      'p.rego:2:26: rego_parse_error: unexpected as keyword: expected with target path',
    ]);
    expect(messagesOf('package p\np if { input.x with 1 as 2 }')).toEqual([
      'p.rego:2:21: rego_parse_error: unexpected number token: expected ident',
    ]);
  });

  it('detail lines: the line without its leading tabs, the caret counted in bytes', () => {
    expect(errorsOf('package p\np if {\n\tx := ]\n}\n')).toEqual([
      'p.rego:3:7: rego_parse_error: unexpected ] token\n\tx := ]\n\t     ^',
    ]);
    expect(errorsOf('package p\np if {\n\t"é" == ]\n}\n')).toEqual([
      'p.rego:3:9: rego_parse_error: unexpected ] token\n\t"é" == ]\n\t        ^',
    ]);
  });
});

describe('default rules', () => {
  it('a default rule has no body: `if` after it starts a statement of its own', () => {
    expect(errorsOf('package p\ndefault allow if true')).toEqual([
      'p.rego:2:15: rego_parse_error: unexpected if keyword\n\tdefault allow if true\n\t              ^',
    ]);
    expect(messagesOf('package p\ndefault allow if { input.x }')).toEqual([
      'p.rego:2:15: rego_parse_error: unexpected if keyword',
    ]);
    expect(messagesOf('package p\ndefault allow := false if { input.x }')).toEqual([
      'p.rego:2:24: rego_parse_error: unexpected if keyword',
    ]);
    // A `{ … }` after it is a statement too, a set that names no rule.
    expect(messagesOf('package p\ndefault allow := false { input.x }')).toEqual([
      'p.rego:2:24: rego_parse_error: set cannot be used for rule name',
    ]);
  });

  it('`default allow` has the value true; `default a[0]` and `default p contains x` have none', () => {
    const [r] = parseModule('p.rego', 'package p\ndefault allow').rules;
    expect(r.default).toBe(true);
    expect(r.head.value).toMatchObject({ type: 'boolean', value: true });
    expect(errorsOf('package p\ndefault a[0]')).toEqual([
      'p.rego:2:1: rego_parse_error: illegal default rule (must have a value)\n\tdefault a[0]\n\t^',
    ]);
    expect(messagesOf('package p\ndefault p contains "x"')).toEqual([
      'p.rego:2:1: rego_parse_error: illegal default rule (must have a value)',
    ]);
  });

  it('every var, ref and call in the value is an error of its own; comprehensions are allowed', () => {
    expect(messagesOf('package p\ndefault p := [a, b.c, f(x), [y | y := 1]]')).toEqual([
      'p.rego:2:1: rego_parse_error: illegal default rule (value cannot contain var)',
      'p.rego:2:1: rego_parse_error: illegal default rule (value cannot contain ref)',
      'p.rego:2:1: rego_parse_error: illegal default rule (value cannot contain call)',
    ]);
    expect(parseModule('p.rego', 'package p\ndefault p := [y | y := 1]').rules).toHaveLength(1);
  });

  it('arguments must be distinct vars, each offence reported; they are checked once the value is valid', () => {
    expect(messagesOf('package p\ndefault f(x, x) := 1')).toEqual([
      'p.rego:2:1: rego_parse_error: illegal default rule (arguments cannot be repeated x)',
    ]);
    expect(messagesOf('package p\ndefault f(1, [y]) := 1')).toEqual([
      'p.rego:2:1: rego_parse_error: illegal default rule (arguments cannot contain number)',
      'p.rego:2:1: rego_parse_error: illegal default rule (arguments cannot contain array)',
    ]);
    expect(messagesOf('package p\ndefault f(1) := y')).toEqual([
      'p.rego:2:1: rego_parse_error: illegal default rule (value cannot contain var)',
    ]);
  });

  it('`default` before no name is an unexpected keyword', () => {
    expect(messagesOf('package p\ndefault 0[0')).toEqual(['p.rego:2:1: rego_parse_error: unexpected default keyword']);
  });
});

describe('scanner errors count once the parser reaches them', () => {
  it('a syntax error before a bad token is the only error', () => {
    expect(messagesOf('package p\np if { x := ] }\nq := "unterminated')).toEqual([
      'p.rego:2:13: rego_parse_error: unexpected ] token',
    ]);
  });

  it('the scanner’s error, then "illegal token" from each parser step that meets the token', () => {
    expect(messagesOf('package p\np := "abc')).toEqual([
      'p.rego:2:6: rego_parse_error: non-terminated string',
      'p.rego:2:6: rego_parse_error: illegal token',
      'p.rego:2:6: rego_parse_error: illegal token',
    ]);
    expect(messagesOf('package p\np if { x := "abc }')).toEqual([
      'p.rego:2:13: rego_parse_error: non-terminated string',
      'p.rego:2:13: rego_parse_error: illegal token',
    ]);
    expect(messagesOf('package p\np if { !x }')).toEqual([
      'p.rego:2:8: rego_parse_error: illegal ! character',
      'p.rego:2:8: rego_parse_error: illegal token',
    ]);
    expect(messagesOf('package p\np := 1.')[0]).toBe('p.rego:2:6: rego_parse_error: expected fraction');
    expect(messagesOf('package p\np := 1e')[0]).toBe('p.rego:2:6: rego_parse_error: expected exponent');
    expect(messagesOf('package p\np := 6zxy')[0]).toBe('p.rego:2:6: rego_parse_error: illegal number format');
    expect(messagesOf('package p\np := "\\q"')[0]).toBe('p.rego:2:6: rego_parse_error: illegal escape sequence');
  });

  it('a bad token where a statement would start is its scanner error alone; an unknown character is "illegal token"', () => {
    expect(messagesOf('package p\np := 1\n"abc')).toEqual(['p.rego:3:1: rego_parse_error: non-terminated string']);
    expect(messagesOf('package p\np := 1 @ 2')).toEqual(['p.rego:2:8: rego_parse_error: illegal token']);
  });

  it('a number with a leading zero is the parser’s error, so the head adds its own', () => {
    expect(messagesOf('package p\np := 007')).toEqual([
      'p.rego:2:6: rego_parse_error: unexpected number token: expected number without leading zero',
      'p.rego:2:6: rego_parse_error: unexpected number token: expected rule value term (e.g., p := <VALUE> { ... })',
    ]);
  });

  it('a string is JSON-decoded only when it has a backslash (OPA parseString)', () => {
    const [r] = parseModule('p.rego', 'package p\np := "a\tb"').rules;
    expect(r.head.value).toMatchObject({ type: 'string', value: 'a\tb' });
  });
});

describe('imports and packages', () => {
  it('a refused import path ends the parse (OPA parser test: a single error, detail "import bar.data")', () => {
    expect(errorsOf('package foo\nimport bar.data\ndefault foo=1')).toEqual([
      'p.rego:2:8: rego_parse_error: unexpected import path, must begin with one of: {data, future, input, rego}, got: bar (hint: if this is unexpected, try updating OPA)\n\timport bar.data\n\t       ^',
    ]);
    expect(messagesOf('package p\nimport data.foo[x]')).toEqual([
      'p.rego:2:17: rego_parse_error: unexpected var token: expecting string',
    ]);
    expect(messagesOf('package p\nimport input.foo[0]')).toEqual([
      'p.rego:2:18: rego_parse_error: unexpected number token: expecting string',
    ]);
  });

  it('future and rego imports: their errors, then the parse stops', () => {
    expect(messagesOf('package p\nimport future.keywords.xyz\nimport data.foo\np := 1')).toEqual([
      'p.rego:2:8: rego_parse_error: unexpected keyword, must be one of [contains every if in]',
    ]);
    expect(messagesOf('package p\nimport future.a')).toEqual([
      'p.rego:2:8: rego_parse_error: invalid import, must be `future.keywords`',
    ]);
    expect(messagesOf('package p\nimport future.keywords.in as x')).toEqual([
      'p.rego:2:8: rego_parse_error: `future` imports cannot be aliased',
    ]);
    expect(messagesOf('package p\nimport rego.foo.bar', 0)).toEqual([
      'p.rego:2:8: rego_parse_error: invalid import `rego.foo.bar`, must be `rego.v1`',
    ]);
    expect(messagesOf('package p\nimport rego.v1 as xyz', 0)).toEqual([
      'p.rego:2:8: rego_parse_error: `rego` imports cannot be aliased',
    ]);
    // Read as v1, `import rego.v1` changes nothing, an alias included (regoV1Import returns first).
    expect(parseModule('p.rego', 'package p\nimport rego.v1 as xyz').imports).toHaveLength(1);
    expect(messagesOf('package p\nimport data.foo.if\np := 1')).toEqual([
      'p.rego:2:17: rego_parse_error: unexpected import path, must not end with a keyword, got: if',
    ]);
  });

  it('package paths are strings after the first name', () => {
    expect(messagesOf('package foo[x]')).toEqual([
      'p.rego:1:13: rego_parse_error: unexpected var token: expecting string',
    ]);
    expect(messagesOf('package foo.bar[42].baz')).toEqual([
      'p.rego:1:17: rego_parse_error: unexpected number token: expecting string',
    ]);
    expect(messagesOf('package 42')).toEqual(['p.rego:1:9: rego_parse_error: unexpected number token']);
  });
});

describe('METADATA blocks', () => {
  it('their errors follow the parse error, for the blocks before the point where the parse stopped', () => {
    const errors = messagesOf(
      'package p\n# METADATA\n# title: [unclosed\nq if { ] }\n# METADATA\n# title: [also unclosed\nr := 1\n',
    );
    expect(errors).toHaveLength(2);
    expect(errors[0]).toBe('p.rego:4:8: rego_parse_error: unexpected ] token');
    expect(errors[1]).toMatch(/^p\.rego:\d+:1: rego_parse_error: yaml: /);
  });

  it('a block that does not parse keeps the module checks from running', () => {
    const errors = messagesOf('package p\n# METADATA\n# title: [unclosed\np { true }\n');
    expect(errors).toHaveLength(1);
    expect(errors[0]).toMatch(/rego_parse_error: yaml: /);
  });
});
