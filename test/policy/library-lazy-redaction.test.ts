// The library looks at PII redaction only when no deny, defer or ask finding outranks it, and, when another
// module denies, at the full PII pipeline for deny categories only when a deny category's regex matches
// (rego/acs/decision.rego, rego/acs/pii/pii.rego). Differential: the library as it is against the same sources
// rewritten to the eager form, on generated steps and several PII configurations; whole decisions must be identical.
import { beforeAll, describe, expect, it } from 'vitest';
import type { Json } from '../../src/json.ts';
import { compileBundle } from '../../src/rego/index.ts';
import { createWasmPolicyEngine, type WasmPolicyEngine } from '../../src/policy/index.ts';
import { readLibrary } from '../../src/policy/library.ts';
import { compareOnGeneratedSteps, prov, rewriteOnce as rewrite, withPiiConfig } from './generated-steps.ts';

/** decision.rego in the eager form: every finding decides, PII's deny finding always from the whole pipeline. */
function eagerSources(sources: { file: string; text: string }[]): { file: string; text: string }[] {
  return sources.map((s) => {
    if (s.file.endsWith('acs/decision.rego')) {
      let t = s.text;
      t = rewrite(
        t,
        'has_disposition(d) if {\n\tsome f in findings_but_redaction',
        'has_disposition(d) if {\n\tsome f in findings',
      );
      t = rewrite(t, 'else := "modify" if redaction_modifies\n', '');
      t = rewrite(
        t,
        'pii_deny_findings := pii.deny_findings_if_candidate if module_denies\n\nelse := pii.deny_findings',
        'pii_deny_findings := pii.deny_findings',
      );
      t = rewrite(
        t,
        'contributing := {f | some f in findings; f.disposition == chosen} if chosen == "modify"\n\nelse := {f | some f in findings_but_redaction; f.disposition == chosen}',
        'contributing := {f | some f in findings; f.disposition == chosen}',
      );
      t = rewrite(
        t,
        'first_by_rule(disp) := [f | some id in sort({g.rule_id | some g in findings_but_redaction; g.disposition == disp}); some f in findings_but_redaction;',
        'first_by_rule(disp) := [f | some id in sort({g.rule_id | some g in findings; g.disposition == disp}); some f in findings;',
      );
      return { ...s, text: t };
    }
    return s;
  });
}

const PIECES = [
  '-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEA',
  'jane.doe@example.com',
  '+44 20 7946 0958',
  '020 7946 0958',
  '06 12 34 56 78',
  '4111 1111 1111 1111',
  '4111 1111 1111 1112',
  'DE88 3704 0044 0532 0130 00',
  'DNI 12345678Z',
  'aadhaar 2345-6789-0124',
  'ssn 078-05-1120',
  'sk-abcdefghijklmnopqrstuvwxyz123456',
  'eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0.c2ln',
  'rm -rf /',
  'ls -la /workspace',
  '/workspace/a.txt',
  'hello world',
  'order 2345 6789 0125 shipped',
  '2026-11-29T12:07:14.137Z INFO amount=19.00',
];

describe('PII redaction decided lazily', () => {
  const variants: [string, Json][] = [
    ['default configuration', {}],
    ['phone and email as deny categories', { deny_categories: ['private_key', 'phone', 'email'] }],
    ['card and IBAN as deny categories', { deny_categories: ['credit_card', 'iban', 'in_aadhaar'] }],
    ['no deny category', { deny_categories: [] }],
    ['private keys without a pre-filter', { prefilters: { email: ['@'], private_key: false } }],
  ];
  const engines: { name: string; lazy: WasmPolicyEngine; eager: WasmPolicyEngine }[] = [];
  beforeAll(async () => {
    const lib = readLibrary();
    const eager = eagerSources(lib.sources);
    for (const [name, pii] of variants) {
      const data = withPiiConfig(lib.data, pii);
      const build = async (sources: { file: string; text: string }[]) => {
        const c = await compileBundle({
          sources,
          entrypoints: ['acs/decision'],
          data,
          revision: 'lazy-test',
          recordInputPaths: true,
        });
        return createWasmPolicyEngine({ bundle: c.bundle, timeoutMs: 10_000 });
      };
      engines.push({ name, lazy: await build(lib.sources), eager: await build(eager) });
    }
  }, 600_000);

  it('gives the same decisions as the eager library on generated steps', async () => {
    const seen = await compareOnGeneratedSteps({
      session: '3d0f7a52-61c4-4f0e-9b0a-5e2c9d1f8a44',
      requestIdPrefix: '9a1c2b1e-0000-4000-8000-',
      seed: 20261130,
      steps: 240,
      kinds: ['message', 'tool', 'tool', 'result'],
      text: (g) =>
        Array.from({ length: 1 + Math.floor(g.random() * 3) }, () => g.pick(PIECES)).join(
          g.random() < 0.5 ? ' ' : ', ',
        ),
      origin: (g, retrieved) =>
        retrieved
          ? g.pick([
              prov('u1', 'user_input'),
              prov('w1', 'retrieved'),
              prov(`g${g.seq()}`, 'agent_generated', ['u1', 'w1']),
              prov(`h${g.seq()}`, 'agent_generated', ['u1']),
            ])
          : prov('u1', 'user_input'),
      pairs: engines.map(({ name, lazy, eager }) => ({ name, subject: lazy, reference: eager })),
      revision: 'lazy-test',
    });
    // The steps reach every disposition, and PII denies and redactions under other denies.
    const keys = [...seen.keys()].join('\n');
    for (const expected of ['allow', 'ask', 'deny', 'modify']) expect(keys).toMatch(new RegExp(`: ${expected} `));
    expect(keys).toMatch(/default configuration: deny .*pii_detected/);
    expect(keys).toMatch(/phone and email as deny categories: deny .*pii_detected/);
    expect(keys).toMatch(/card and IBAN as deny categories: deny .*pii_detected/);
    // PII denies next to another module's deny (the path that looks for deny-category matches only)
    expect(keys).toMatch(/phone and email as deny categories: deny aarm_cumulative_taint\+.*pii_detected/);
    expect(keys).toMatch(/default configuration: deny aarm_cumulative_taint\+.*pii_detected/);
  }, 600_000);
});
