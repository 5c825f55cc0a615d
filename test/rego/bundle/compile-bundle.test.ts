// The library API end to end: Rego sources → bundle → opa-wasm evaluation (real Wasm, real host builtins).
import { describe, expect, it } from 'vitest';
import {
  compileBundle,
  compileQuery,
  evaluateEntrypoint,
  evaluateQuery,
  loadBundle,
  RegoErrors,
} from '../../../src/rego/index.ts';

const SOURCE = `package acs.guardian

import rego.v1

default decision := {"allow": false, "reasons": []}

decision := {"allow": true, "reasons": []} if {
  input.tool in data.acs.allowed_tools
  not blocked
}

decision := {"allow": false, "reasons": sort([r | some r in reasons])} if blocked

blocked if count(reasons) > 0

reasons contains "tool not allowed" if not input.tool in data.acs.allowed_tools
reasons contains sprintf("argument too long: %d", [count(input.args)]) if count(input.args) > data.acs.max_args
`;

describe('compileBundle / loadBundle', () => {
  it('compiles, loads and evaluates with data from the bundle', { timeout: 300_000 }, async () => {
    const built = await compileBundle({
      sources: [{ file: 'acs/guardian.rego', text: SOURCE }],
      entrypoints: ['acs/guardian/decision'],
      data: { acs: { allowed_tools: ['search', 'read'], max_args: 2 } },
    });
    expect(built.manifest.wasm).toEqual([{ entrypoint: 'acs/guardian/decision', module: '/policy.wasm' }]);
    expect(built.manifest.revision).toMatch(/^[0-9a-f]{64}$/);
    expect(built.plan.plans?.plans.map((p) => p.name)).toEqual(['acs/guardian/decision']);

    const loaded = await loadBundle(built.bundle);
    expect(Object.keys(loaded.entrypoints)).toEqual(['acs/guardian/decision']);
    expect(evaluateEntrypoint(loaded, 'acs/guardian/decision', { tool: 'search', args: [1] })).toEqual([
      { result: { allow: true, reasons: [] } },
    ]);
    expect(evaluateEntrypoint(loaded, 'acs/guardian/decision', { tool: 'rm', args: [1, 2, 3] })).toEqual([
      { result: { allow: false, reasons: ['argument too long: 3', 'tool not allowed'] } },
    ]);

    // Same inputs → same bytes; data override at load time.
    const again = await compileBundle({
      sources: [{ file: 'acs/guardian.rego', text: SOURCE }],
      entrypoints: ['acs/guardian/decision'],
      data: { acs: { allowed_tools: ['search', 'read'], max_args: 2 } },
    });
    expect(Buffer.from(again.bundle).equals(Buffer.from(built.bundle))).toBe(true);
    const other = await loadBundle(built.bundle, { data: { acs: { allowed_tools: ['rm'], max_args: 5 } } });
    expect(evaluateEntrypoint(other, 'acs/guardian/decision', { tool: 'rm', args: [1, 2, 3] })).toEqual([
      { result: { allow: true, reasons: [] } },
    ]);
  });

  it('reports parse errors from every file with locations', async () => {
    try {
      await compileBundle({
        sources: [
          { file: 'a.rego', text: 'package a\np if {' },
          { file: 'b.rego', text: 'package b\nq := [1,,]' },
        ],
        entrypoints: ['a/p'],
      });
      throw new Error('expected errors');
    } catch (e) {
      expect(e).toBeInstanceOf(RegoErrors);
      // b.rego gets two, as from OPA: the list element that is missing, then the rule value it leaves out.
      expect((e as RegoErrors).errors.map((x) => `${x.location?.file}:${x.message}`)).toEqual([
        'a.rego:unexpected eof token',
        'b.rego:unexpected , token',
        'b.rego:unexpected , token: expected rule value term (e.g., q := <VALUE> { ... })',
      ]);
    }
  });

  it('refuses malformed entrypoints', async () => {
    await expect(
      compileBundle({ sources: [{ file: 'a.rego', text: 'package a\np := 1' }], entrypoints: ['a/p q'] }),
    ).rejects.toThrow(/invalid entrypoint/);
    await expect(
      compileBundle({ sources: [{ file: 'a.rego', text: 'package a\np := 1' }], entrypoints: [] }),
    ).rejects.toThrow(/at least one entrypoint/);
  });
});

describe('compileQuery / evaluateQuery', () => {
  it('binds every query variable', { timeout: 300_000 }, async () => {
    const rs = await evaluateQuery({
      sources: [{ file: 'f.rego', text: 'package f\ndouble(x) := 2 * x\n' }],
      query: 'data.f.double(21) = a; b := a + 1',
    });
    expect(rs).toEqual([{ a: 42, b: 43 }]);
  });
  it('inputTerm supplies an input holding a set', { timeout: 300_000 }, async () => {
    const rs = await evaluateQuery({
      sources: [],
      query: 'x := count(input.s); y := is_set(input.s)',
      inputTerm: '{"s": {1, 2, 2, 3}}',
    });
    expect(rs).toEqual([{ x: 3, y: true }]);
  });
  it('compile errors surface as RegoErrors', async () => {
    await expect(compileQuery({ sources: [], query: 'x := y' })).rejects.toBeInstanceOf(RegoErrors);
  });
});
