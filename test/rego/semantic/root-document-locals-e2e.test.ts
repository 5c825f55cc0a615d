// In a Rego v0 module, `input := …` and `data := …` in a body declare a local that shadows the root document
// for the rest of the scope, as OPA's rewriteDeclaredAssignment does (its checkKeywordOverrides refuses them
// in Rego v1 modules and in strict mode); `with input as input` then replaces the input by that local, since
// a `with` target is never rewritten. Compiled by our pipeline, linked to Wasm and evaluated by the unmodified
// opa-wasm host; expected values follow OPA's semantics (worked out by hand).
import { describe, expect, it } from 'vitest';
import { compileErrors, loadModule as load } from './fixtures/wasm-module.ts';

const V0 = { regoVersion: 0 } as const;

describe('a local named input or data (Rego v0)', () => {
  const src = `package t
import future.keywords.if

allowed if input.user == "alice"

local_input := input.user if {
	input := {"user": "bob"}
}

bare := v if {
	input := [1, 2]
	v := input
}

with_local if {
	input := {"user": "alice"}
	allowed with input as input
}

local_data := data.limit if {
	data := {"limit": 3}
}

in_pattern := input.n if {
	[input, _] := [{"n": 7}, 0]
}

in_comprehension := [x | input := {"k": 1}; x := input.k]

outside := input.user
`;

  it('compiles without errors', () => {
    expect(compileErrors(src, V0)).toEqual([]);
  });

  it('shadows the root document after its declaration', async () => {
    const ev = await load(
      src,
      ['t/local_input', 't/bare', 't/with_local', 't/local_data', 't/in_pattern', 't/in_comprehension', 't/outside'],
      { limit: 99 },
      V0,
    );
    const input = { user: 'carol' };
    expect(ev('t/local_input', input)).toBe('bob');
    expect(ev('t/bare', input)).toEqual([1, 2]);
    // the `with` target stays the input document; its value is the local
    expect(ev('t/with_local', input)).toBe(true);
    expect(ev('t/local_data', input)).toBe(3);
    expect(ev('t/in_pattern', input)).toBe(7);
    expect(ev('t/in_comprehension', input)).toEqual([1]);
    // rules without the local still read the real documents
    expect(ev('t/outside', input)).toBe('carol');
  });

  it('is "referenced above" after a ref into the root document, as OPA reports', () => {
    expect(
      compileErrors(
        `package t
p {
	input.x == 1
	input := 2
}
`,
        V0,
      ),
    ).toEqual(['t.rego:4:2: rego_compile_error: var input referenced above']);
    // a bare `input` is no reference to a var (OPA stops at root refs)
    expect(
      compileErrors(
        `package t
p {
	y := input
	input := 2
	y != input
}
`,
        V0,
      ),
    ).toEqual([]);
  });
});

describe('a local named input or data (Rego v1)', () => {
  it("is OPA's keyword override error, at the assignment", () => {
    expect(compileErrors('package t\n\np if {\n\tinput := 2\n\tinput == 2\n}\n')).toEqual([
      't.rego:4:2: rego_compile_error: variables must not shadow input (use a different variable name)',
    ]);
    expect(compileErrors('package t\n\nq := [x | data := {"k": 1}; x := data.k]\n')).toEqual([
      't.rego:3:11: rego_compile_error: variables must not shadow data (use a different variable name)',
    ]);
  });
});
