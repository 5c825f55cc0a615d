// `_` as a rule name: OPA's parser reads the name with parseVar, which turns `_` into a fresh wildcard var
// (`$0`, `$1`, … in parse order), and its compiler has no check against it, so the rule is the document
// data.<pkg>["$0"] (OPA issue #7272 shows `opa eval data.p` giving {"$0": true} for `_ if true`).
import { describe, expect, it } from 'vitest';
import { parseModule } from '../../../src/rego/ast/index.ts';
import { compileModules } from '../../../src/rego/semantic/index.ts';
import { loadModule } from './fixtures/wasm-module.ts';

describe('a rule named _', () => {
  it('parses as a wildcard var and compiles to the rule set at $0', () => {
    const m = parseModule('t.rego', 'package t\n_ if true\n_ := 2\n');
    expect(m.rules.map((r) => r.head.reference[0])).toMatchObject([
      { type: 'var', value: '$0', wildcard: true },
      { type: 'var', value: '$1', wildcard: true },
    ]);
    const program = compileModules([m]);
    expect([...program.ruleSetsByPath.keys()].sort()).toEqual(['t/$0', 't/$1']);
  });

  it('wildcards in bodies before it take the earlier numbers, as the parser meets them', () => {
    const m = parseModule('t.rego', 'package t\np if { input.xs[_] }\n_ if true\n');
    expect(m.rules[1].head.reference[0]).toMatchObject({ value: '$1', wildcard: true });
  });

  it('evaluates as OPA does: data.t holds it under "$0"', async () => {
    const ev = await loadModule('package t\n_ if true\np := 1\n', ['t']);
    expect(ev('t')).toEqual({ $0: true, p: 1 });
  });
});
