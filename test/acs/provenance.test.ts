// ACS-Provenance on the wire (ACS §7, conformance.md "ACS-Provenance"), over real HTTP: a deterministic producer's
// payloads are validated against the strict `*.acs-provenance.json` variants (a data-bearing field without
// Provenance is -32602 provenance_missing, partial population included), a wire `trust` label on agent_generated
// data may not rise above its lineage (-32602 trust_not_monotonic), and the profile is accepted only from a
// deterministic producer. Every answer is schema-checked by the harness transport.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { AcsClient, StepOutcome } from '../../src/client/index.ts';
import { startHarness, type Harness } from './fixtures/harness.ts';

const METHODS = [
  'steps/sessionStart',
  'steps/userMessage',
  'steps/agentResponse',
  'steps/toolCallRequest',
  'steps/toolCallResult',
];
const PROFILES = ['acs-core', 'acs-provenance'];
let h: Harness;

beforeAll(async () => {
  h = await startHarness({ profiles: ['acs-core', 'acs-provenance', 'acs-audit'] });
}, 60_000);
afterAll(async () => {
  await h?.close();
});

let n = 0;
const prov = (origin: string, extra: Record<string, unknown> = {}) => ({
  provenance_id: `p-${++n}`,
  origin,
  ...extra,
});

async function opened(producer: 'deterministic' | 'none' = 'deterministic'): Promise<AcsClient> {
  const c = h.client();
  const hello = await c.hello({
    methods_implemented: METHODS,
    profiles_supported: PROFILES,
    provenance_producer: producer,
  });
  expect(hello.profiles_accepted).toEqual(producer === 'deterministic' ? PROFILES : ['acs-core']);
  expect((await c.step('steps/sessionStart', {})).decision).toBe('allow');
  return c;
}

function expectInvalidParams(out: StepOutcome, reason: string, pointer: string): void {
  expect(out.failure?.reason).toBe('error_response');
  expect(out.failure?.error).toMatchObject({ code: -32602, data: { reason, pointer } });
  expect(out.result).toBeNull();
}

describe('ACS-Provenance (provenance_producer "deterministic")', () => {
  it('is accepted only from a deterministic producer', async () => {
    await opened('deterministic');
    await opened('none');
  });

  it('refuses a data-bearing field without Provenance against the strict variant, partial population included', async () => {
    const c = await opened();
    const head = await h.store.getChainHead(c.sessionId);
    expectInvalidParams(
      await c.step('steps/userMessage', { content: [{ type: 'text', value: 'no provenance' }] }),
      'provenance_missing',
      '/params/payload/content/0/provenance',
    );
    // Partial population: one content item carries Provenance, the next does not.
    expectInvalidParams(
      await c.step('steps/userMessage', {
        content: [
          { type: 'text', value: 'labelled', provenance: prov('user_input') },
          { type: 'text', value: 'unlabelled' },
        ],
      }),
      'provenance_missing',
      '/params/payload/content/1/provenance',
    );
    expectInvalidParams(
      await c.step('steps/toolCallRequest', {
        tool: { name: 'Bash' },
        arguments: { command: { value: 'ls', provenance: prov('agent_generated') }, cwd: { value: '/tmp' } },
      }),
      'provenance_missing',
      '/params/payload/arguments/cwd/provenance',
    );
    expectInvalidParams(
      await c.step('steps/toolCallResult', {
        tool: { name: 'Bash' },
        exit_status: 'success',
        outputs: [{ value: 'x' }],
      }),
      'provenance_missing',
      '/params/payload/outputs/0/provenance',
    );
    // A Provenance object missing its own required members is refused too (§7: "all of its own required fields").
    const bare = await c.step('steps/userMessage', {
      content: [{ type: 'text', value: 'x', provenance: { provenance_id: 'p-bare' } }],
    });
    expect(bare.failure?.error).toMatchObject({
      code: -32602,
      data: { pointer: '/params/payload/content/0/provenance/origin' },
    });
    // Errors write no entry (ACS §8.2); the fully labelled step is evaluated and chained.
    expect(await h.store.getChainHead(c.sessionId)).toEqual(head);
    const ok = await c.step('steps/userMessage', {
      content: [
        { type: 'text', value: 'a', provenance: prov('user_input') },
        { type: 'file', value: 'b', provenance: prov('retrieved', { source_id: 'kb' }) },
      ],
    });
    expect(ok.decision).toBe('allow');
    expect(ok.result?.chain_hash).toBeDefined();
  });

  it('a producer of no provenance (ACS-Core) is validated against the permissive base schemas', async () => {
    const c = await opened('none');
    expect((await c.step('steps/userMessage', { content: [{ type: 'text', value: 'hi' }] })).decision).toBe('allow');
    expect(
      (
        await c.step('steps/toolCallResult', {
          tool: { name: 'Bash' },
          exit_status: 'success',
          outputs: [{ value: 'x' }],
        })
      ).decision,
    ).toBe('allow');
  });

  it('a producer that declared "none" sends no Provenance on a data-bearing field: -32602 provenance_producer_none', async () => {
    const c = await opened('none');
    const head = await h.store.getChainHead(c.sessionId);
    expectInvalidParams(
      await c.step('steps/userMessage', { content: [{ type: 'text', value: 'hi', provenance: prov('user_input') }] }),
      'provenance_producer_none',
      '/params/payload/content/0/provenance',
    );
    expectInvalidParams(
      await c.step('steps/toolCallRequest', {
        tool: { name: 'Bash' },
        arguments: { command: { value: 'ls' }, cwd: { value: '/tmp', provenance: prov('agent_generated') } },
      }),
      'provenance_producer_none',
      '/params/payload/arguments/cwd/provenance',
    );
    expectInvalidParams(
      await c.step('steps/toolCallResult', {
        tool: { name: 'Bash' },
        exit_status: 'success',
        outputs: [{ value: 'x', provenance: prov('tool_output', { source_id: 'Bash' }) }],
      }),
      'provenance_producer_none',
      '/params/payload/outputs/0/provenance',
    );
    expect(await h.store.getChainHead(c.sessionId)).toEqual(head);
    // Intent's parser_provenance is not a data-bearing field: an IBAC session needs no Provenance profile (§8.4).
    const ibac = h.client();
    await ibac.hello({ methods_implemented: METHODS, profiles_supported: PROFILES, provenance_producer: 'none' });
    const start = await ibac.step('steps/sessionStart', {
      intent: { description: 'tidy the build', parsed: ['fs.read'], parser_provenance: prov('user_input') },
    });
    expect(start.decision).toBe('allow');
  });

  it('refuses a trust label that launders agent_generated data above its lineage, earlier steps and this one', async () => {
    const c = await opened();
    const tool = prov('tool_output', { source_id: 'Bash', trust: 'untrusted' });
    expect(
      (
        await c.step('steps/toolCallResult', {
          tool: { name: 'Bash' },
          exit_status: 'success',
          outputs: [{ value: 'o', provenance: tool }],
        })
      ).decision,
    ).toBe('allow');
    // Derived from an earlier step's untrusted output: "trusted" is laundering, "untrusted" is the minimum.
    expectInvalidParams(
      await c.step('steps/agentResponse', {
        content: [
          {
            type: 'text',
            value: 'summary',
            provenance: prov('agent_generated', { derived_from: [tool.provenance_id], trust: 'trusted' }),
          },
        ],
      }),
      'trust_not_monotonic',
      '/params/payload/content/0/provenance/trust',
    );
    expect(
      (
        await c.step('steps/agentResponse', {
          content: [
            {
              type: 'text',
              value: 'summary',
              provenance: prov('agent_generated', { derived_from: [tool.provenance_id], trust: 'untrusted' }),
            },
          ],
        })
      ).decision,
    ).toBe('allow');
    // Lineage inside one payload: derived from user input (trusted) and from a retrieved item (untrusted).
    const user = prov('user_input', { trust: 'trusted' });
    const web = prov('retrieved', { source_id: 'https://example.org' });
    expectInvalidParams(
      await c.step('steps/userMessage', {
        content: [
          { type: 'text', value: 'u', provenance: user },
          { type: 'text', value: 'w', provenance: web },
          {
            type: 'text',
            value: 'mix',
            provenance: prov('agent_generated', {
              derived_from: [user.provenance_id, web.provenance_id],
              trust: 'unknown',
            }),
          },
        ],
      }),
      'trust_not_monotonic',
      '/params/payload/content/2/provenance/trust',
    );
    const fromUser = prov('agent_generated', { derived_from: [user.provenance_id], trust: 'trusted' });
    expect(
      (
        await c.step('steps/userMessage', {
          content: [
            { type: 'text', value: 'u', provenance: user },
            { type: 'text', value: 'echo', provenance: fromUser },
          ],
        })
      ).decision,
    ).toBe('allow');
    // No lineage: the Guardian derives `unknown`, so `trusted` rises above it; a parent never seen is `unknown`.
    expectInvalidParams(
      await c.step('steps/agentResponse', {
        content: [{ type: 'text', value: 'x', provenance: prov('agent_generated', { trust: 'trusted' }) }],
      }),
      'trust_not_monotonic',
      '/params/payload/content/0/provenance/trust',
    );
    expectInvalidParams(
      await c.step('steps/agentResponse', {
        content: [
          {
            type: 'text',
            value: 'x',
            provenance: prov('agent_generated', { derived_from: ['never-seen'], trust: 'trusted' }),
          },
        ],
      }),
      'trust_not_monotonic',
      '/params/payload/content/0/provenance/trust',
    );
    expectInvalidParams(
      await c.step('steps/userMessage', {
        content: [{ type: 'text', value: 'x', provenance: prov('user_input', { trust: 'very' }) }],
      }),
      'trust_invalid',
      '/params/payload/content/0/provenance/trust',
    );
  });
});
