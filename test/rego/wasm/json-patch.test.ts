// json.patch runs natively (runtime/assembly/jsonpatch.ts) with the semantics of OPA's edit tree
// (topdown/json.go builtinJSONPatch over internal/edittree); the host implementation serves modules built by
// `opa build -t wasm`. OPA's own cases (test/fixtures/rego/json-patch) go through the whole toolchain and
// through the host builtin; sets and non-string keys, which JSON cannot carry, through Rego literals; and
// sequences whose outcome depends on the edit tree's state are followed as OPA's source takes them.
import { readFileSync } from 'node:fs';
import { beforeAll, describe, expect, it } from 'vitest';
import { call } from '../builtins/call.ts';
import { loadModule, type Evaluate } from '../semantic/fixtures/wasm-module.ts';
import { builtinPolicy, evalRaw, loadBoth, thrown, type BothPaths } from './ir-builder.ts';

interface JsonCase {
  comment: string;
  doc: unknown;
  patch: unknown;
  expected?: unknown;
  undefined?: true;
  defined?: true;
}
interface RegoCase {
  comment: string;
  doc: string;
  patch: string;
  expected?: string;
  undefined?: true;
}
const fixture = JSON.parse(
  readFileSync(new URL('../../fixtures/rego/json-patch/opa-cases.json', import.meta.url), 'utf8'),
) as { cases: JsonCase[]; setCases: RegoCase[] };

/** What OPA gives for a case: its value, or one of the two outcomes without one. */
const outcome = (c: JsonCase) => (c.undefined ? 'undefined' : c.defined ? 'defined' : 'value');

// Rego literals the tests below patch, each with the value (Rego text) OPA's edit tree gives, or undefined.
// stale_*: a step into an array element the patch did not insert reads the original element at that index
// (EditTree.Unfold falls back to the original array) and puts it there, replacing the current one.
const literalCases: Array<[name: string, call: string, want: string | undefined]> = [
  [
    'stale_test',
    'json.patch(["a", "b", "c"], [{"op": "remove", "path": "/0"}, {"op": "test", "path": "/0", "value": "a"}])',
    '["a", "c"]',
  ],
  [
    'stale_add',
    'json.patch([[1], [2]], [{"op": "add", "path": "/0", "value": "x"}, {"op": "add", "path": "/1/-", "value": 9}])',
    '["x", [2, 9], [2]]',
  ],
  [
    'stale_past_original',
    'json.patch([[1]], [{"op": "add", "path": "/0", "value": "x"}, {"op": "add", "path": "/1/-", "value": 5}])',
    undefined,
  ],
  [
    'inserted_element_edited',
    'json.patch([[1]], [{"op": "add", "path": "/0", "value": [0]}, {"op": "add", "path": "/0/-", "value": 5}])',
    '[[0, 5], [1]]',
  ],
  ['dash_mid_path', 'json.patch({"a": [[1]]}, [{"op": "add", "path": "/a/-/0", "value": 1}])', undefined],
  // non-string keys: an array path names them as they are; a string path only ever names string keys
  [
    'number_key_replace',
    'json.patch({1: "one", "b": 2}, [{"op": "replace", "path": [1], "value": "uno"}])',
    '{1: "uno", "b": 2}',
  ],
  [
    'number_key_string_path',
    'json.patch({1: "one"}, [{"op": "add", "path": "/1", "value": "x"}])',
    '{1: "one", "1": "x"}',
  ],
  ['number_key_remove', 'json.patch({1: "one", "b": 2}, [{"op": "remove", "path": [1]}])', '{"b": 2}'],
  ['number_key_test_string', 'json.patch({1: "one"}, [{"op": "test", "path": "/1", "value": "one"}])', undefined],
  [
    'bool_key_move',
    'json.patch({true: {"x": 1}}, [{"op": "move", "from": [true, "x"], "path": [false]}])',
    '{false: 1, true: {}}',
  ],
  // sets: an element is named by itself, and an added one must be its own name
  ['set_copy', 'json.patch({"s": {1}}, [{"op": "copy", "from": "/s", "path": "/t"}])', '{"s": {1}, "t": {1}}'],
  ['set_add_number', 'json.patch({"s": {1}}, [{"op": "add", "path": ["s", 2], "value": 2}])', '{"s": {1, 2}}'],
  [
    'set_add_by_string_path',
    'json.patch({"s": {1}}, [{"op": "add", "path": "/s/x", "value": "x"}])',
    '{"s": {1, "x"}}',
  ],
  ['set_number_by_string_path', 'json.patch({"s": {1}}, [{"op": "add", "path": "/s/2", "value": 2}])', undefined],
  ['set_test_whole', 'json.patch({"s": {1, 2}}, [{"op": "test", "path": "/s", "value": {2, 1}}])', '{"s": {1, 2}}'],
  ['set_test_array', 'json.patch({"s": {1, 2}}, [{"op": "test", "path": "/s", "value": [1, 2]}])', undefined],
  [
    'set_composite_edits',
    'json.patch({"s": {[1], [2]}}, [{"op": "add", "path": ["s", [1], "-"], "value": 5}, {"op": "remove", "path": ["s", [2]]}])',
    '{"s": {[1, 5]}}',
  ],
  [
    'set_object_element',
    'json.patch({{"k": 1}}, [{"op": "add", "path": [{"k": 1}, "j"], "value": 2}])',
    '{{"j": 2, "k": 1}}',
  ],
  ['set_edit_merges', 'json.patch({[0], [0, 1]}, [{"op": "add", "path": [[0], "-"], "value": 1}])', '{[0, 1]}'],
  [
    'set_remove_readd',
    'json.patch({"s": {"a", "b"}}, [{"op": "remove", "path": "/s/a"}, {"op": "add", "path": "/s/a", "value": "a"}])',
    '{"s": {"a", "b"}}',
  ],
  [
    'set_remove_twice',
    'json.patch({"s": {"a"}}, [{"op": "remove", "path": "/s/a"}, {"op": "remove", "path": "/s/a"}])',
    undefined,
  ],
  ['set_missing_element', 'json.patch({"s": {"a"}}, [{"op": "remove", "path": "/s/b"}])', undefined],
  ['set_in_array', 'json.patch([{"a"}], [{"op": "add", "path": "/0/b", "value": "b"}])', '[{"a", "b"}]'],
  // array indexes: what strconv.ParseInt accepts, without a leading zero; integer numbers in an array path
  ['index_plus', 'json.patch([1, 2, 3], [{"op": "remove", "path": "/+1"}])', '[1, 3]'],
  ['index_minus_zero', 'json.patch([1, 2, 3], [{"op": "remove", "path": "/-0"}])', '[2, 3]'],
  ['index_number', 'json.patch([1, 2, 3], [{"op": "remove", "path": [1]}])', '[1, 3]'],
  ['index_decimal_number', 'json.patch([1, 2, 3], [{"op": "remove", "path": [1.0]}])', undefined],
  ['index_dash_remove', 'json.patch([1, 2, 3], [{"op": "remove", "path": "/-"}])', undefined],
  ['index_append_number', 'json.patch([1], [{"op": "add", "path": [1], "value": 2}])', '[1, 2]'],
  // paths: leading slashes are dropped (all of them), "" is the document
  ['leading_slashes', 'json.patch({"a": 1, "b": 2}, [{"op": "remove", "path": "//a"}])', '{"b": 2}'],
  ['no_leading_slash', 'json.patch({"foo": "bar"}, [{"op": "add", "path": "foo", "value": "baz"}])', '{"foo": "baz"}'],
  ['root_replace', 'json.patch({"a": 1}, [{"op": "remove", "path": ""}, {"op": "add", "path": "", "value": 1}])', '1'],
  [
    'root_test_after_remove',
    'json.patch({"a": 1}, [{"op": "remove", "path": ""}, {"op": "test", "path": "", "value": null}])',
    undefined,
  ],
  ['root_move_into_itself', 'json.patch({"a": 1}, [{"op": "move", "from": "", "path": "/b"}])', undefined],
  [
    'root_copy_into_itself',
    'json.patch({"a": 1}, [{"op": "copy", "from": "", "path": "/b"}])',
    '{"a": 1, "b": {"a": 1}}',
  ],
  // attributes OPA does not read for an operation are ignored
  [
    'move_ignores_value',
    'json.patch({"foo": "bar"}, [{"op": "move", "path": "/baz", "value": "qux", "from": "/foo"}])',
    '{"baz": "bar"}',
  ],
  ['path_is_a_set', 'json.patch({"a": 1}, [{"op": "remove", "path": {"a"}}])', undefined],
  ['empty_path_array', 'json.patch({"a": 1}, [{"op": "replace", "path": [], "value": 2}])', '2'],
];

const moduleSource = () => {
  const lines = ['package t', '', 'got := json.patch(input.doc, input.patch)', ''];
  fixture.setCases.forEach((c, i) => {
    lines.push(`set_${i} := json.patch(${c.doc}, ${c.patch})`);
    if (c.expected) lines.push(`set_${i}_same if set_${i} == ${c.expected}`);
  });
  for (const [name, patch, want] of literalCases) {
    lines.push(`${name} := ${patch}`);
    if (want !== undefined) lines.push(`${name}_same if ${name} == ${want}`);
  }
  // sets stay sets, also after a copy and inside arrays
  lines.push('kinds := [is_set(set_0.foo), is_set(set_copy.t), is_set(set_in_array[0]), is_set(set_4)]');
  return lines.join('\n');
};

const entrypoints = () => [
  't/got',
  't/kinds',
  ...fixture.setCases.flatMap((c, i) => [`t/set_${i}`, ...(c.expected ? [`t/set_${i}_same`] : [])]),
  ...literalCases.flatMap(([name, , want]) => [`t/${name}`, ...(want !== undefined ? [`t/${name}_same`] : [])]),
];

let evaluate: Evaluate;
beforeAll(async () => {
  evaluate = await loadModule(moduleSource(), entrypoints());
});

describe("json.patch: OPA's test cases", () => {
  it.each(fixture.cases.map((c) => [c.comment, c] as const))('%s (native)', (_comment, c) => {
    const got = evaluate('t/got', { doc: c.doc, patch: c.patch });
    if (outcome(c) === 'value') expect(got).toEqual(c.expected);
    else if (outcome(c) === 'undefined') expect(got).toBeUndefined();
    else expect(got).toBeDefined();
  });

  it.each(fixture.cases.map((c) => [c.comment, c] as const))('%s (host, for OPA-built modules)', (_comment, c) => {
    const got = call('json.patch', c.doc, c.patch);
    if (outcome(c) === 'value') expect(got).toEqual(c.expected);
    else if (outcome(c) === 'undefined') expect(got).toBeUndefined();
    else expect(got).toBeDefined();
  });

  it.each(fixture.setCases.map((c, i) => [c.comment, i, c] as const))('sets: %s', (_comment, i, c) => {
    if (c.expected) expect(evaluate(`t/set_${i}_same`)).toBe(true);
    else expect(evaluate(`t/set_${i}`)).toBeUndefined();
  });

  it('sets stay sets', () => {
    expect(evaluate('t/kinds')).toEqual([true, true, true, true]);
  });
});

describe('json.patch: Rego values and the edit tree', () => {
  it.each(literalCases)('%s', (name, _call, want) => {
    if (want === undefined) expect(evaluate(`t/${name}`)).toBeUndefined();
    else expect(evaluate(`t/${name}_same`), `${name} = ${JSON.stringify(evaluate(`t/${name}`))}`).toBe(true);
  });

  it('the host agrees where JSON carries the values', () => {
    // a JSON object key is a string, so the host names it by the segment's JSON text
    expect(call('json.patch', { '1': 'one', b: 2 }, [{ op: 'replace', path: [1], value: 'uno' }])).toEqual({
      '1': 'uno',
      b: 2,
    });
    expect(
      call(
        'json.patch',
        ['a', 'b', 'c'],
        [
          { op: 'remove', path: '/0' },
          { op: 'test', path: '/0', value: 'a' },
        ],
      ),
    ).toEqual(['a', 'c']);
    expect(
      call(
        'json.patch',
        [[1], [2]],
        [
          { op: 'add', path: '/0', value: 'x' },
          { op: 'add', path: '/1/-', value: 9 },
        ],
      ),
    ).toEqual(['x', [2, 9], [2]]);
    expect(call('json.patch', [1, 2, 3], [{ op: 'remove', path: '/+1' }])).toEqual([1, 3]);
    expect(call('json.patch', { a: 1, b: 2 }, [{ op: 'remove', path: '//a' }])).toEqual({ b: 2 });
    expect(call('json.patch', { a: 1 }, [{ op: 'copy', from: '', path: '/b' }])).toEqual({ a: 1, b: { a: 1 } });
    // a set reaches the host as a sorted array: an unedited array asked for a non-index segment stands for one
    expect(call('json.patch', { s: ['a', 'b'] }, [{ op: 'add', path: '/s/0a', value: '0a' }])).toEqual({
      s: ['0a', 'a', 'b'],
    });
  });
});

describe('json.patch: errors', () => {
  let strict: BothPaths;
  let lax: BothPaths;
  beforeAll(async () => {
    strict = await loadBoth(builtinPolicy(['json.patch'], 'p.rego'), { strictBuiltinErrors: true });
    lax = await loadBoth(builtinPolicy(['json.patch'], 'p.rego'));
  });
  const raw = (p: BothPaths, args: string) => evalRaw(p.fast, args, p.fast.entrypoints['json.patch']);

  it('an operation that cannot be applied is undefined, also with strict builtin errors (OPA)', () => {
    for (const p of [strict, lax]) {
      for (const pol of [p.fast, p.slow]) {
        expect(pol.evaluate([{ a: 1 }, [{ op: 'test', path: '/a', value: 2 }]], 'json.patch')).toEqual([]);
        expect(pol.evaluate([{ a: 1 }, [{ op: 'remove', path: 1 }]], 'json.patch')).toEqual([]);
        expect(pol.evaluate([{ a: 1 }, ['add']], 'json.patch')).toEqual([]);
        expect(pol.evaluate([{ a: 1 }, [{ path: '/a' }]], 'json.patch')).toEqual([]);
        expect(pol.evaluate([{ a: 1 }, [{ op: 'add', path: '/b', value: 2 }]], 'json.patch')).toEqual([
          { result: { a: 1, b: 2 } },
        ]);
      }
      expect(raw(p, '[{"s": {"a"}}, [{"op": "remove", "path": "/s/a"}, {"op": "remove", "path": "/s/a"}]]')).toBe('[]');
    }
  });

  it('operand 2 must be an array (eval_type_error strict, undefined otherwise)', () => {
    for (const pol of [strict.fast, strict.slow]) {
      expect(thrown(() => pol.evaluate([{ a: 1 }, { op: 'add' }], 'json.patch'))).toBe(
        'p.rego:3: eval_type_error: json.patch: operand 2 must be array but got object',
      );
    }
    expect(thrown(() => raw(strict, '[{"a": 1}, {{"op": "remove", "path": "/a"}}]'))).toBe(
      'p.rego:3: eval_type_error: json.patch: operand 2 must be array but got set',
    );
    expect(lax.fast.evaluate([{ a: 1 }, 'x'], 'json.patch')).toEqual([]);
    expect(raw(lax, '[{"a": 1}, {{"op": "remove", "path": "/a"}}]')).toBe('[]');
    expect(() => call('json.patch', { a: 1 }, { op: 'add' })).toThrow(
      'eval_type_error: json.patch: operand 2 must be array but got object',
    );
  });

  it("where OPA's evaluator itself fails: a builtin error", () => {
    // a path through a scalar set element the patch removed, and removing the whole document
    const through = '[{"s": {"a"}}, [{"op": "remove", "path": "/s/a"}, {"op": "test", "path": "/s/a", "value": "a"}]]';
    expect(thrown(() => raw(strict, through))).toBe(
      'p.rego:3: eval_builtin_error: json.patch: a path leads through a set element the patch removed',
    );
    expect(raw(lax, through)).toBe('[]');
    for (const pol of [strict.fast, strict.slow]) {
      expect(thrown(() => pol.evaluate([{ a: 1 }, [{ op: 'remove', path: '' }]], 'json.patch'))).toBe(
        'p.rego:3: eval_builtin_error: json.patch: the patch removes the whole document',
      );
    }
    expect(lax.slow.evaluate([{ a: 1 }, [{ op: 'remove', path: '' }]], 'json.patch')).toEqual([]);
    expect(() => call('json.patch', { a: 1 }, [{ op: 'remove', path: '' }])).toThrow(
      'eval_builtin_error: json.patch: the patch removes the whole document',
    );
    expect(() =>
      call('json.patch', { s: ['a'] }, [
        { op: 'remove', path: '/s/a' },
        { op: 'add', path: '/s/a/x', value: 1 },
      ]),
    ).toThrow('eval_builtin_error: json.patch: a path leads through a set element the patch removed');
  });
});
