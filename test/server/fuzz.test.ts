// Fuzzing the front door over real HTTP (fast-check). Whatever arrives, the Guardian answers HTTP 200 with a
// schema-valid JSON-RPC response using only §17 codes, never -32603, and a tampered signed request never gets a
// decision. FUZZ_RUNS sets the number of runs per property (`npm run fuzz` = 100000); each property's time
// limit grows with it, so only a counterexample fails a long run, and each prints its runs per second.
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { AcsClient } from '../../src/client/index.ts';
import { startHarness, type Harness } from '../acs/fixtures/harness.ts';

const RUNS = Number(process.env.FUZZ_RUNS ?? 1000);
// A budget, not a speed target: generous enough that a slow shared host never cuts a run short.
const TIMEOUT_MS = Math.max(60_000, RUNS * 20);
const CODES = new Set([-32700, -32600, -32601, -32602, -32000, -32001, -32002, -32003, -32004, -32005, -32006, -32007]);
let h: Harness;
let c: AcsClient;
beforeAll(async () => {
  h = await startHarness();
  c = h.client();
  await c.hello({ methods_implemented: ['steps/userMessage', 'steps/toolCallRequest'] });
});
afterAll(async () => {
  await h.close();
});

async function answer(body: string | Uint8Array): Promise<Record<string, unknown>> {
  const a = (await h.post(body)) as unknown as Record<string, unknown>; // h.post asserts HTTP 200 + schema
  if ('error' in a) expect(CODES.has((a.error as { code: number }).code)).toBe(true);
  return a;
}

/** fc.assert with RUNS runs, then the property's throughput on stdout. */
async function assertProperty<Ts>(label: string, property: fc.IAsyncProperty<Ts>): Promise<void> {
  const started = performance.now();
  await fc.assert(property, { numRuns: RUNS });
  const seconds = (performance.now() - started) / 1000;
  console.log(`fuzz ${label}: ${RUNS} runs in ${seconds.toFixed(1)} s, ${Math.round(RUNS / seconds)} runs/s`);
}

/** Replaces the member at a random path of a JSON value with another value. */
function mutate(value: unknown, path: number[], replacement: unknown): unknown {
  if (path.length === 0 || value === null || typeof value !== 'object') return replacement;
  const keys = Array.isArray(value) ? value.map((_, i) => i) : Object.keys(value);
  if (keys.length === 0) return replacement;
  const key = keys[path[0] % keys.length];
  const copy = (Array.isArray(value) ? [...value] : { ...(value as object) }) as Record<string | number, unknown>;
  copy[key as never] = mutate((value as Record<string | number, unknown>)[key as never], path.slice(1), replacement);
  return copy;
}

describe('fuzz: POST /acs', () => {
  it('arbitrary text and bytes', { timeout: TIMEOUT_MS }, async () => {
    await assertProperty(
      'text/bytes',
      fc.asyncProperty(
        fc.oneof(fc.string(), fc.string({ unit: 'grapheme' }), fc.uint8Array({ maxLength: 256 })),
        async (body) => {
          await answer(body);
        },
      ),
    );
  });

  it('arbitrary JSON values, including near-envelopes', { timeout: TIMEOUT_MS }, async () => {
    const nearEnvelope = fc.record(
      {
        jsonrpc: fc.constantFrom('2.0', '1.0', 2),
        method: fc.oneof(
          fc.constantFrom('steps/userMessage', 'system/ping', 'handshake/hello', 'steps/x'),
          fc.string(),
        ),
        id: fc.oneof(fc.integer(), fc.string(), fc.constant(null)),
        params: fc.jsonValue(),
      },
      { requiredKeys: [] },
    );
    await assertProperty(
      'json',
      fc.asyncProperty(fc.oneof(fc.jsonValue(), nearEnvelope), async (value) => {
        await answer(JSON.stringify(value));
      }),
    );
  });

  it('a signed request with one member replaced never gets an ALLOW', { timeout: TIMEOUT_MS }, async () => {
    const original = await c.buildRequest('steps/userMessage', { content: [{ type: 'text', value: 'hello' }] });
    await assertProperty(
      'tampered',
      fc.asyncProperty(
        fc.array(fc.nat(), { minLength: 1, maxLength: 6 }),
        fc.jsonValue(),
        async (path, replacement) => {
          const mutated = mutate(original, path, replacement);
          fc.pre(JSON.stringify(mutated) !== JSON.stringify(original));
          const a = await answer(JSON.stringify(mutated));
          // key_id is outside the signed input (§10), so a re-labelled key_id verifies; the session binding then
          // refuses it with a signed DENY. Anything else must be an error.
          if ('result' in a) expect(a.result).toMatchObject({ decision: 'deny', reason_codes: ['key_not_bound'] });
          else expect('error' in a).toBe(true);
        },
      ),
    );
  });
});
