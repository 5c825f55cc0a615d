// Rego v0 (OPA's --v0-compatible): the same policies written in v0 and in v1 style compile, through
// our compiler, to Wasm modules that opa-wasm evaluates to identical results. The v0 spellings follow
// OPA's v0 grammar (ast/parser.go parseRules back-compat: `p { }`, `p[x] { }` a partial set,
// `p[k] = v { }` a partial object, `=` in heads, future keywords only when imported).
import { describe, expect, it } from 'vitest';
import { compileBundle, evaluateEntrypoint, loadBundle, RegoErrors, type RegoSource } from '../../../src/rego/index.ts';
import { readBundle, regoVersionForFile } from '../../../src/rego/bundle/index.ts';

const V0 = `package example

default allow = false

allow {
	input.user == "alice"
	not blocked
}

allow {
	input.user == "root"
}

blocked {
	input.tool == data.config.blocked_tools[_]
}

deny[msg] {
	input.tool == "shell"
	msg := sprintf("tool %s is not allowed", [input.tool])
}

deny["static reason"]

deny[msg] {
	count(input.args) > 2
	msg = "too many args"
}

limits[name] = value {
	some name
	value := data.config.limits[name] * 2
}

tags.admin {
	input.user == "root"
}

double(x) = y {
	y := x * 2
}

is_admin(u) {
	u == "root"
}

is_empty("")

level = "high" {
	input.score > 80
} else = "medium" {
	input.score > 40
} else = "low" {
	true
}

either {
	input.a
} {
	input.b
}

shadowed {
	every := 3
	contains := every + 1
	contains == 4
}

summary = {"allow": allow, "deny": deny, "limits": limits, "tags": tags, "double": double(21), "admin": is_admin(input.user), "empty": is_empty(input.s), "level": level}
`;

const V0_FUTURE = `package example.future

import future.keywords.in
import future.keywords.every

all_small {
	every x in input.nums { x < 10 }
}

has_three {
	3 in input.nums
}
`;

// A module importing rego.v1 is v1 even under --v0-compatible.
const V0_COMPAT_V1 = `package example.compat

import rego.v1

ok if input.user == "alice"

names contains n if some n in ["a", "b"]
`;

const V1 = `package example

default allow := false

allow if {
	input.user == "alice"
	not blocked
}

allow if input.user == "root"

blocked if input.tool in data.config.blocked_tools

deny contains msg if {
	input.tool == "shell"
	msg := sprintf("tool %s is not allowed", [input.tool])
}

deny contains "static reason"

deny contains "too many args" if count(input.args) > 2

limits[name] := value if {
	some name, v in data.config.limits
	value := v * 2
}

tags contains "admin" if input.user == "root"

double(x) := x * 2

is_admin(u) if u == "root"

is_empty("")

level := "high" if {
	input.score > 80
} else := "medium" if {
	input.score > 40
} else := "low"

either if input.a

either if input.b

shadowed if {
	e := 3
	c := e + 1
	c == 4
}

summary := {"allow": allow, "deny": deny, "limits": limits, "tags": tags, "double": double(21), "admin": is_admin(input.user), "empty": is_empty(input.s), "level": level}
`;

const V1_FUTURE = `package example.future

all_small if {
	every x in input.nums { x < 10 }
}

has_three if 3 in input.nums
`;

const DATA = { config: { blocked_tools: ['rm', 'curl'], limits: { cpu: 2, mem: 8 } } };
const ENTRYPOINTS = [
  'example/allow',
  'example/deny',
  'example/limits',
  'example/tags',
  'example/level',
  'example/either',
  'example/shadowed',
  'example/summary',
  'example/future/all_small',
  'example/future/has_three',
];

const INPUTS: unknown[] = [
  {},
  { user: 'alice', tool: 'search', args: [], score: 90, s: '' },
  { user: 'alice', tool: 'rm', args: [1, 2, 3], score: 50, a: true },
  { user: 'root', tool: 'shell', args: [1], score: 10, b: true, nums: [1, 2, 3], s: '' },
  { user: 'bob', tool: 'shell', nums: [1, 20], s: 'x' },
];

async function evaluator(sources: RegoSource[]) {
  const built = await compileBundle({ sources, entrypoints: ENTRYPOINTS, data: DATA });
  const loaded = await loadBundle(built.bundle);
  return {
    built,
    ev: (ep: string, input: unknown) => evaluateEntrypoint(loaded, ep, input),
  };
}

function sortSets(v: unknown): unknown {
  if (Array.isArray(v)) return v.map(sortSets);
  if (v && typeof v === 'object') return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, sortSets(x)]));
  return v;
}

describe('Rego v0 and v1 spellings of the same policies', () => {
  it('evaluate identically through opa-wasm', { timeout: 120_000 }, async () => {
    const v0 = await evaluator([
      { file: 'example.rego', text: V0, regoVersion: 0 },
      { file: 'future.rego', text: V0_FUTURE, regoVersion: 0 },
      { file: 'compat.rego', text: V0_COMPAT_V1, regoVersion: 0 },
    ]);
    const v1 = await evaluator([
      { file: 'example.rego', text: V1 },
      { file: 'future.rego', text: V1_FUTURE },
      { file: 'compat.rego', text: V0_COMPAT_V1 },
    ]);
    expect(v0.built.modules.map((m) => m.regoVersion)).toEqual([0, 0, 1]);
    expect(v1.built.modules.map((m) => m.regoVersion)).toEqual([1, 1, 1]);
    let defined = 0;
    for (const input of INPUTS) {
      for (const ep of ENTRYPOINTS) {
        const a = v0.ev(ep, input);
        const b = v1.ev(ep, input);
        expect(sortSets(a), `${ep} on ${JSON.stringify(input)}`).toEqual(sortSets(b));
        if (Array.isArray(a) && a.length) defined++;
      }
    }
    // The comparison is not vacuous: most entrypoints are defined on most inputs.
    expect(defined).toBeGreaterThan(30);
    // Spot checks of v0 meaning (values worked out by hand).
    const root = v0.ev('example/summary', INPUTS[3]) as { result: Record<string, unknown> }[];
    expect(sortSets(root[0].result)).toEqual({
      allow: true,
      deny: ['static reason', 'tool shell is not allowed'],
      limits: { cpu: 4, mem: 16 },
      tags: ['admin'],
      double: 42,
      admin: true,
      empty: true,
      level: 'low',
    });
    expect(v0.ev('example/future/has_three', INPUTS[3])).toEqual([{ result: true }]);
    expect(v0.ev('example/either', INPUTS[2])).toEqual([{ result: true }]);
  });

  it('the manifest records how each file was read, and the reader returns it', async () => {
    const built = await compileBundle({
      sources: [
        { file: 'a/v0.rego', text: 'package a\np { true }\n', regoVersion: 0 },
        { file: 'b/v1.rego', text: 'package b\nq if true\n' },
      ],
      entrypoints: ['a/p', 'b/q'],
    });
    expect(built.manifest.rego_version).toBe(1);
    expect(built.manifest.file_rego_versions).toEqual({ '/a/v0.rego': 0 });
    const back = readBundle(built.bundle);
    expect(back.sources.map((s) => [s.path, s.regoVersion])).toEqual([
      ['/a/v0.rego', 0],
      ['/b/v1.rego', 1],
    ]);
    const allV0 = await compileBundle({
      sources: [{ file: 'a.rego', text: 'package a\np { true }\n', regoVersion: 0 }],
      entrypoints: ['a/p'],
    });
    expect(allV0.manifest.rego_version).toBe(0);
    expect(allV0.manifest.file_rego_versions).toBeUndefined();
  });

  it('file_rego_versions globs pick a file version before rego_version (OPA semantics)', () => {
    const manifest = { rego_version: 1, file_rego_versions: { '/legacy/*.rego': 0, '/x/y.rego': 1 } };
    expect(regoVersionForFile(manifest, 'legacy/a.rego')).toBe(0);
    expect(regoVersionForFile(manifest, '/legacy/deep/b.rego')).toBe(0); // `*` crosses `/` without delimiters
    expect(regoVersionForFile(manifest, '/x/y.rego')).toBe(1);
    expect(regoVersionForFile(manifest, '/other.rego')).toBe(1);
    expect(regoVersionForFile({ rego_version: 0 }, '/other.rego')).toBe(0);
    expect(regoVersionForFile({}, '/other.rego', 0)).toBe(0);
    expect(() => regoVersionForFile({ rego_version: 2 }, '/p.rego')).toThrow(/unknown bundle rego-version 2/);
  });
});

async function compileError(text: string, regoVersion: 0 | 1): Promise<string> {
  try {
    await compileBundle({ sources: [{ file: 'p.rego', text, regoVersion }], entrypoints: ['p/p'] });
  } catch (e) {
    if (e instanceof RegoErrors) return e.errors[0].format().split('\n')[0];
    throw e;
  }
  throw new Error('expected an error');
}

describe('Rego v0 keywords', () => {
  it('in, every, if and contains are keywords only when imported', async () => {
    // OPA reads `p` as a statement of its own and the rest as another: the bare `p` is the error.
    expect(await compileError('package p\np if { true }\n', 0)).toBe(
      'p.rego:2:1: rego_parse_error: var cannot be used for rule name',
    );
    expect(await compileError('package p\np contains 1\n', 0)).toBe(
      'p.rego:2:1: rego_parse_error: var cannot be used for rule name',
    );
    expect(await compileError('package p\np { 1 in [1] }\n', 0)).toBe(
      'p.rego:2:7: rego_parse_error: unexpected identifier token: expected \\n or ; or }',
    );
    // The same texts are rules once the keywords are imported.
    const built = await compileBundle({
      sources: [
        {
          file: 'p.rego',
          text: 'package p\nimport future.keywords\np if { 1 in [1] }\nq contains 1\n',
          regoVersion: 0,
        },
      ],
      entrypoints: ['p/p', 'p/q'],
    });
    const loaded = await loadBundle(built.bundle);
    expect(evaluateEntrypoint(loaded, 'p/p', {})).toEqual([{ result: true }]);
    expect(evaluateEntrypoint(loaded, 'p/q', {})).toEqual([{ result: [1] }]);
  });
  it('importing every imports in too (OPA Scanner.AddKeyword), for every and on its own', async () => {
    const built = await compileBundle({
      sources: [
        {
          file: 'p.rego',
          text: 'package p\nimport future.keywords.every\nsmall { every x in input.nums { x < 10 } }\nhas_three { 3 in input.nums }\n',
          regoVersion: 0,
        },
      ],
      entrypoints: ['p/small', 'p/has_three'],
    });
    const loaded = await loadBundle(built.bundle);
    expect(evaluateEntrypoint(loaded, 'p/small', { nums: [1, 3] })).toEqual([{ result: true }]);
    expect(evaluateEntrypoint(loaded, 'p/small', { nums: [1, 30] })).toEqual([]);
    expect(evaluateEntrypoint(loaded, 'p/has_three', { nums: [1, 3] })).toEqual([{ result: true }]);
    // Importing in alone does not import every.
    expect(await compileError('package p\nimport future.keywords.in\np { every x in [1] { x } }\n', 0)).toMatch(
      /rego_parse_error/,
    );
  });
  it('a module importing rego.v1 needs v1 syntax even when read as v0', async () => {
    expect(await compileError('package p\nimport rego.v1\np { true }\n', 0)).toBe(
      'p.rego:3:1: rego_parse_error: `if` keyword is required before rule body',
    );
  });
  it('v1 modules still refuse v0 rule bodies', async () => {
    expect(await compileError('package p\np { true }\n', 1)).toBe(
      'p.rego:2:1: rego_parse_error: `if` keyword is required before rule body',
    );
  });
  it('a bare name is not a rule in v0', async () => {
    expect(await compileError('package p\np\n', 0)).toBe(
      'p.rego:2:1: rego_parse_error: var cannot be used for rule name',
    );
  });
});
