// Wrapped MCP (ACS extend_mcp.md) and agbom/* (§11) through the full pipeline over real HTTP.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { AcsClient } from '../../src/client/index.ts';
import type { Json } from '../../src/json.ts';
import { scriptedDecisionEngine } from './fixtures/decision-module.ts';
import { startHarness, type Harness } from './fixtures/harness.ts';

// Policy fixture: deny wrapped tools/call of "rm", redact via override otherwise for "fetch".
const decide = (input: Json): Json => {
  const p = (input as { params: { payload: { params?: { name?: string } } } }).params.payload;
  if (p.params?.name === 'rm')
    return { decision: 'deny', reasoning: 'destructive tool', reason_codes: ['destructive_shell_command_blocked'] };
  if (p.params?.name === 'fetch')
    return {
      decision: 'modify',
      reasoning: 'pin host',
      modifications: { parameter_overrides: { url: 'https://example.org' } },
    };
  return { decision: 'allow' };
};
let h: Harness;
let c: AcsClient;
const VERSION = '2025-06-18';
beforeAll(async () => {
  h = await startHarness({
    engine: await scriptedDecisionEngine(decide),
    profiles: ['acs-core', 'acs-inspect', 'acs-inspect-dynamic'],
  });
  c = h.client();
  await c.hello({
    methods_implemented: [
      'protocols/MCP/tools/call',
      'protocols/MCP/initialize',
      `wrapped:mcp-${VERSION}/tools/call`,
      'agbom/snapshot',
      'agbom/changed',
    ],
    wrapped_protocols: [{ protocol: 'MCP', version: VERSION }],
    profiles_supported: ['acs-core', 'acs-inspect-dynamic'],
  });
});
afterAll(async () => {
  await h.close();
});

describe('wrapped MCP', () => {
  it('evaluates the intact MCP request in params.payload (all five dispositions available), chained', async () => {
    const deny = await c.step('protocols/MCP/tools/call', {
      jsonrpc: '2.0',
      id: 7,
      method: 'tools/call',
      params: { name: 'rm', arguments: { path: '/' } },
    });
    expect(deny.decision).toBe('deny');
    expect(deny.result?.chain_hash).toMatch(/^[0-9a-f]{64}$/);
    const modify = await c.step(`wrapped:mcp-${VERSION}/tools/call`, {
      jsonrpc: '2.0',
      id: 8,
      method: 'tools/call',
      params: { name: 'fetch', arguments: { url: 'http://evil' } },
    });
    expect(modify.decision).toBe('modify');
    expect(modify.result?.modifications).toEqual({ parameter_overrides: { url: 'https://example.org' } });
    const response = await c.step('protocols/MCP/tools/call', { jsonrpc: '2.0', id: 8, result: { content: [] } });
    expect(response.decision).toBe('allow');
  });

  it('a malformed MCP message → -32602 with data.pointer', async () => {
    const cases: [Record<string, unknown>, string][] = [
      [{ jsonrpc: '1.0', method: 'tools/call', id: 1 }, '/params/payload/jsonrpc'],
      [{ jsonrpc: '2.0', method: 'prompts/get', id: 1 }, '/params/payload/method'],
      [{ jsonrpc: '2.0', method: 'tools/call', id: null }, '/params/payload/id'],
      [{ jsonrpc: '2.0', method: 'tools/call', id: 1, params: [1] }, '/params/payload/params'],
      [{ jsonrpc: '2.0', id: 1, result: {}, error: { code: 1, message: 'x' } }, '/params/payload'],
      [{ jsonrpc: '2.0', id: 1, error: { code: 'x' } }, '/params/payload/error'],
      [{ jsonrpc: '2.0', result: {} }, '/params/payload/id'],
    ];
    for (const [payload, pointer] of cases) {
      const a = await c.exchange(await c.buildRequest('protocols/MCP/tools/call', payload));
      expect('error' in a && a.error.code, JSON.stringify(payload)).toBe(-32602);
      expect('error' in a && a.error.data?.pointer, JSON.stringify(payload)).toBe(pointer);
    }
  });

  it('a wrapped version or MCP method that was not negotiated → -32003', async () => {
    const a = await c.exchange(
      await c.buildRequest('wrapped:mcp-2024-11-05/tools/call', { jsonrpc: '2.0', id: 1, method: 'tools/call' }),
    );
    expect('error' in a && a.error.code).toBe(-32003);
    const b = await c.exchange(
      await c.buildRequest('protocols/MCP/resources/read', { jsonrpc: '2.0', id: 1, method: 'resources/read' }),
    );
    expect('error' in b && b.error.code).toBe(-32003);
  });
});

describe('agbom/*', () => {
  it('agbom/snapshot and agbom/changed are evaluated and chained when ACS-Inspect-Dynamic is accepted', async () => {
    const snap = await c.step('agbom/snapshot', {
      components: [
        {
          id: 'm1',
          type: 'model',
          name: 'gpt',
          version: '5',
          provider: 'acme',
          endpoint: 'https://models.example/gpt',
          model_fields: { context_window: 128000 },
        },
      ],
    });
    expect(snap.failure).toBeUndefined();
    expect(snap.decision).toBe('allow');
    expect(snap.result?.chain_hash).toMatch(/^[0-9a-f]{64}$/);
    const changed = await c.step('agbom/changed', {
      added: [
        {
          id: 't1',
          type: 'tool',
          name: 'Bash',
          version: '5.2',
          provider: 'gnu',
          tool_fields: { capability: 'process.execute' },
        },
      ],
    });
    expect(changed.result?.chain_hash).toBe(c.chainHash);
    const bad = await c.exchange(
      await c.buildRequest('agbom/snapshot', { components: [{ id: 'x', type: 'spaceship' }] }),
    );
    expect('error' in bad && bad.error.code).toBe(-32602);
  });
});
