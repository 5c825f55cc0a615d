// A replay worker's validator (AcsValidator `only`: the decision-detail schemas and the files they reference)
// must judge every value exactly as the live server's full validator does, and refuse any schema it lacks.
import { describe, expect, it } from 'vitest';
import { DECISION_DETAIL_SCHEMAS } from '../../src/acs/decisions/index.ts';
import { loadAcsSchemas } from '../../src/acs/schemas/index.ts';
import { AcsValidator, sharedValidator } from '../../src/acs/validation/index.ts';

const PROVENANCE = { provenance_id: 'p1', origin: 'user_input' };
const ASK = { approver: { type: 'human', id: 'ops' }, question: 'q', timeout_seconds: 30 };
const extension = (provenance: unknown): unknown => ({
  ...ASK,
  intent_extension: { capabilities: ['read'], scope: 'session', provenance },
});
/** Valid and invalid values per detail schema; ask_details reaches provenance.json through a $ref. */
const CASES: Record<string, unknown[]> = {
  [DECISION_DETAIL_SCHEMAS.modify]: [
    { modified_content: 'x' },
    { redactions: [{ path: '/a' }] },
    { redactions: [{ path: 1 }] },
    { parameter_overrides: { a: 1 } },
    { parameter_overrides: 'x' },
    null,
    'modify',
    [],
    {},
  ],
  [DECISION_DETAIL_SCHEMAS.ask]: [
    { approver: { type: 'human', id: 'ops' }, question: 'Run ls?', timeout_seconds: 30 },
    { approver: { type: 'robot', id: 'ops' }, question: 'q', timeout_seconds: 30 },
    { approver: { type: 'human' }, question: 'q', timeout_seconds: 30 },
    { approver: { type: 'human', id: 'ops' }, question: 'q', timeout_seconds: '30' },
    extension(PROVENANCE),
    extension({ provenance_id: 'p1' }),
    extension({ ...PROVENANCE, origin: 'rumour' }),
    extension(7),
    undefined,
    {},
  ],
  [DECISION_DETAIL_SCHEMAS.defer]: [
    {
      reason: 'insufficient_context',
      resolution_method: 'additional_context',
      resolution_timeout_ms: 1000,
      timeout_decision: 'deny',
    },
    { reason: 'low_confidence' },
    {
      reason: 'insufficient_context',
      resolution_method: 'additional_context',
      resolution_timeout_ms: -1,
      timeout_decision: 'deny',
    },
    {
      reason: 'insufficient_context',
      resolution_method: 'additional_context',
      resolution_timeout_ms: 1000,
      timeout_decision: 'maybe',
    },
    42,
  ],
};

describe('AcsValidator only: a subset for replay workers', () => {
  const full = new AcsValidator();
  const subset = new AcsValidator({ only: Object.values(DECISION_DETAIL_SCHEMAS) });

  it("gives the full validator's verdict and first violation on every value", () => {
    let valid = 0;
    let invalid = 0;
    for (const [path, values] of Object.entries(CASES)) {
      for (const value of values) {
        const expected = full.validate(path, value);
        expect(subset.validate(path, value), `${path} ${JSON.stringify(value)}`).toEqual(expected);
        if (expected.ok) valid++;
        else invalid++;
      }
    }
    // Both outcomes exercised, so agreement is not vacuous.
    expect(valid).toBeGreaterThanOrEqual(4);
    expect(invalid).toBeGreaterThanOrEqual(10);
    // provenance.json reached through ask-details.json's $ref: accepted and rejected as the full validator does.
    expect(subset.validate(DECISION_DETAIL_SCHEMAS.ask, extension(PROVENANCE)).ok).toBe(true);
    expect(subset.validate(DECISION_DETAIL_SCHEMAS.ask, extension({ ...PROVENANCE, origin: 'rumour' })).ok).toBe(false);
  });

  it('holds only the listed schemas: any other path throws instead of passing', () => {
    expect(subset.has(DECISION_DETAIL_SCHEMAS.ask)).toBe(true);
    expect(subset.has('request-envelope.json')).toBe(false);
    expect(subset.has('provenance.json')).toBe(false);
    expect(() => subset.requestEnvelope({})).toThrow(/unknown ACS schema/);
    expect(() => new AcsValidator({ only: ['no-such.json'] })).toThrow(/unknown ACS schema no-such.json/);
  });

  it('the default (live server) validator still compiles every schema and both handshake definitions', () => {
    for (const path of loadAcsSchemas().keys()) expect(full.has(path), path).toBe(true);
    expect(full.has('handshake.json#ClientHello')).toBe(true);
    expect(full.has('handshake.json#ServerHello')).toBe(true);
    for (const path of loadAcsSchemas().keys()) expect(sharedValidator().has(path), path).toBe(true);
  });
});
