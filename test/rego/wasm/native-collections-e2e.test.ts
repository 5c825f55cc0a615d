// object.union/union_n/filter/remove/subset, json.filter/remove and walk run natively, so the sets and non-string keys inside
// their operands come back as they went in (OPA's topdown keeps Rego values; a host builtin would see JSON,
// where a set is an array and every key a string). Checked in Rego, through the whole toolchain and opa-wasm.
import { describe, expect, it, beforeAll } from 'vitest';
import { loadModule, type Evaluate } from '../semantic/fixtures/wasm-module.ts';

const src = `package t

union_keeps_sets if {
	u := object.union({"a": {1}, "n": {"x": {2}}}, {"b": 2, "n": {"y": 1}})
	is_set(u.a)
	is_set(u.n.x)
}

union_keeps_number_keys if object.union({"p": 1}, {"v": {3: "id"}}) == {"p": 1, "v": {3: "id"}}

union_n_keeps_sets if {
	u := object.union_n([{"relevance": {"ENTZ"}}, {"context": {"ids": {"foo"}}}])
	is_set(u.relevance)
	is_set(u.context.ids)
	u.relevance == {"ENTZ"}
}

filter_remove_keep_sets if {
	is_set(object.filter({"a": {1}, "b": 2}, {"a"}).a)
	is_set(object.remove({"a": {1}, "b": 2}, ["b"]).a)
	object.filter({1: "one", "b": 2}, [1]) == {1: "one"}
}

# A set element is reached by itself, not by an index.
walk_paths := [p | walk({"s": {"x"}, "l": ["y"]}, [p, _])]

walk_values_keep_sets if {
	some p, v
	walk({"a": {"s": {1}}}, [p, v])
	p == ["a", "s"]
	is_set(v)
}

subset_array_of_set if object.subset(["create", "bar", "delete"], {"create", "delete"})

subset_nested_set if object.subset({"a": {1, 2}}, {"a": {1}})

json_paths_keep_sets_and_keys if {
	f := json.filter({"a": {"s": {"k", "l"}, "n": {3: "x", 4: "y"}}}, ["a/s", "a/n"])
	is_set(f.a.s)
	f.a.n == {3: "x", 4: "y"}
	r := json.remove({"a": {"s": {"k", "l"}, "t": 1}}, ["a/t"])
	r == {"a": {"s": {"k", "l"}}}
	json.remove({"s": {"k", "l"}}, [["s", "k"]]) == {"s": {"l"}}
}

integral_decimals := [sprintf("%d", [floor(1.0)]), sprintf("%d", [round(2.0)]), json.marshal(ceil(3.0)), json.marshal(abs(4.0))]
`;

let evaluate: Evaluate;
beforeAll(async () => {
  evaluate = await loadModule(src, [
    't/union_keeps_sets',
    't/union_keeps_number_keys',
    't/union_n_keeps_sets',
    't/filter_remove_keep_sets',
    't/walk_paths',
    't/walk_values_keep_sets',
    't/subset_array_of_set',
    't/subset_nested_set',
    't/integral_decimals',
    't/json_paths_keep_sets_and_keys',
  ]);
});

describe('native collection builtins keep Rego values', () => {
  it.each([
    'union_keeps_sets',
    'union_keeps_number_keys',
    'union_n_keeps_sets',
    'filter_remove_keep_sets',
    'walk_values_keep_sets',
    'subset_array_of_set',
    'subset_nested_set',
    'json_paths_keep_sets_and_keys',
  ])('%s', (rule) => {
    expect(evaluate(`t/${rule}`)).toBe(true);
  });

  it('walk reaches a set element by the element itself, in document order', () => {
    expect(evaluate('t/walk_paths')).toEqual([[], ['l'], ['l', 0], ['s'], ['s', 'x']]);
  });

  it('floor/round/ceil/abs of an integral decimal is an integer, as OPA prints it', () => {
    expect(evaluate('t/integral_decimals')).toEqual(['1', '2', '3', '4']);
  });
});
