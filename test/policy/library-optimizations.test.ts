// The library's evaluation-cost work must not change a decision: the library built as shipped (ground composite
// literals as static data, early exit from ground-valued rule bodies, acs.pii's Luhn sum by position rows, the
// national-phone alternation precomputed into data by withDerivedData, Aadhaar candidates inside a longer valid
// candidate left unchecked) against the same sources built without the two compiler optimisations, with the Luhn
// sum by its formula, every candidate checked, and from the data as written (acs.pii builds the alternation), on
// generated steps under two PII configurations; whole decisions must be identical.
import { beforeAll, describe, expect, it } from 'vitest';
import type { Json } from '../../src/json.ts';
import { compileBundle } from '../../src/rego/index.ts';
import { createWasmPolicyEngine, type WasmPolicyEngine } from '../../src/policy/index.ts';
import { readLibrary, withDerivedData } from '../../src/policy/library.ts';
import { compareOnGeneratedSteps, prov, rewriteOnce as rewrite, withPiiConfig } from './generated-steps.ts';

/** pii.rego in its earlier form: the Luhn sum by its formula only, and every candidate checked. */
function referenceSources(sources: { file: string; text: string }[]): { file: string; text: string }[] {
  return sources.map((s) => {
    if (!s.file.endsWith('acs/pii/pii.rego')) return s;
    let t = rewrite(
      s.text,
      'luhn_total(ds, n) := sum([rows[i][d] | some i, d in ds]) if {\n\tn <= 19\n\trows := luhn_rows[n % 2]\n} else := sum(',
      'luhn_total(ds, n) := sum(',
    );
    t = rewrite(
      t,
      'checked contains c if some c in checked_outer\n',
      'checked contains c if {\n\tsome c in candidates\n\tvalid(c)\n}\n',
    );
    t = rewrite(
      t,
      'checked contains c if {\n\tsome c in candidates\n\tc.category == "in_aadhaar"\n\tnot inside_longer_outer(c)\n\tvalid(c)\n}\n',
      '',
    );
    return { ...s, text: t };
  });
}

const PIECES = [
  '-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEA',
  'jane.doe@example.com',
  '+44 20 7946 0958',
  '020 7946 0958',
  '06 12 34 56 78',
  '(415) 555-0132',
  '4111 1111 1111 1111',
  '4111-1111-1111-1112',
  '6011000990139424',
  '4222222222222',
  '3530111333300000',
  '6011 0009 9013 9424 123',
  'DE89 3704 0044 0532 0130 00',
  'GB82WEST12345698765432',
  'DNI 12345678Z',
  'aadhaar 2345-6789-0124',
  '2345 6789 0125',
  'ssn 078-05-1120',
  'nino AB 12 34 56 C',
  'sk-abcdefghijklmnopqrstuvwxyz123456',
  'AKIAIOSFODNN7EXAMPLE',
  'eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0.c2ln',
  'rm -rf /',
  'ls -la /workspace',
  '/workspace/a.txt',
  'hello world',
  'Some ordinary text.',
  '2026-11-29T12:07:14.137Z INFO amount=19.00 order=18234',
  'é ✓ 名前',
];

describe('library evaluation optimisations', () => {
  const variants: [string, Json][] = [
    ['default configuration', {}],
    ['card and IBAN as deny categories', { deny_categories: ['credit_card', 'iban', 'in_aadhaar'] }],
  ];
  const engines: { name: string; shipped: WasmPolicyEngine; reference: WasmPolicyEngine }[] = [];
  beforeAll(async () => {
    const lib = readLibrary();
    for (const [name, pii] of variants) {
      const data = withPiiConfig(lib.data, pii);
      const shipped = await compileBundle({
        sources: lib.sources,
        entrypoints: ['acs/decision'],
        data: withDerivedData(data),
        revision: 'opt-test',
        recordInputPaths: true,
      });
      const reference = await compileBundle({
        sources: referenceSources(lib.sources),
        entrypoints: ['acs/decision'],
        data,
        revision: 'opt-test',
        recordInputPaths: true,
        plan: { earlyExit: false },
        staticComposites: false,
      });
      // The reference really is another build (no break statements, the formula).
      expect(JSON.stringify(reference.plan)).not.toContain('BreakStmt');
      expect(JSON.stringify(shipped.plan)).toContain('BreakStmt');
      engines.push({
        name,
        shipped: await createWasmPolicyEngine({ bundle: shipped.bundle, timeoutMs: 10_000 }),
        reference: await createWasmPolicyEngine({ bundle: reference.bundle, timeoutMs: 10_000 }),
      });
    }
  }, 600_000);

  it('gives the same decisions as the unoptimised build on generated steps', async () => {
    const seen = await compareOnGeneratedSteps({
      session: '6b1e2f0a-7c3d-4e5f-8a9b-0c1d2e3f4a5b',
      requestIdPrefix: '7c2d3e4f-0000-4000-8000-',
      seed: 20261201,
      steps: 200,
      kinds: ['message', 'message', 'tool', 'result'],
      messageParts: (g) => 1 + Math.floor(g.random() * 2),
      text: (g) =>
        Array.from({ length: 1 + Math.floor(g.random() * 4) }, () => g.pick(PIECES)).join(
          g.pick([' ', ', ', '\n', '']),
        ),
      origin: (g, retrieved) =>
        retrieved
          ? g.pick([
              prov('u1', 'user_input'),
              prov('w1', 'retrieved'),
              prov(`g${g.seq()}`, 'agent_generated', ['u1', 'w1']),
            ])
          : prov('u1', 'user_input'),
      pairs: engines.map(({ name, shipped, reference }) => ({ name, subject: shipped, reference })),
      revision: 'opt-test',
    });
    // The steps reach every disposition and PII redactions and denies, cards among them.
    const keys = [...seen.keys()].join('\n');
    for (const expected of ['allow', 'ask', 'deny', 'modify']) expect(keys).toMatch(new RegExp(`: ${expected} `));
    expect(keys).toMatch(/default configuration: modify .*pii_detected/);
    expect(keys).toMatch(/card and IBAN as deny categories: deny .*pii_detected/);
  }, 600_000);

  it('precomputes the national-phone alternation acs.pii would build, and acs.pii uses it', async () => {
    const lib = readLibrary();
    const derived = withDerivedData(lib.data) as {
      acs_config: { pii: { national_phone_alternation: { of: unknown; pattern: string } } };
    };
    const alternation = derived.acs_config.pii.national_phone_alternation;
    expect(alternation.pattern).toContain('|(?:');
    const c = await compileBundle({
      sources: lib.sources,
      entrypoints: ['acs/pii/national_phone_alternation', 'acs/pii/national_phone_pattern'],
      data: derived,
    });
    const engine = await createWasmPolicyEngine({ bundle: c.bundle, timeoutMs: 10_000 });
    // Built by acs.pii from national_phones, and the pattern in force (the precomputed one while current).
    expect((await engine.evaluateValue({}, { entrypoint: 'acs/pii/national_phone_alternation' })).value).toBe(
      alternation.pattern,
    );
    expect((await engine.evaluateValue({}, { entrypoint: 'acs/pii/national_phone_pattern' })).value).toBe(
      alternation.pattern,
    );
  }, 300_000);
});
