// The strict `*.acs-provenance.json` variant of every hook that has one (ACS §7, conformance.md "ACS-Provenance"),
// over real HTTP: under `provenance_producer: "deterministic"` a payload with Provenance on every data-bearing
// field is evaluated, the same payload with its Provenance stripped is -32602 `provenance_missing` at the first
// unlabelled field and chains nothing; an ACS-Core producer's stripped payload passes the permissive base schema.
// The hooks are read from the loaded schemas, so a strict variant without a fixture here fails the test.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { STEP_METHODS } from '../../src/acs/methods.ts';
import { loadAcsSchemas, strictVariantPath } from '../../src/acs/schemas/index.ts';
import type { AcsClient } from '../../src/client/index.ts';
import { startHarness, type Harness } from './fixtures/harness.ts';
import { LABELLED_PAYLOADS, withoutProvenance } from './fixtures/payloads.ts';

const schemas = loadAcsSchemas();
const STRICT = [...STEP_METHODS.values()]
  .filter((spec) => schemas.has(strictVariantPath(spec.payloadSchema)))
  .map((spec) => spec.method);
const METHODS = ['steps/sessionStart', ...STRICT];
const PROFILES = ['acs-core', 'acs-provenance'];

let h: Harness;
beforeAll(async () => {
  h = await startHarness({ profiles: PROFILES });
}, 60_000);
afterAll(async () => {
  await h?.close();
});

let n = 0;
const label = (origin: string) => ({ provenance_id: `s-${++n}`, origin });

async function opened(producer: 'deterministic' | 'none'): Promise<AcsClient> {
  const c = h.client();
  const hello = await c.hello({
    methods_implemented: METHODS,
    profiles_supported: PROFILES,
    provenance_producer: producer,
  });
  expect(hello.methods_evaluated).toEqual(METHODS);
  expect(hello.profiles_accepted).toEqual(producer === 'deterministic' ? PROFILES : ['acs-core']);
  expect((await c.step('steps/sessionStart', {})).decision).toBe('allow');
  return c;
}

describe('strict ACS-Provenance variants of every data-bearing hook', () => {
  it('cover the ten data-bearing hooks, each with a labelled fixture', () => {
    expect(STRICT.sort()).toEqual(Object.keys(LABELLED_PAYLOADS).sort());
    expect(STRICT).toHaveLength(10);
  });

  it.each(Object.keys(LABELLED_PAYLOADS))(
    '%s: labelled is evaluated, stripped is provenance_missing under a deterministic producer',
    async (method) => {
      const fixture = LABELLED_PAYLOADS[method];
      const c = await opened('deterministic');
      const labelled = await c.step(method, fixture.payload(label));
      expect(labelled.failure).toBeUndefined();
      expect(labelled.decision).toBe('allow');
      const head = await h.store.getChainHead(c.sessionId);
      const stripped = await c.step(method, withoutProvenance(fixture.payload(label)) as Record<string, unknown>);
      expect(stripped.failure?.error).toMatchObject({
        code: -32602,
        data: { reason: 'provenance_missing', pointer: `/params/payload${fixture.firstMissing}` },
      });
      expect(await h.store.getChainHead(c.sessionId)).toEqual(head);
      // An ACS-Core producer (provenance_producer "none") validates against the permissive base schema.
      const core = await opened('none');
      const base = await core.step(method, withoutProvenance(fixture.payload(label)) as Record<string, unknown>);
      expect(base.failure).toBeUndefined();
      expect(base.decision).toBe('allow');
    },
  );
});
