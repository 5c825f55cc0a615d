// json.verify_schema and json.match_schema: compiled by our compiler, evaluated by opa-wasm calling the
// host implementations. Result and error-object shapes are OPA's (topdown/jsonschema.go, gojsonschema's
// DefaultLocale wording); the expected values are worked out by hand from those sources.
import { describe, expect, it, beforeAll, vi } from 'vitest';
import { compileBundle, evaluateEntrypoint, loadBundle } from '../../../src/rego/index.ts';

const POLICY = `package js

verify := json.verify_schema(input.schema)

match := json.match_schema(input.doc, input.schema)

match_text := json.match_schema(json.marshal(input.doc), json.marshal(input.schema))

valid if {
	[true, _] := json.match_schema(input.doc, input.schema)
}
`;

let ev: (ep: string, input: unknown) => unknown;

beforeAll(async () => {
  const built = await compileBundle({
    sources: [{ file: 'js.rego', text: POLICY }],
    entrypoints: ['js/verify', 'js/match', 'js/match_text', 'js/valid'],
  });
  const loaded = await loadBundle(built.bundle);
  ev = (ep, input) => {
    const rs = evaluateEntrypoint(loaded, ep, input) as { result: unknown }[];
    return rs.length ? rs[0].result : undefined;
  };
}, 120_000);

const PERSON = {
  type: 'object',
  properties: {
    id: { type: 'integer', minimum: 1 },
    name: { type: 'string', minLength: 2, pattern: '^[A-Z]' },
    tags: { type: 'array', items: { type: 'string' }, maxItems: 2, uniqueItems: true },
    role: { enum: ['admin', 'user'] },
  },
  required: ['id', 'name'],
  additionalProperties: false,
};

const err = (field: string, type: string, desc: string) => ({ error: `${field}: ${desc}`, type, field, desc });

describe('json.match_schema', () => {
  it('a matching document: [true, []]', () => {
    const input = { doc: { id: 3, name: 'Ann', tags: ['a'] }, schema: PERSON };
    expect(ev('js/match', input)).toEqual([true, []]);
    expect(ev('js/match_text', input)).toEqual([true, []]);
    expect(ev('js/valid', input)).toBe(true);
  });

  it('errors carry gojsonschema fields, types and wording', () => {
    const input = { doc: { id: 'x', tags: ['a', 'a', 'b'], role: 'guest', extra: 1 }, schema: PERSON };
    const [valid, errors] = ev('js/match', input) as [boolean, unknown[]];
    expect(valid).toBe(false);
    expect(errors).toEqual(
      expect.arrayContaining([
        err('(Root)', 'required', 'name is required'),
        err('(Root)', 'additional_property_not_allowed', 'Additional property extra is not allowed'),
        err('id', 'invalid_type', 'Invalid type. Expected: integer, given: string'),
        err('tags', 'array_max_items', 'Array must have at most 2 items'),
        err('tags', 'unique', 'array items[0,1] must be unique'),
        err('role', 'enum', 'role must be one of the following: "admin", "user"'),
      ]),
    );
    expect(errors).toHaveLength(6);
    expect(ev('js/valid', input)).toBeUndefined();
  });

  it('numbers, strings and nested fields', () => {
    const [, errors] = ev('js/match', { doc: { id: 0, name: 'b' }, schema: PERSON }) as [boolean, unknown[]];
    expect(errors).toEqual(
      expect.arrayContaining([
        err('id', 'number_gte', 'Must be greater than or equal to 1'),
        err('name', 'string_gte', 'String length must be greater than or equal to 2'),
        err('name', 'pattern', "Does not match pattern '^[A-Z]'"),
      ]),
    );
    const nested = { type: 'object', properties: { a: { type: 'array', items: { type: ['integer', 'null'] } } } };
    expect(ev('js/match', { doc: { a: [1, 'x'] }, schema: nested })).toEqual([
      false,
      [err('a.1', 'invalid_type', 'Invalid type. Expected: [integer,null], given: string')],
    ]);
  });

  it('each draft by $schema: 4, 6, 7, 2019-09, 2020-12', () => {
    // Draft 4's boolean exclusiveMaximum; 6+'s numeric one; 7's if/then; 2019-09 dependentRequired;
    // 2020-12 prefixItems. Documents are objects: OPA refuses other operand types.
    const at = (schema: Record<string, unknown>, n: Record<string, unknown>) => ({
      ...schema,
      type: 'object',
      properties: { n },
    });
    const d4 = at({ $schema: 'http://json-schema.org/draft-04/schema#' }, { maximum: 5, exclusiveMaximum: true });
    expect(ev('js/match', { doc: { n: 5 }, schema: d4 })).toEqual([
      false,
      [err('n', 'number_lt', 'Must be less than 5')],
    ]);
    expect(ev('js/match', { doc: { n: 4 }, schema: d4 })).toEqual([true, []]);
    const d6 = at({ $schema: 'http://json-schema.org/draft-06/schema#' }, { exclusiveMaximum: 5 });
    expect(ev('js/match', { doc: { n: 5 }, schema: d6 })).toEqual([
      false,
      [err('n', 'number_lt', 'Must be less than 5')],
    ]);
    const d7 = at(
      { $schema: 'http://json-schema.org/draft-07/schema#' },
      // biome-ignore lint/suspicious/noThenProperty: `then` is a JSON Schema keyword here
      { if: { minimum: 10 }, then: { multipleOf: 5 } },
    );
    expect(ev('js/match', { doc: { n: 12 }, schema: d7 })).toEqual([
      false,
      [
        err('n', 'multiple_of', 'Must be a multiple of 5'),
        err('n', 'condition_then', 'Must validate "then" as "if" was valid'),
      ],
    ]);
    expect(ev('js/match', { doc: { n: 5 }, schema: d7 })).toEqual([true, []]);
    expect(ev('js/match', { doc: 5, schema: d7 })).toBeUndefined();
    const d2019 = { $schema: 'https://json-schema.org/draft/2019-09/schema', dependentRequired: { a: ['b'] } };
    expect(ev('js/match', { doc: { a: 1 }, schema: d2019 })).toEqual([
      false,
      [err('(Root)', 'missing_dependency', 'Has a dependency on b')],
    ]);
    const d2020 = {
      $schema: 'https://json-schema.org/draft/2020-12/schema',
      prefixItems: [{ type: 'string' }],
      items: false,
    };
    expect(ev('js/match', { doc: ['a'], schema: d2020 })).toEqual([true, []]);
    expect((ev('js/match', { doc: ['a', 1], schema: d2020 }) as [boolean])[0]).toBe(false);
  });

  it('writes nothing to the console for a format it does not check', () => {
    const warn = vi.spyOn(console, 'warn').mockImplementation(() => {});
    const log = vi.spyOn(console, 'log').mockImplementation(() => {});
    try {
      const schema = { properties: { home: { type: 'string', format: 'iri-reference-unknown-here' } } };
      expect(ev('js/match', { doc: { home: 'x' }, schema })).toEqual([true, []]);
      expect(warn).not.toHaveBeenCalled();
      expect(log).not.toHaveBeenCalled();
    } finally {
      warn.mockRestore();
      log.mockRestore();
    }
  });

  it('an invalid schema or JSON text is a builtin error: undefined (OPA non-strict)', () => {
    expect(ev('js/match', { doc: {}, schema: { type: 'nope' } })).toBeUndefined();
    expect(ev('js/match', { doc: '{bad', schema: {} })).toBeUndefined();
  });
});

describe('json.match_schema: anyOf / oneOf errors as gojsonschema reports them', () => {
  const err = (field: string, type: string, desc: string) => ({ error: `${field}: ${desc}`, type, field, desc });

  it('a failing anyOf: the combinator, then the errors of the closest branch only', () => {
    // Branch 0 fails its own type (gojsonschema stops there: lowest score); branch 1 gets further.
    const schema = { anyOf: [{ type: 'string' }, { type: 'object', required: ['a', 'b'] }] };
    expect(ev('js/match', { doc: {}, schema })).toEqual([
      false,
      [
        err('(Root)', 'number_any_of', 'Must validate at least one schema (anyOf)'),
        err('(Root)', 'required', 'a is required'),
        err('(Root)', 'required', 'b is required'),
      ],
    ]);
  });

  it('a oneOf no branch passes: the combinator, then the first of the closest branches', () => {
    const schema = { oneOf: [{ required: ['b'] }, { required: ['c', 'd'] }, { required: ['e'] }] };
    expect(ev('js/match', { doc: { a: 1 }, schema })).toEqual([
      false,
      [
        err('(Root)', 'number_one_of', 'Must validate one and only one schema (oneOf)'),
        err('(Root)', 'required', 'b is required'),
      ],
    ]);
  });

  it('a oneOf several branches pass: the combinator alone', () => {
    const schema = { properties: { n: { oneOf: [{ type: 'number' }, { minimum: 1 }, { maximum: 0 }] } } };
    expect(ev('js/match', { doc: { n: 5 }, schema })).toEqual([
      false,
      [err('n', 'number_one_of', 'Must validate one and only one schema (oneOf)')],
    ]);
  });

  it('a oneOf under array items: each element picks its own closest branch', () => {
    // One schema path, three instances: [1, 2] is closest to the array branch (it gets past `type`),
    // 3 and true fail both branches' types (a tie: the first, the string branch).
    const schema = {
      type: 'array',
      items: { oneOf: [{ type: 'string' }, { type: 'array', items: { type: 'string' } }] },
    };
    const oneOf = (field: string) => err(field, 'number_one_of', 'Must validate one and only one schema (oneOf)');
    const type = (field: string, given: string, expected = 'string') =>
      err(field, 'invalid_type', `Invalid type. Expected: ${expected}, given: ${given}`);
    expect(ev('js/match', { doc: [[1, 2], 3, 'ok', true], schema })).toEqual([
      false,
      [
        oneOf('0'),
        type('0.0', 'integer'),
        type('0.1', 'integer'),
        oneOf('1'),
        type('1', 'integer'),
        oneOf('3'),
        type('3', 'boolean'),
      ],
    ]);
  });

  it('nested: a dropped branch takes its inner combinator with it', () => {
    const schema = {
      anyOf: [
        { type: 'object', required: ['x'] },
        {
          type: 'object',
          properties: { y: { anyOf: [{ type: 'string' }, { type: 'number' }] } },
          required: ['z', 'w'],
        },
      ],
    };
    expect(ev('js/match', { doc: { y: true }, schema })).toEqual([
      false,
      [
        err('(Root)', 'number_any_of', 'Must validate at least one schema (anyOf)'),
        err('(Root)', 'required', 'x is required'),
      ],
    ]);
  });
});

describe('json.verify_schema', () => {
  it('[true, null] for a valid schema, [false, "jsonschema: …"] otherwise', () => {
    expect(ev('js/verify', { schema: PERSON })).toEqual([true, null]);
    expect(ev('js/verify', { schema: '{"type": "string"}' })).toEqual([true, null]);
    const [ok, msg] = ev('js/verify', { schema: { type: 'nope' } }) as [boolean, string];
    expect(ok).toBe(false);
    expect(msg).toMatch(/^jsonschema: /);
    expect(ev('js/verify', { schema: '{not json' })).toEqual([false, 'jsonschema: invalid JSON string']);
  });
});
