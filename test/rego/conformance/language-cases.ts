// Our own Rego cases, one or more per topic of OPA's conformance corpus, in the corpus's case shape so the same
// runners take them: language-wasm.test.ts compiles each to Wasm and runs it on both opa-wasm paths, and
// planner/conformance-ir.test.ts plans the language topics and runs them on the reference IR evaluator.
// Expected results follow OPA's documented semantics (OPA docs: Policy Language, Policy Reference / built-in
// functions). Notes are `topic/what`; topics are the corpus's directory names. Rego v1 syntax throughout.
import type { ConformanceCase } from './runner.ts';

const FILE = 'test/rego/conformance/language-cases.ts';
/** The rule has no value (OPA: undefined): the query has no result. */
export const UNDEFINED = Symbol('undefined');
type Extra = Partial<Omit<ConformanceCase, 'note' | 'file'>>;

export const LANGUAGE_CASES: ConformanceCase[] = [];

const mod = (rules: string, pkg = 't'): string => `package ${pkg}\n\n${rules.trim()}\n`;

/** `data.t.p` after `rules` (in package t) must be `want`. */
function rule(note: string, rules: string, want: unknown, extra: Extra = {}): void {
  LANGUAGE_CASES.push({
    note,
    query: 'data.t.p = x',
    modules: [mod(rules)],
    want_result: want === UNDEFINED ? [] : [{ x: want }],
    file: FILE,
    ...extra,
  });
}

/** As rule(), for a set-valued `p`: compared as a set. */
function setRule(note: string, rules: string, want: unknown[], extra: Extra = {}): void {
  rule(note, rules, want, { sort_bindings: true, ...extra });
}

/** `data.t.p` after `rules` must raise `code` with a message containing `message`. */
function failing(note: string, rules: string, code: string, message: string, extra: Extra = {}): void {
  LANGUAGE_CASES.push({
    note,
    query: 'data.t.p = x',
    modules: [mod(rules)],
    want_error_code: code,
    want_error: message,
    file: FILE,
    ...extra,
  });
}

/**
 * `data.t.p` after `rules` must abort with an error containing `message`: OPA's Wasm run-time error text
 * `<file>:<row>:<col>: <message>` (internal/compiler/wasm errorMessages; the module file is test-0.rego).
 */
function aborting(note: string, rules: string, message: string): void {
  LANGUAGE_CASES.push({ note, query: 'data.t.p = x', modules: [mod(rules)], want_error: message, file: FILE });
}

/** A builtin's type error: an error under strict builtin errors, undefined otherwise (OPA's default). */
function typeError(note: string, rules: string, input: unknown, message: string, code = 'eval_type_error'): void {
  failing(`${note} (strict)`, rules, code, message, { input, strict_error: true });
  rule(`${note} (non-strict: undefined)`, rules, UNDEFINED, { input });
}

/** Any query over any modules. */
function query(note: string, q: string, modules: string[], want: Record<string, unknown>[], extra: Extra = {}): void {
  LANGUAGE_CASES.push({ note, query: q, modules, want_result: want, file: FILE, ...extra });
}

// aggregates
rule('aggregates/count array', 'p := count([1, 2, 3])', 3);
rule('aggregates/count string counts code points', 'p := count("añb€")', 4);
rule('aggregates/count object', 'p := count({"a": 1, "b": 2})', 2);
rule('aggregates/count set removes duplicates', 'p := count({1, 2, 2, 3})', 3);
rule('aggregates/count partial set rule', 's contains x if some x in [1, 2, 2, 3]\np := count(s)', 3);
typeError(
  'aggregates/count of a number',
  'p := n if n := count(input.v)',
  { v: 7 },
  'operand 1 must be one of {array, object, set, string} but got number',
);
rule('aggregates/sum mixed numbers', 'p := sum([1, 2.5, 3.5])', 7);
rule('aggregates/sum set', 'p := sum({1, 2, 3})', 6);
rule('aggregates/sum stays exact past 2^32', 'p if sum([4000000000, 4000000001]) == 8000000001', true);
rule('aggregates/product set', 'p := product({2, 3, 4})', 24);
rule('aggregates/max of a partial set', 's contains x if some x in input.xs\np := max(s)', 9, {
  input: { xs: [4, 9, 1] },
});
rule('aggregates/min of strings', 'p := min({"pear", "apple"})', 'apple');
rule('aggregates/min duplicates out of order', 'p := min([5, 2, 8, 2])', 2);
rule('aggregates/max of empty array is undefined', 'p := max([])', UNDEFINED);
rule('aggregates/sort orders across types', 'p := sort([3, "a", null, true, 1, [0]])', [null, true, 1, 3, 'a', [0]]);
rule('aggregates/sort set', 'p := sort({"b", "c", "a"})', ['a', 'b', 'c']);
rule('aggregates/output into a ref', 'n := 2\np if count([7, 8], data.t.n)', true);
rule('aggregates/output into a ref that differs', 'n := 3\np if count([7, 8], data.t.n)', UNDEFINED);

// arithmetic
rule('arithmetic/plus', 'p := 1 + 2', 3);
rule('arithmetic/plus floats', 'p := 1.5 + 2.25', 3.75);
rule('arithmetic/minus below zero', 'p := 10 - 15', -5);
rule('arithmetic/multiply', 'p := 6 * 7', 42);
rule('arithmetic/divide gives a fraction', 'p := 7 / 2', 3.5);
rule('arithmetic/remainder truncates toward zero', 'p := [7 % 3, -7 % 3]', [1, -1]);
// OPA has no unary minus: its parseNumber takes `-` only before a number (v1/ast/parser.go).
failing(
  'arithmetic/a minus sign before a var is no number',
  'p := -n if n := input.n',
  'rego_parse_error',
  'unexpected identifier token: expected number',
);
rule('arithmetic/negating a var is a subtraction', 'p := 0 - n if n := input.n', -4, { input: { n: 4 } });
rule('arithmetic/abs', 'p := abs(-4)', 4);
rule('arithmetic/floor ceil round', 'p := [floor(-1.5), ceil(1.2), round(2.5), round(-2.5)]', [-2, 2, 3, -3]);
rule('arithmetic/large integers stay exact', 'p if 12345678901 * 10 == 123456789010', true);
rule('arithmetic/arity 1 output into a ref', 'n := 3\np if abs(-3, data.t.n)', true);
rule('arithmetic/arity 2 output into a ref', 'n := 5\np if plus(2, 3, data.t.n)', true);
typeError('arithmetic/divide by zero', 'p := y if y := 1 / input.z', { z: 0 }, 'divide by zero', 'eval_builtin_error');
typeError('arithmetic/modulo by zero', 'p := y if y := 1 % input.z', { z: 0 }, 'modulo by zero', 'eval_builtin_error');
typeError(
  'arithmetic/modulo of a fraction',
  'p := y if y := input.a % 2',
  { a: 7.5 },
  'modulo on floating-point number',
  'eval_builtin_error',
);
typeError('arithmetic/plus of a string', 'p := y if y := input.a + 1', { a: '1' }, 'operand 1 must be number');

// array
rule('array/concat', 'p := array.concat([1, 2], [3])', [1, 2, 3]);
rule('array/slice', 'p := array.slice([1, 2, 3, 4], 1, 3)', [2, 3]);
rule('array/slice stop before start is empty', 'p := array.slice([1, 2, 3], 2, 1)', []);
rule('array/slice clamps a negative start', 'p := array.slice([1, 2, 3], -5, 2)', [1, 2]);
rule('array/slice clamps a stop past the end', 'p := array.slice([1, 2, 3], 1, 99)', [2, 3]);
rule('array/reverse', 'p := array.reverse([1, 2, 3])', [3, 2, 1]);

// assignments
rule('assignments/constant', 'p := 7', 7);
rule('assignments/default when the body fails', 'default p := 0\np := 1 if input.x', 0);
rule('assignments/else value', 'p := 1 if input.x\nelse := 2', 2);
setRule('assignments/partial set with contains', 's contains v if some v in [2, 1]\np := s', [1, 2]);
rule('assignments/function return value', 'f(x) := y if y := x * 2\np := f(3)', 6);
rule('assignments/local := then =', 'p := [a, b] if {\n  a := 1\n  b = a + 1\n}', [1, 2]);
failing('assignments/a local assigned twice', 'p if {\n  x := 1\n  x := 2\n}', 'rego_compile_error', 'x');

// base64builtins / base64urlbuiltins
rule('base64builtins/encode', 'p := base64.encode("hello")', 'aGVsbG8=');
rule('base64builtins/decode', 'p := base64.decode("aGVsbG8=")', 'hello');
rule('base64builtins/is_valid', 'p := [base64.is_valid("aGVsbG8="), base64.is_valid("a")]', [true, false]);
rule('base64urlbuiltins/encode uses - and _', 'p := base64url.encode("hi?>")', 'aGk_Pg==');
rule('base64urlbuiltins/decode without padding', 'p := base64url.decode("aGk_Pg")', 'hi?>');
rule('base64urlbuiltins/encode_no_pad', 'p := base64url.encode_no_pad("hi?>")', 'aGk_Pg');

// baseandvirtualdocs
query(
  'baseandvirtualdocs/base and virtual documents merge',
  'data.t = x',
  [mod('q := 2', 't.v')],
  [{ x: { base: 1, v: { q: 2 } } }],
  { data: { t: { base: 1 } } },
);
query(
  'baseandvirtualdocs/a prefix of a virtual document',
  'data.t.a = x',
  [mod('c := 1', 't.a.b')],
  [{ x: { b: { c: 1 } } }],
);
query(
  'baseandvirtualdocs/iterating keys of base and virtual together',
  'data.t.r.p = x',
  [mod('y := 2', 't.a'), mod('p contains k if some k, _ in data.t.a', 't.r')],
  [{ x: ['x', 'y'] }],
  { data: { t: { a: { x: 1 } } }, sort_bindings: true },
);

// comparisonexpr
rule('comparisonexpr/integer equals float', 'p if 1 == 1.0', true);
rule('comparisonexpr/arrays of int and float', 'p if [1, 2.0] == [1.0, 2]', true);
rule('comparisonexpr/nested objects of int and float', 'p if {\n  {"a": {"b": 1}} == {"a": {"b": 1.0}}\n}', true);
rule('comparisonexpr/not equal', 'p := [1 != 2, "a" != "a"]', [true, false]);
rule('comparisonexpr/ordering operators', 'p := ["a" < "b", 3 >= 3, 2 <= 1, 2 > 1.5]', [true, true, false, true]);
rule('comparisonexpr/ordering across types', 'p := [null < false, true < 0, 9 < "0", "z" < [], [] < {}]', [
  true,
  true,
  true,
  true,
  true,
]);
rule('comparisonexpr/false comparison makes the body fail', 'p if 2 <= 1', UNDEFINED);
rule('comparisonexpr/undefined operand', 'p if input.missing >= 1', UNDEFINED);
rule('comparisonexpr/equal sets in any order', 'p if {\n  {1, 2} == {2, 1}\n}', true);

// completedoc
rule('completedoc/false', 'p := false', false);
rule('completedoc/number', 'p := 3', 3);
rule('completedoc/float with zero fraction', 'p := 3.0', 3);
rule('completedoc/fraction', 'p := 66.66667', 66.66667);
rule('completedoc/string', 'p := "hello"', 'hello');
rule('completedoc/empty string', 'p := ""', '');
rule('completedoc/empty array', 'p := []', []);
rule('completedoc/nested sets', 'p := {{1, 2}, {2, 3}}', [
  [1, 2],
  [2, 3],
]);
rule('completedoc/from vars', 'p := [x, y] if {\n  x := 1\n  y := "b"\n}', [1, 'b']);
aborting(
  'completedoc/two values conflict',
  'p := 1 if true\np := 2 if true',
  'test-0.rego:4:1: var assignment conflict',
);
rule('completedoc/two equal values do not conflict', 'p := 1 if true\np := 1 if 2 > 1', 1);

// comprehensions
rule('comprehensions/array', 'p := [x | some x in [1, 2, 3]; x > 1]', [2, 3]);
rule('comprehensions/array nested', 'p := [[x, ys] | some x in [1, 2]; ys := [y | some y in [x, 10]]]', [
  [1, [1, 10]],
  [2, [2, 10]],
]);
rule('comprehensions/array of embedded sets', 'p := [s | some x in [1, 2]; s := {x, 3}]', [
  [1, 3],
  [2, 3],
]);
rule('comprehensions/array dereferencing elements', 'p := [x.a | some x in input.xs]', [1, 2], {
  input: { xs: [{ a: 1 }, { a: 2 }, { b: 3 }] },
});
setRule('comprehensions/set', 'p := {y | some x in [1, 2, 3, 4]; y := x % 2}', [0, 1]);
rule('comprehensions/object', 'p := {k: v | some k, v in {"a": 1, "b": 2}; v > 1}', { b: 2 });
setRule(
  'comprehensions/object with number keys looked up',
  'o := {n: true | some n in [1, 2, 3]}\np contains n if o[n]',
  [1, 2, 3],
);
rule(
  'comprehensions/object closes over an outer var',
  'p := o if {\n  n := input.n\n  o := {k: n | some k in ["a"]}\n}',
  { a: 5 },
  {
    input: { n: 5 },
  },
);
aborting(
  'comprehensions/object with a repeated key',
  'p := {k: v | some v in [1, 2]; k := "a"}',
  'test-0.rego:3:1: object insert conflict',
);
rule(
  'comprehensions/a var declared inside shadows one outside',
  'p := [y, c] if {\n  y := 1\n  c := [y | some y in [5, 6]]\n}',
  [1, [5, 6]],
);
rule('comprehensions/empty result is an empty collection', 'p := [x | some x in []]', []);

// defaultkeyword
rule('defaultkeyword/value when defined', 'default p := 1\np := 2 if input.go', 2, { input: { go: true } });
rule('defaultkeyword/default when undefined', 'default p := 1\np := 2 if input.go', 1);
rule(
  'defaultkeyword/function with a var argument',
  'default f(_) := "none"\nf(x) := "pos" if x > 0\np := [f(1), f(-1)]',
  ['pos', 'none'],
);
query(
  'defaultkeyword/default of a ref head',
  'data.t.a.b = x',
  [mod('default a.b := 0\na.b := 5 if input.x')],
  [{ x: 0 }],
);
rule('defaultkeyword/declared after the rule', 'p := 2 if false\ndefault p := 3', 3);
rule('defaultkeyword/default empty array', 'default p := []\np := [x | some x in input.xs] if input.xs', []);
rule('defaultkeyword/default false', 'default p := false\np if input.ok', false);

// elsekeyword
rule('elsekeyword/first matching branch', 'p := 1 if input.a\nelse := 2 if input.b\nelse := 3', 2, {
  input: { b: true },
});
rule('elsekeyword/last branch', 'p := 1 if input.a\nelse := 2 if input.b\nelse := 3', 3);
rule('elsekeyword/default when no branch matches', 'default p := 0\np := 1 if input.a\nelse := 2 if input.b', 0);
rule('elsekeyword/var heads', 'p := x if x := input.a\nelse := y if y := input.b', 7, { input: { b: 7 } });
rule('elsekeyword/functions', 'f(x) := "big" if x > 10\nelse := "small"\np := [f(20), f(1)]', ['big', 'small']);
rule('elsekeyword/else false', 'allow if input.ok\nelse := false\np := allow', false);
// Located at the conflicting chain's last definition, where OPA's planner is when it assigns the chain's value.
aborting(
  'elsekeyword/two chains with different values conflict',
  'p := 1 if true\nelse := 2\np := 3 if false\nelse := 4',
  'test-0.rego:6:1: var assignment conflict',
);
rule('elsekeyword/two chains with the same value', 'p := 1 if false\nelse := 2\np := 2 if true', 2);

// eqexpr
rule('eqexpr/chain of vars', 'p := [x, y, z] if {\n  x = y\n  y = z\n  z = 1\n}', [1, 1, 1]);
rule('eqexpr/array pattern', 'p := a + b if [a, b] = [1, 2]', 3);
rule('eqexpr/array pattern with the same var', 'p if [x, x] = [1, 1]', true);
rule('eqexpr/array pattern with the same var, unequal', 'p if [x, x] = [1, 2]', UNDEFINED);
rule('eqexpr/object pattern', 'p := v if {\n  {"a": v} = {"a": 5}\n}', 5);
rule('eqexpr/ref = object pattern', 'p := v if input.o = {"k": v}', 'z', { input: { o: { k: 'z' } } });
rule('eqexpr/nested pattern', 'p := y if [_, {"x": [y]}] = [0, {"x": [9]}]', 9);
setRule('eqexpr/ref = ref joins', 'p contains x if {\n  data.a[_] = x\n  data.b[_] = x\n}', [2, 3], {
  data: { a: [1, 2, 3], b: [2, 3, 4] },
});
rule('eqexpr/unequal constants', 'p if 1 = 2', UNDEFINED);
rule('eqexpr/arrays of different length', 'p if [a, b] = [1, 2, 3]', UNDEFINED);

// every
rule('every/all elements pass', 'p if every x in [1, 2] { x > 0 }', true);
rule('every/one element fails', 'p if every x in [1, -2] { x > 0 }', UNDEFINED);
rule('every/keys and values of an object', 'p if every k, v in {"a": 1, "b": 1} { v == 1; k != "" }', true);
rule('every/empty domain', 'p if every x in [] { x > 100 }', true);
rule('every/non-iterable number domain fails', 'default p := "no"\np := "yes" if every x in input.n { x > 0 }', 'no', {
  input: { n: 7 },
});
rule('every/non-iterable string domain fails', 'default p := "no"\np := "yes" if every x in "abc" { x != "" }', 'no');
rule('every/undefined domain fails', 'default p := "no"\np := "yes" if every x in input.missing { x }', 'no');
rule('every/domain from a function call', 'f(n) := [n, n + 1]\np if every x in f(1) { x < 3 }', true);
rule('every/set domain', 'p if every x in {1, 2} { x in {1, 2, 3} }', true);
rule('every/with some inside', 'p if every x in [1, 2] {\n  some y in [2, 3]\n  y > x\n}', true);
rule('every/with some inside, failing', 'p if every x in [1, 3] {\n  some y in [2, 3]\n  y > x\n}', UNDEFINED);
setRule('every/inside some', 'p contains xs if {\n  some xs in [[1, 2], [3, -1]]\n  every y in xs { y > 0 }\n}', [
  [1, 2],
]);

// functions
rule('functions/basic call', 'f(x) := x + 1\np := f(1)', 2);
query(
  'functions/call across packages',
  'data.t.p = x',
  [mod('double(x) := x * 2', 't.lib'), mod('import data.t.lib\np := [lib.double(4), data.t.lib.double(1)]')],
  [{ x: [8, 2] }],
);
rule('functions/definitions by constant argument', 'g(1) := "one"\ng(2) := "two"\np := [g(1), g(2)]', ['one', 'two']);
rule('functions/no matching definition is undefined', 'g(1) := "one"\np := g(3)', UNDEFINED);
rule('functions/boolean function', 'pos(x) if x > 0\np := [pos(1)]', [true]);
rule('functions/unused argument', 'k(_, y) := y\np := k(1, 2)', 2);
rule('functions/object argument', 'name(o) := o.name\np := name({"name": "n"})', 'n');
aborting(
  'functions/two outputs for the same input conflict',
  'h(x) := 1 if x > 0\nh(x) := 2 if x > 1\np := h(5)',
  'test-0.rego:4:1: var assignment conflict',
);
aborting(
  'functions/conflict through else',
  'h(x) := 1 if x > 9\nelse := 3\nh(x) := 2 if x > 1\np := h(5)',
  'test-0.rego:5:1: var assignment conflict',
);
failing('functions/recursion is refused', 'f(x) := f(x)\np := f(1)', 'rego_recursion_error', 'recursion');

// indexing
rule('indexing/rule chosen by an input value', 'p := "a" if input.k == "a"\np := "b" if input.k == "b"', 'b', {
  input: { k: 'b' },
});
rule('indexing/rule chosen by an array value', 'p := 1 if input.v == [1, 2]\np := 2 if input.v == "x"', 1, {
  input: { v: [1, 2] },
});
rule('indexing/no rule matches', 'p := 1 if input.v == 1\np := 2 if input.v == 2', UNDEFINED, { input: { v: 3 } });

// jsonbuiltins
rule('jsonbuiltins/unmarshal', 'p := json.unmarshal(`{"a": [1, true, null]}`)', { a: [1, true, null] });
rule('jsonbuiltins/marshal sorts keys', 'p := json.marshal({"b": 1, "a": [2]})', '{"a":[2],"b":1}');
rule('jsonbuiltins/is_valid', 'p := [json.is_valid(`{"a":1}`), json.is_valid("{")]', [true, false]);
typeError(
  'jsonbuiltins/unmarshal of a number',
  'p := v if v := json.unmarshal(input.n)',
  { n: 1 },
  'operand 1 must be string but got number',
);

// jsonfilter
rule('jsonfilter/string paths', 'p := json.filter({"a": {"b": 1, "c": 2}, "d": 3}, ["a/b", "d"])', {
  a: { b: 1 },
  d: 3,
});
rule('jsonfilter/array paths', 'p := json.filter({"a": {"b": 1, "c": 2}}, [["a", "c"]])', { a: { c: 2 } });
rule('jsonfilter/a path and its prefix', 'p := json.filter({"a": {"b": 1, "c": 2}, "d": 3}, {"a", "a/b"})', {
  a: { b: 1, c: 2 },
});
rule('jsonfilter/into arrays', 'p := json.filter({"a": [{"x": 1, "y": 2}]}, ["a/0/x"])', { a: [{ x: 1 }] });

// jsonpatch
rule('jsonpatch/add', 'p := json.patch({"a": 1}, [{"op": "add", "path": "/b", "value": 2}])', { a: 1, b: 2 });
rule('jsonpatch/remove', 'p := json.patch({"a": 1, "b": 2}, [{"op": "remove", "path": "/a"}])', { b: 2 });
rule('jsonpatch/move', 'p := json.patch({"a": 1}, [{"op": "move", "from": "/a", "path": "/b"}])', { b: 1 });
rule(
  'jsonpatch/add into a nested array',
  'p := json.patch({"a": [1, 2]}, [{"op": "add", "path": "/a/1", "value": 9}])',
  {
    a: [1, 9, 2],
  },
);
rule('jsonpatch/append with -', 'p := json.patch({"a": [1, 2]}, [{"op": "add", "path": "/a/-", "value": 9}])', {
  a: [1, 2, 9],
});
rule('jsonpatch/failing test op', 'p := json.patch({"a": 1}, [{"op": "test", "path": "/a", "value": 2}])', UNDEFINED);

// jsonremove
rule('jsonremove/string path', 'p := json.remove({"a": {"b": 1, "c": 2}, "d": 3}, ["a/b"])', { a: { c: 2 }, d: 3 });
rule('jsonremove/array path', 'p := json.remove({"a": {"b": 1}, "d": 3}, [["d"]])', { a: { b: 1 } });
rule('jsonremove/empty object', 'p := json.remove({}, ["a"])', {});
rule('jsonremove/set of paths', 'p := json.remove({"a": 1, "b": 2, "c": 3}, {"a", "c"})', { b: 2 });
typeError(
  'jsonremove/object as the paths',
  'p := v if v := json.remove({"a": 1}, input.paths)',
  { paths: { a: 1 } },
  'operand 2 must be one of {set, array} but got object',
);

// negation
rule('negation/not false', 'p if not false', true);
rule('negation/not of an undefined ref', 'p if not input.x', true);
rule('negation/not of a set member', 's := {1, 2}\np := [true | not s[3]]', [true]);
rule('negation/not of a present set member', 's := {1, 2}\np if not s[1]', UNDEFINED);
rule('negation/not of an undefined function result', 'f(x) if x > 5\np if not f(1)', true);

// objectfilter
rule('objectfilter/array of keys', 'p := object.filter({"a": 1, "b": 2, "c": 3}, ["a", "b"])', { a: 1, b: 2 });
rule('objectfilter/object of keys', 'p := object.filter({"a": 1, "b": 2}, {"b": 0})', { b: 2 });
rule('objectfilter/duplicate keys', 'p := object.filter({"a": 1, "b": 2}, ["a", "a"])', { a: 1 });
rule('objectfilter/empty set of keys', 'p := object.filter({"a": 1}, set())', {});
typeError(
  'objectfilter/a number as the object',
  'p := v if v := object.filter(input.n, ["a"])',
  { n: 5 },
  'operand 1 must be object but got number',
);

// objectget
rule('objectget/key found', 'p := object.get({"a": "b"}, "a", "d")', 'b');
rule('objectget/key not found', 'p := object.get({"a": "b"}, "z", "d")', 'd');
rule('objectget/composite value found', 'p := object.get({"a": [1, {"x": 2}]}, "a", null)', [1, { x: 2 }]);
rule('objectget/empty path returns the object', 'p := object.get({"a": 1}, [], 0)', { a: 1 });
rule('objectget/path of three keys', 'p := object.get({"a": {"b": {"c": 3}}}, ["a", "b", "c"], 0)', 3);
rule('objectget/path of three keys, not found', 'p := object.get({"a": {"b": {}}}, ["a", "b", "c"], 0)', 0);
rule('objectget/path through a non-object', 'p := object.get({"a": 1}, ["a", "b"], "d")', 'd');
rule('objectget/path through an array index', 'p := object.get({"a": [10, 20]}, ["a", 1], 0)', 20);
rule('objectget/non-string keys', 'p := object.get({1: {"x": true}}, [1, "x"], false)', true);
typeError(
  'objectget/a string as the object',
  'p := v if v := object.get(input.s, "a", 0)',
  { s: 'str' },
  'operand 1 must be object but got string',
);

// objectkeys
setRule('objectkeys/string keys', 'p := object.keys({"a": 1, "b": 2})', ['a', 'b']);
setRule('objectkeys/keys of several types', 'p := object.keys({"a": 1, 2: 3})', [2, 'a']);
rule('objectkeys/empty object', 'p := object.keys({})', []);
typeError(
  'objectkeys/an array',
  'p := v if v := object.keys(input.a)',
  { a: [1] },
  'operand 1 must be object but got array',
);

// objectremove
rule('objectremove/array of keys', 'p := object.remove({"a": 1, "b": 2, "c": 3}, ["a", "c"])', { b: 2 });
rule('objectremove/set of keys', 'p := object.remove({"a": 1, "b": 2}, {"b"})', { a: 1 });
rule('objectremove/object of keys, nested values kept', 'p := object.remove({"a": {"x": 1}, "b": 2}, {"b": 0})', {
  a: { x: 1 },
});
rule('objectremove/empty set of keys', 'p := object.remove({"a": 1}, set())', { a: 1 });
typeError(
  'objectremove/a number as the object',
  'p := v if v := object.remove(input.n, ["a"])',
  { n: 5 },
  'operand 1 must be object but got number',
);

// objectunion
rule(
  'objectunion/right side wins, nested objects merge',
  'p := object.union({"a": {"b": 1}, "c": 1}, {"a": {"d": 2}, "c": 2})',
  {
    a: { b: 1, d: 2 },
    c: 2,
  },
);
rule('objectunion/union_n', 'p := object.union_n([{"a": 1}, {"b": 2}, {"a": 3}])', { a: 3, b: 2 });
typeError(
  'objectunion/a number on the left',
  'p := v if v := object.union(input.n, {})',
  { n: 5 },
  'operand 1 must be object but got number',
);

// partialobjectdoc
rule(
  'partialobjectdoc/identity',
  'o[k] := v if some k, v in input.m\np := o',
  { a: 1, b: 'x' },
  {
    input: { m: { a: 1, b: 'x' } },
  },
);
rule(
  'partialobjectdoc/joining in the body',
  'o[k] := v if {\n  some k in ["a", "b"]\n  v := input.m[k]\n}\np := o',
  { a: 1 },
  {
    input: { m: { a: 1 } },
  },
);
rule('partialobjectdoc/composite values', 'o[k] := {"n": n} if some k, n in {"x": 1, "y": 2}\np := o', {
  x: { n: 1 },
  y: { n: 2 },
});
rule('partialobjectdoc/ref into the object', 'o[k] := 2 if some k in ["a", "b"]\np := o.b', 2);
rule('partialobjectdoc/ref to a missing key', 'o[k] := 2 if some k in ["a"]\np := o.z', UNDEFINED);
aborting(
  'partialobjectdoc/a key with two values',
  'o[k] := 1 if k := "a"\no[k] := 2 if k := "a"\np := o',
  'test-0.rego:4:1: object insert conflict',
);
// With a constant key the head is a ref to one value (Rego v1), so two values are a complete-rule conflict.
aborting(
  'partialobjectdoc/a constant key with two values',
  'o["a"] := 1 if true\no["a"] := 2 if true\np := o',
  'test-0.rego:4:1: var assignment conflict',
);

// partialsetdoc
setRule('partialsetdoc/iteration', 's contains x if some x in input.xs\np := s', [1, 2, 3], {
  input: { xs: [3, 1, 2, 1] },
});
setRule('partialsetdoc/array indices', 's contains i if some i, _ in ["a", "b"]\np := s', [0, 1]);
setRule('partialsetdoc/object values', 's contains v if some v in {"a": 1, "b": 2}\np := s', [1, 2]);
setRule('partialsetdoc/nested composites', 's contains [x, {"y": x}] if some x in [1, 2]\np := s', [
  [1, { y: 1 }],
  [2, { y: 2 }],
]);
setRule('partialsetdoc/deep ref over mixed elements', 's contains v if v := input.a[_].b\np := s', [1, 'x'], {
  input: { a: [{ b: 1 }, { b: 'x' }, { c: 2 }] },
});
setRule('partialsetdoc/objects as members', 's contains {"k": x} if some x in ["b", "a"]\np := s', [
  { k: 'a' },
  { k: 'b' },
]);
rule('partialsetdoc/membership', 's contains x if some x in [1, 2]\np := [1 in s, 3 in s]', [true, false]);

// refheads
query('refheads/constant ref head', 'data.t.a = x', [mod('a.b.c := 1')], [{ x: { b: { c: 1 } } }]);
query(
  'refheads/var in the last term',
  'data.t.a.b = x',
  [mod('a.b[k] := v if some k, v in {"x": 1}')],
  [{ x: { x: 1 } }],
);
query('refheads/multi-value ref head', 'data.t.a.s = x', [mod('a.s contains x if some x in [2, 1]')], [{ x: [1, 2] }], {
  sort_bindings: true,
});
rule('refheads/function with a ref head', 'lib.f(x) := x + 1\np := lib.f(1)', 2);
query(
  'refheads/rules and a package share an extent',
  'data.t.a = x',
  [mod('a.b := 1'), mod('c := 2', 't.a')],
  [{ x: { b: 1, c: 2 } }],
);
rule('refheads/number as the last term', 'r[1] := "one"\nr[2] := "two"\np := [r[1], r[2]]', ['one', 'two']);
rule('refheads/lookup through a ref head', 'a.b.c := 3\np := a.b', { c: 3 });
query('refheads/query into a ref head', 'data.t.p.q = x', [mod('p.q.r := 3')], [{ x: { r: 3 } }]);

// regexfind / regexmatch / regexreplace / regexsplit
rule('regexfind/all matches', 'p := regex.find_n("[0-9]+", "a1b22c333", -1)', ['1', '22', '333']);
rule('regexfind/first n matches', 'p := regex.find_n("[0-9]+", "a1b22c333", 2)', ['1', '22']);
rule('regexfind/no match', 'p := regex.find_n("x", "abc", -1)', []);
rule('regexfind/submatches', 'p := regex.find_all_string_submatch_n("a(\\\\d)", "a1 a2", -1)', [
  ['a1', '1'],
  ['a2', '2'],
]);
rule('regexmatch/match', 'p := [regex.match("^a+b$", "aaab"), regex.match("^a+b$", "ab c")]', [true, false]);
rule('regexmatch/is_valid', 'p := [regex.is_valid("a+"), regex.is_valid("(")]', [true, false]);
rule('regexreplace/pattern', 'p := regex.replace("abc123", "[0-9]", "#")', 'abc###');
rule('regexreplace/groups', 'p := regex.replace("john smith", "(\\\\w+) (\\\\w+)", "$2 $1")', 'smith john');
typeError(
  'regexreplace/bad pattern',
  'p := v if v := regex.replace("abc", input.re, "x")',
  { re: '(' },
  'error parsing regexp',
  'eval_builtin_error',
);
rule('regexsplit/split', 'p := regex.split(",\\\\s*", "a, b,c")', ['a', 'b', 'c']);
rule('regexsplit/no separator', 'p := regex.split(",", "abc")', ['abc']);

// sets
setRule('sets/difference', 'p := {1, 2, 3} - {2}', [1, 3]);
setRule('sets/union', 'p := {1, 2} | {2, 3}', [1, 2, 3]);
setRule('sets/intersection', 'p := {1, 2} & {2, 3}', [2]);
setRule('sets/intersection of many', 'p := intersection({{1, 2}, {2, 3}})', [2]);
setRule('sets/union of many', 'p := union({{1}, {2}, set()})', [1, 2]);
setRule('sets/difference of refs', 'a := {x | some x in input.a}\nb := {x | some x in input.b}\np := a - b', ['x'], {
  input: { a: ['x', 'y'], b: ['y'] },
});

// sprintf
rule('sprintf/verbs', 'p := sprintf("%d-%s-%.2f", [5, "x", 3.14159])', '5-x-3.14');
rule('sprintf/composite value', 'p := sprintf("%v", [[1, "a"]])', '[1, "a"]');
rule('sprintf/no verbs', 'p := sprintf("none", [])', 'none');
// OPA hands sprintf integers written as digits as Go ints or *big.Int, other numbers as float64.
rule(
  'sprintf/integers past 2^53 and past int64 stay exact',
  'p := sprintf("%d %s %v %s", [9007199254740993, 123456789123456789123, 1208925819614629174706175, 5])',
  '9007199254740993 123456789123456789123 1208925819614629174706175 %!s(int=5)',
);
rule(
  'sprintf/big floats are float64',
  'p := sprintf("%v %e %.1f", [1.5e300, 1.5e300, 1e21])',
  '1.5e+300 1.500000e+300 1000000000000000000000.0',
);
rule('sprintf/%d of a big float is a Go verb error', 'p := sprintf("%d", [1.5e300])', '%!d(float64=1.5e+300)');
// json.marshal writes the number OPA holds: integers past 2^53 and past int64 as their digits.
rule(
  'json.marshal/integers past 2^53 and past int64 stay exact',
  'p := json.marshal([9007199254740993, -12345678901234567890, {"n": 123456789123456789123, "m": [1208925819614629174706175]}])',
  '[9007199254740993,-12345678901234567890,{"m":[1208925819614629174706175],"n":123456789123456789123}]',
);
rule(
  'json.marshal_with_options/an integer past int64 indented',
  'p := json.marshal_with_options({"n": 123456789123456789123}, {"indent": "  "})',
  '{\n  "n": 123456789123456789123\n}',
);
rule(
  'json.marshal/an integer past 2^53 from arithmetic',
  'p := json.marshal(9007199254740992 + 1)',
  '9007199254740993',
);
// OPA holds a decimal as written: sprintf hands Go a float64 for it (`1e3` too), prints composites with it as
// written, and json.marshal writes it as written.
rule(
  'sprintf/a decimal is a float64, printed as written inside a composite',
  'p := sprintf("%v %d %v", [1e3, 1e3, [1.50, 1e3, {"a": 2.5e-3}]])',
  '1000 %!d(float64=1000) [1.50, 1e3, {"a": 2.5e-3}]',
);
rule('json.marshal/decimals as written', 'p := json.marshal([1.50, 1.5e300, 1e3, 0.1, 3])', '[1.50,1.5e300,1e3,0.1,3]');
// A number that is neither an integer nor a float64 (past the double range) reaches Go's fmt as its text.
rule(
  'sprintf/a decimal past the double range is its text',
  'p := sprintf("%v %v %d %.1f %v", [1e400, -1e400, 1e400, 1e400, [1e400, {"a": -2.5e999}]])',
  '1e400 -1e400 %!d(string=1e400) %!f(string=1e400) [1e400, {"a": -2.5e999}]',
);
rule(
  'json.marshal/a decimal past the double range as written',
  'p := json.marshal([1e400, {"a": -2.5e999}])',
  '[1e400,{"a":-2.5e999}]',
);

// strings
rule('strings/concat', 'p := [concat(",", ["a", "b"]), concat("-", {"b", "a"})]', ['a,b', 'a-b']);
rule(
  'strings/contains startswith endswith',
  'p := [contains("abc", "b"), startswith("abc", "ab"), endswith("abc", "bc")]',
  [true, true, true],
);
rule('strings/indexof not found', 'p := indexof("abc", "z")', -1);
rule('strings/indexof counts code points', 'p := indexof("åbc", "c")', 2);
rule('strings/lower upper', 'p := [lower("AbC"), upper("aBc")]', ['abc', 'ABC']);
rule('strings/replace', 'p := replace("aaa", "a", "b")', 'bbb');
rule('strings/split', 'p := split("a.b..c", ".")', ['a', 'b', '', 'c']);
rule('strings/substring', 'p := [substring("hello", 1, 3), substring("hello", 1, -1), substring("hello", 9, 2)]', [
  'ell',
  'ello',
  '',
]);
rule('strings/trim with a multi-character cutset', 'p := trim("xyhixy", "xy")', 'hi');
rule(
  'strings/trim variants',
  'p := [trim_left("aab", "a"), trim_right("baa", "a"), trim_prefix("ab", "a"), trim_suffix("ab", "b"), trim_space("  x ")]',
  ['b', 'b', 'b', 'a', 'x'],
);
rule('strings/replace_n', 'p := strings.replace_n({"a": "1", "b": "2"}, "abc")', '12c');
rule('strings/reverse', 'p := strings.reverse("abc")', 'cba');
rule(
  'strings/any_prefix_match and any_suffix_match',
  'p := [strings.any_prefix_match("abc", ["x", "a"]), strings.any_suffix_match("abc", ["x"])]',
  [true, false],
);
rule('strings/count', 'p := strings.count("cheese", "e")', 3);
rule('strings/format_int', 'p := [format_int(255, 16), format_int(-5, 2)]', ['ff', '-101']);
rule(
  'strings/format_int of an integer past 2^53',
  'p := [format_int(-9007199254740993, 16), format_int(12345678901234567890123, 10)]',
  ['-20000000000001', '12345678901234567890123'],
);
typeError(
  'strings/upper of a number',
  'p := v if v := upper(input.n)',
  { n: 1 },
  'operand 1 must be string but got number',
);

// time
rule('time/parse_rfc3339_ns', 'p if time.parse_rfc3339_ns("2020-01-01T00:00:00Z") == 1577836800000000000', true);
rule('time/parse_ns with a layout', 'p if time.parse_ns("2006-01-02", "1970-01-02") == 86400000000000', true);
rule('time/date', 'p := time.date(0)', [1970, 1, 1]);
rule('time/date in a time zone', 'p := time.date([1577836800000000000, "America/Los_Angeles"])', [2019, 12, 31]);
rule('time/date with an empty time zone is UTC', 'p := time.date([0, ""])', [1970, 1, 1]);
rule('time/clock', 'p := time.clock(3723000000000)', [1, 2, 3]);
rule('time/weekday', 'p := [time.weekday(0), time.weekday(86400000000000)]', ['Thursday', 'Friday']);
rule('time/add_date', 'p if time.add_date(0, 1, 1, 1) == 34300800000000000', true);
rule('time/now_ns is positive', 'p if time.now_ns() > 0', true);
// Nanosecond timestamps are past 2^53 from 1970-04-15 on: they stay exact into and out of time.* (OPA: int64).
rule(
  'time/parse_rfc3339_ns is exact past 2^53',
  'p := format_int(time.parse_rfc3339_ns("2020-01-01T00:00:00.123456789Z"), 10)',
  '1577836800123456789',
);
rule(
  'time/format keeps the nanoseconds of an exact timestamp',
  'p := time.format(1577836800123456789)',
  '2020-01-01T00:00:00.123456789Z',
);
rule(
  'time/add_date keeps the nanoseconds',
  'p := format_int(time.add_date(1577836800123456789, 1, 0, 0), 10)',
  '1609459200123456789',
);
rule(
  'time/clock and date of an exact timestamp with a zone',
  'p := [time.clock([1577836800123456789, "UTC"]), time.date([1577836799999999999, "UTC"])]',
  [
    [0, 0, 0],
    [2019, 12, 31],
  ],
);
typeError(
  'time/add_date past the int64 range',
  'p := t if t := time.add_date(input.t, 300, 0, 0)',
  { t: 0 },
  'time outside of valid range',
  'eval_builtin_error',
);
typeError(
  'time/date of a timestamp past int64',
  'p := d if d := time.date(9223372036854775808)',
  {},
  'timestamp too big',
  'eval_builtin_error',
);
typeError(
  'time/parse_rfc3339_ns of a bad string',
  'p := v if v := time.parse_rfc3339_ns(input.s)',
  { s: 'yesterday' },
  'cannot parse',
  'eval_builtin_error',
);

// typebuiltin / typenamebuiltin
rule('typebuiltin/is_number', 'p := [is_number(1), is_number(1.5), is_number("1")]', [true, true, false]);
rule(
  'typebuiltin/is_string and is_boolean',
  'p := [is_string("s"), is_string(1), is_boolean(false), is_boolean(null)]',
  [true, false, true, false],
);
rule(
  'typebuiltin/is_array is_set is_object is_null',
  'p := [is_array([]), is_set(set()), is_object({}), is_null(null), is_array({})]',
  [true, true, true, true, false],
);
rule(
  'typenamebuiltin/type_name',
  'p := [type_name(null), type_name(true), type_name(1.5), type_name("s"), type_name([]), type_name({}), type_name(set())]',
  ['null', 'boolean', 'number', 'string', 'array', 'object', 'set'],
);

// globmatch
rule(
  'globmatch/star stops at a delimiter',
  'p := [glob.match("*.github.com", ["."], "api.github.com"), glob.match("*.github.com", ["."], "a.b.github.com")]',
  [true, false],
);
rule('globmatch/super-star crosses delimiters', 'p := glob.match("**.github.com", ["."], "a.b.github.com")', true);
rule('globmatch/default delimiter', 'p := [glob.match("a*", null, "abc"), glob.match("a*", [], "a.c")]', [true, false]);
rule('globmatch/single character', 'p := [glob.match("a?c", [], "abc"), glob.match("a?c", ["b"], "abc")]', [
  true,
  false,
]);
rule(
  'globmatch/character classes',
  'p := [glob.match("[bc]at", [], "bat"), glob.match("[!b]at", [], "bat"), glob.match("[a-c]at", [], "cat")]',
  [true, false, true],
);
rule('globmatch/alternatives', 'p := [glob.match("{cat,bat}", [], "bat"), glob.match("{cat,bat}", [], "rat")]', [
  true,
  false,
]);
rule('globmatch/quote_meta', 'p := glob.quote_meta("*.a?")', '\\*.a\\?');

// virtualdocs
rule('virtualdocs/set member lookup', 's contains x if some x in input.xs\np if s[2]', true, { input: { xs: [1, 2] } });
rule(
  'virtualdocs/object with number keys',
  'q[k] := 1 if {\n  some k in data.a\n  k < 3\n}\np := {x | q[x] = 1}',
  [1, 2],
  {
    data: { a: [1, 2, 3, 4] },
    sort_bindings: true,
  },
);
setRule('virtualdocs/complete set', 'p := {1, 2}', [1, 2]);
rule('virtualdocs/rules referring to rules', 'a := 1\nb := a + 1\np := [a, b]', [1, 2]);
setRule('virtualdocs/iterating a virtual object', 'o := {"x": 1, "y": 2}\np contains k if some k, _ in o', ['x', 'y']);
query('virtualdocs/the whole package', 'data.t = x', [mod('v := 1\ns contains 2 if true')], [{ x: { v: 1, s: [2] } }]);
aborting(
  'virtualdocs/object conflict',
  'o := {"a": 1} if true\no := {"a": 2} if true\np := o',
  'test-0.rego:4:1: var assignment conflict',
);
rule('virtualdocs/undefined rule', 'q if false\np := q', UNDEFINED);

// withkeyword
rule('withkeyword/replace input', 'q := input.x\np := y if y := q with input as {"x": 7}', 7);
rule('withkeyword/replace a path of input', 'q := input.x\np := y if y := q with input.x as 3', 3, { input: { x: 1 } });
rule('withkeyword/replace base data', 'q := data.cfg.lim\np := y if y := q with data.cfg.lim as 9', 9, {
  data: { cfg: { lim: 1 } },
});
rule('withkeyword/replace a virtual document', 'v := 1\nw := v + 1\np := y if y := w with data.t.v as 10', 11);
rule('withkeyword/composite value', 'q := input.x\np := y if y := q with input as {"x": [1, {"y": 2}]}', [1, { y: 2 }]);
rule(
  'withkeyword/replace a builtin function',
  'q := count([1, 2])\nmock(_) := 42\np := y if y := q with count as mock',
  42,
);
rule('withkeyword/replace a function with a value', 'f(x) := x\nq := f(1)\np := y if y := q with f as 5', 5);
setRule(
  'withkeyword/with inside iteration',
  'q := input.x\np contains v if {\n  some i in [1, 2]\n  v := q with input.x as i\n}',
  [1, 2],
);
rule(
  'withkeyword/comprehension sees each replacement',
  'c := [x | some x in input.xs]\np := [a, b] if {\n  a := c with input.xs as [1]\n  b := c with input.xs as [2]\n}',
  [[1], [2]],
);
rule('withkeyword/with on a negation', 'n if input.z == 7\np if not n with input.z as 8', true);
setRule(
  'withkeyword/replace a set-valued rule',
  's contains x if some x in [1]\nq := count(s)\np contains n if n := q with data.t.s as {1, 2, 3}',
  [3],
);

// templatestrings (OPA 1.x template strings: v1/ast/compile.go rewriteTemplateString, topdown/template_string.go)
rule(
  'templatestrings/text and expressions',
  'p := $"hello {input.name}, {count(input.xs)} items"',
  'hello bob, 2 items',
  {
    input: { name: 'bob', xs: [1, 2] },
  },
);
rule('templatestrings/raw multi-line with an escaped brace', 'p := $`a\n{1 + 1}\\{b}`', 'a\n2{b}');
rule('templatestrings/undefined expression', 'p := $"[{input.missing}]"', '[<undefined>]');
rule('templatestrings/composites as Rego terms', 'p := $"{[1, "a"]} {{"k": {2}}} {null}"', '[1, "a"] {"k": {2}} null');
rule('templatestrings/in a function', 'f(x) := $"<{x}>"\np := f("y")', '<y>');
aborting(
  'templatestrings/more than one value',
  'p := $"{[1, 2][_]}"',
  'eval_conflict_error: template-strings must not produce multiple outputs',
);
