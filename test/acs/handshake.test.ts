// handshake/hello, rules 1–10 (ACS §4, §4.1; docs/conformance.md), end to end over real HTTP.
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AcsRpcError } from '../../src/client/index.ts';
import { ALL_STEPS, startHarness, type Harness } from './fixtures/harness.ts';

let h: Harness;
beforeAll(async () => {
  h = await startHarness();
});
afterAll(async () => {
  await h.close();
});

async function refusal(promise: Promise<unknown>): Promise<AcsRpcError> {
  const err = await promise.then(
    () => null,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(AcsRpcError);
  return err as AcsRpcError;
}

describe('handshake/hello', () => {
  it('answers a signed ServerHello as the result itself with the negotiated terms', async () => {
    const c = h.client();
    const server = await c.hello({ methods_implemented: ALL_STEPS });
    expect(server.negotiated_version).toBe('0.1.0');
    expect(server.selected_transport).toBe('http');
    expect(server.methods_evaluated).toEqual(ALL_STEPS);
    expect(server.signature_algorithms_supported).toEqual(['HMAC-SHA256']);
    expect(server.skew_window_ms).toBe(300000);
    expect(server.timeout_config.default_ms).toBeGreaterThan(0);
  });

  it('rule 1: negotiates a supported version of the same major (client 0.1.1 → 0.1.0)', async () => {
    const server = await h.client().hello({ acs_versions_supported: ['0.1.1'] });
    expect(server.negotiated_version).toBe('0.1.0');
  });

  it('rule 1: no common major → -32001 with data.supported_versions', async () => {
    const err = await refusal(h.client().hello({ acs_versions_supported: ['1.0.0', '2.3.0'] }));
    expect(err.error.code).toBe(-32001);
    expect(err.error.message).toBe('UNSUPPORTED_VERSION');
    expect(err.error.data?.supported_versions).toEqual(['0.1.0']);
    expect(err.error.signature?.algorithm).toBe('HMAC-SHA256');
  });

  it('rule 2: no common transport (stdio-only hello over HTTP) → -32000 no_common_transport', async () => {
    const err = await refusal(h.client().hello({ transports_supported: ['stdio'] }));
    expect(err.error.code).toBe(-32000);
    expect(err.error.data?.reason).toBe('no_common_transport');
  });

  it('rule 4: methods_evaluated keeps client order and drops what the Guardian cannot answer', async () => {
    const server = await h.client().hello({
      methods_implemented: [
        'steps/toolCallRequest',
        'steps/userMessage',
        'protocols/MCP/tools/call',
        'wrapped:mcp-2025-06-18/tools/call',
        'agbom/snapshot',
        'trace/spans',
      ],
    });
    expect(server.methods_evaluated).toEqual(['steps/toolCallRequest', 'steps/userMessage']);
  });

  it('rule 4: protocols/MCP/* and wrapped:mcp-<version>/* only when MCP is declared at that version', async () => {
    const server = await h.client().hello({
      methods_implemented: [
        'protocols/MCP/tools/call',
        'wrapped:mcp-2025-06-18/tools/call',
        'wrapped:mcp-2024-11-05/tools/call',
      ],
      wrapped_protocols: [{ protocol: 'MCP', version: '2025-06-18' }],
    });
    expect(server.methods_evaluated).toEqual(['protocols/MCP/tools/call', 'wrapped:mcp-2025-06-18/tools/call']);
  });

  it('rule 4: an empty methods_evaluated is valid, not a refusal', async () => {
    const server = await h.client().hello({ methods_implemented: [] });
    expect(server.methods_evaluated).toEqual([]);
  });

  it('rule 4: agbom/* and agbom_serializations_supported only under an Inspect profile accepted for the session', async () => {
    const methods = ['steps/userMessage', 'agbom/snapshot', 'agbom/changed'];
    const inspecting = await startHarness({ profiles: ['acs-core', 'acs-inspect', 'acs-inspect-dynamic'] });
    try {
      // Offered but not declared by this Guardian (h declares acs-core only): not accepted, so nothing AgBOM.
      const undeclared = await h.client().hello({
        methods_implemented: methods,
        profiles_supported: ['acs-core', 'acs-inspect', 'acs-inspect-dynamic'],
      });
      expect(undeclared.profiles_accepted).toEqual(['acs-core']);
      expect(undeclared.methods_evaluated).toEqual(['steps/userMessage']);
      expect(undeclared.agbom_serializations_supported).toBeUndefined();
      // Declared but not offered by the client.
      const core = await inspecting.client().hello({ methods_implemented: methods, profiles_supported: ['acs-core'] });
      expect(core.methods_evaluated).toEqual(['steps/userMessage']);
      expect(core.agbom_serializations_supported).toBeUndefined();
      // ACS-Inspect: one snapshot, no mid-session mutations (agbom/changed is ACS-Inspect-Dynamic's).
      const c = inspecting.client();
      const inspect = await c.hello({ methods_implemented: methods, profiles_supported: ['acs-core', 'acs-inspect'] });
      expect(inspect.profiles_accepted).toEqual(['acs-core', 'acs-inspect']);
      expect(inspect.methods_evaluated).toEqual(['steps/userMessage', 'agbom/snapshot']);
      expect(inspect.agbom_serializations_supported).toEqual(['canonical', 'cyclonedx-1.6', 'spdx-3.0', 'swid']);
      const changed = await c.exchange(await c.buildRequest('agbom/changed', { removed: ['m1'] }));
      expect('error' in changed && changed.error.code).toBe(-32003);
      const dynamic = await inspecting.client().hello({
        methods_implemented: methods,
        profiles_supported: ['acs-core', 'acs-inspect-dynamic'],
      });
      expect(dynamic.methods_evaluated).toEqual(methods);
      expect(dynamic.agbom_serializations_supported).toEqual(['canonical', 'cyclonedx-1.6', 'spdx-3.0', 'swid']);
    } finally {
      await inspecting.close();
    }
  });

  it('rule 5: profiles_accepted is the honest intersection (acs-core only)', async () => {
    const server = await h.client().hello({ profiles_supported: ['acs-core', 'acs-audit'] });
    expect(server.profiles_accepted).toEqual(['acs-core']);
  });

  it('rule 6: unknown ClientHello fields are ignored; a malformed ClientHello → -32602 with data.pointer', async () => {
    const ok = await h.client().hello({ future_field: { x: 1 } } as never);
    expect(ok.negotiated_version).toBe('0.1.0');
    const err = await refusal(h.client().hello({ transports_supported: [] }));
    expect(err.error.code).toBe(-32602);
    expect(err.error.data?.pointer).toBe('/params/payload/transports_supported');
  });

  it('rule 7: the hello must be signed (unsigned → -32004, unsigned answer)', async () => {
    const c = h.client();
    const req = await c.buildRequest('handshake/hello', {
      acs_versions_supported: ['0.1.0'],
      methods_implemented: [],
      transports_supported: ['http'],
      provenance_producer: 'none',
    });
    delete (req.params as Record<string, unknown>).signature;
    const answer = await h.post(JSON.stringify(req));
    expect('error' in answer && answer.error.code).toBe(-32004);
    expect('error' in answer && answer.error.signature).toBeUndefined();
  });

  it('rule 7: the hello is subject to the timestamp window (-32006, data.skew_window_ms)', async () => {
    const c = h.client({ now: () => new Date(Date.now() - 600_000) });
    const err = await refusal(c.hello());
    expect(err.error.code).toBe(-32006);
    expect(err.error.data?.skew_window_ms).toBe(300000);
  });

  it('rule 8: a second hello for a negotiated session → -32000 renegotiation_not_supported; a replayed hello → -32005', async () => {
    const c = h.client();
    const req = await c.buildRequest('handshake/hello', {
      acs_versions_supported: ['0.1.0'],
      methods_implemented: [],
      transports_supported: ['http'],
      provenance_producer: 'none',
    });
    const first = await h.post(JSON.stringify(req));
    expect('result' in first).toBe(true);
    const replay = await h.post(JSON.stringify(req));
    expect('error' in replay && replay.error.code).toBe(-32005);
    const again = await refusal(c.hello());
    expect(again.error.code).toBe(-32000);
    expect(again.error.data?.reason).toBe('renegotiation_not_supported');
  });

  it('rule 9: a step under another agent_id or key_id gets a signed DENY (agent_id_not_bound / key_not_bound)', async () => {
    const sessionId = randomUUID();
    const c = h.client({ sessionId, keyId: 'k1' });
    await c.hello({ methods_implemented: ['steps/userMessage'] });
    const otherAgent = h.client({ sessionId, agentId: 'intruder', keyId: 'k1' });
    const a = await otherAgent.step('steps/userMessage', { content: [{ type: 'text', value: 'hi' }] });
    expect(a.failure).toBeUndefined();
    expect(a.decision).toBe('deny');
    expect(a.result?.reason_codes).toEqual(['agent_id_not_bound']);
    expect(a.result?.chain_hash).toBeUndefined();
    const otherKey = h.client({ sessionId, keyId: 'k2' });
    const b = await otherKey.step('steps/userMessage', { content: [{ type: 'text', value: 'hi' }] });
    expect(b.decision).toBe('deny');
    expect(b.result?.reason_codes).toEqual(['key_not_bound']);
  });

  it('rule 10: a step for a session that never completed a handshake → -32003 (error, not a decision)', async () => {
    const c = h.client();
    const out = await c.step('steps/userMessage', { content: [{ type: 'text', value: 'hi' }] });
    expect(out.failure?.reason).toBe('error_response');
    expect(out.failure?.error?.code).toBe(-32003);
    expect(out.failure?.error?.data?.reason).toBe('no_session');
  });
});

describe('handshake/hello with a provenance-requiring policy', () => {
  it('rule 3: provenance_producer "none" → -32002; "deterministic" is accepted', async () => {
    const strict = await startHarness({ policyRequiresProvenance: true });
    try {
      const err = await refusal(strict.client().hello({ provenance_producer: 'none' }));
      expect(err.error.code).toBe(-32002);
      expect(err.error.message).toBe('PROVENANCE_REQUIRED');
      const ok = await strict.client().hello({ provenance_producer: 'deterministic' });
      expect(ok.policy_requires_provenance).toBe(true);
    } finally {
      await strict.close();
    }
  });
});
