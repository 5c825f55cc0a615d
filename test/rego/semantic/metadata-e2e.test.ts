// rego.metadata.rule() / rego.metadata.chain() resolved at compile time as OPA's
// rewriteRegoMetadataCalls does, and METADATA `entrypoint: true` adding entrypoints to a build.
// Compiled by our pipeline, evaluated by the unmodified opa-wasm host; the expected values are the
// ones OPA's compiler tests give (ast/compile_test.go TestCompilerRewriteRegoMetadataCalls) or follow
// from OPA's AnnotationSet.Chain order: rule, document, package, enclosing subpackages (innermost first).
import { describe, expect, it } from 'vitest';
import { compileBundle, evaluateEntrypoint, loadBundle, type RegoSource } from '../../../src/rego/index.ts';

async function build(sources: RegoSource[], entrypoints: string[]) {
  const built = await compileBundle({ sources, entrypoints });
  const loaded = await loadBundle(built.bundle);
  return {
    built,
    ev: (ep: string, input?: unknown): unknown => {
      const rs = evaluateEntrypoint(loaded, ep, input) as { result: unknown }[];
      return rs.length ? rs[0].result : undefined;
    },
  };
}

describe('rego.metadata', () => {
  it('without METADATA: chain() is the rule path alone, rule() is {}', async () => {
    const { ev } = await build(
      [
        {
          file: 'test.rego',
          text: `package test

p if {
	rego.metadata.chain()[0].path == ["test", "p"]
	rego.metadata.rule() == {}
}

c := rego.metadata.chain()
r := rego.metadata.rule()
`,
        },
      ],
      ['test/p', 'test/c', 'test/r'],
    );
    expect(ev('test/p')).toBe(true);
    expect(ev('test/c')).toEqual([{ path: ['test', 'c'] }]);
    expect(ev('test/r')).toEqual({});
  });

  it('with METADATA on package, subpackages, document and rule: OPA chain order and shape', async () => {
    const { ev } = await build(
      [
        {
          file: 'root.rego',
          text: `# METADATA
# scope: subpackages
# title: Org
# organizations: [acme]
package org
`,
        },
        {
          file: 'test.rego',
          text: `# METADATA
# description: A test package
package org.test

# METADATA
# scope: document
# description: the p document
# METADATA
# title: My P Rule
# authors:
# - Jane Doe <jane@example.com>
# related_resources:
# - https://example.com/p
# custom:
#   severity: high
p if {
	rego.metadata.chain()[0].annotations.title == "My P Rule"
	rego.metadata.chain()[2].annotations.description == "A test package"
}

# METADATA
# title: My Other P Rule
p if {
	rego.metadata.rule().title == "My Other P Rule"
}

chain := rego.metadata.chain()

# METADATA
# title: rule value
rule_value := rego.metadata.rule()

names := [x | x := rego.metadata.chain()[_].path]

f(x) := [x, rego.metadata.rule().title]

# METADATA
# title: fn
g := f(1)
`,
        },
      ],
      ['org/test/p', 'org/test/chain', 'org/test/rule_value', 'org/test/names', 'org/test/g'],
    );
    expect(ev('org/test/p')).toBe(true);
    expect(ev('org/test/chain')).toEqual([
      { path: ['org', 'test', 'chain'] },
      { path: ['org', 'test'], annotations: { scope: 'package', description: 'A test package' } },
      { path: ['org'], annotations: { scope: 'subpackages', title: 'Org', organizations: ['acme'] } },
    ]);
    expect(ev('org/test/rule_value')).toEqual({ scope: 'rule', title: 'rule value' });
    expect(ev('org/test/names')).toEqual([['org', 'test', 'names'], ['org', 'test'], ['org']]);
    // rule() inside a function is the function's own metadata (none): f's value has no title.
    expect(ev('org/test/g')).toBeUndefined();
  });

  it('the rule and document entries of the first p rule', async () => {
    const { ev } = await build(
      [
        {
          file: 'test.rego',
          text: `package test

# METADATA
# scope: document
# description: the p document
# METADATA
# title: My P Rule
# authors:
# - Jane Doe <jane@example.com>
# related_resources:
# - https://example.com/p
# custom:
#   severity: high
p := rego.metadata.chain()
`,
        },
      ],
      ['test/p'],
    );
    expect(ev('test/p')).toEqual([
      {
        path: ['test', 'p'],
        annotations: {
          scope: 'rule',
          title: 'My P Rule',
          authors: [{ name: 'Jane Doe', email: 'jane@example.com' }],
          related_resources: [{ ref: 'https://example.com/p' }],
          custom: { severity: 'high' },
        },
      },
      { path: ['test', 'p'], annotations: { scope: 'document', description: 'the p document' } },
    ]);
  });

  it('entrypoint: true adds the rule to the build (manifest and Wasm)', async () => {
    const { built, ev } = await build(
      [
        {
          file: 'test.rego',
          text: `package test

# METADATA
# entrypoint: true
allow if input.user == "alice"

other := 1
`,
        },
      ],
      ['test/other'],
    );
    expect(built.manifest.wasm?.map((w) => w.entrypoint)).toEqual(['test/other', 'test/allow']);
    expect(ev('test/allow', { user: 'alice' })).toBe(true);
    const annotatedOnly = await compileBundle({
      sources: [{ file: 'a.rego', text: 'package a\n\n# METADATA\n# entrypoint: true\nq := 2\n' }],
      entrypoints: [],
    });
    expect(annotatedOnly.manifest.wasm?.map((w) => w.entrypoint)).toEqual(['a/q']);
  });

  it('keys written without a value are absent, as OPA decodes them to empty fields', async () => {
    const { ev } = await build(
      [
        {
          file: 'test.rego',
          text: `package test

# METADATA
# title:
# description: ""
# related_resources:
# organizations:
# authors:
# custom:
#   level: 2
q := rego.metadata.rule()
`,
        },
      ],
      ['test/q'],
    );
    expect(ev('test/q')).toEqual({ scope: 'rule', custom: { level: 2 } });
  });
});
