// Dispatch order and the §17 error table (docs/conformance.md, request path), end to end over real HTTP.
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startHarness, type Harness } from './fixtures/harness.ts';
import type { AcsClient } from '../../src/client/index.ts';

let h: Harness;
let c: AcsClient;
const MSG = { content: [{ type: 'text', value: 'hi' }] };

beforeAll(async () => {
  h = await startHarness();
  c = h.client();
  await c.hello({
    methods_implemented: [
      'steps/sessionStart',
      'steps/userMessage',
      'steps/toolCallRequest',
      'steps/sessionEnd',
      'system/ping',
    ],
  });
});
afterAll(async () => {
  await h.close();
});

const errorOf = (a: unknown) =>
  (a as { error: { code: number; message: string; data?: Record<string, unknown>; signature?: unknown } }).error;

describe('dispatch: protocol faults', () => {
  it('-32700 for invalid JSON, id null, unsigned', async () => {
    const a = await h.post('{"jsonrpc": "2.0", "method": ');
    expect(a.id).toBeNull();
    expect(errorOf(a).code).toBe(-32700);
    expect(errorOf(a).signature).toBeUndefined();
  });

  it('-32700 for invalid UTF-8', async () => {
    const a = await h.post(new Uint8Array([0x7b, 0x22, 0xff, 0xfe, 0x22, 0x3a, 0x31, 0x7d]));
    expect(errorOf(a).code).toBe(-32700);
    expect(errorOf(a).data?.reason).toBe('invalid_utf8');
  });

  it('-32600 for a batch (batches are refused, documented)', async () => {
    const req = await c.buildRequest('steps/userMessage', MSG);
    const a = await h.post(JSON.stringify([req, req]));
    expect(a.id).toBeNull();
    expect(errorOf(a).code).toBe(-32600);
    expect(errorOf(a).data?.reason).toBe('batch_unsupported');
  });

  it('-32600 with data.pointer for a schema-invalid envelope; the id is echoed when it is valid', async () => {
    const req = await c.buildRequest('steps/userMessage', MSG);
    const bad = { ...req, params: { ...req.params, request_id: 'not-a-uuid' } };
    const a = await h.post(JSON.stringify(bad));
    expect(a.id).toBe(req.id);
    expect(errorOf(a).code).toBe(-32600);
    expect(errorOf(a).data?.pointer).toBe('/params/request_id');
    const extra = await h.post(JSON.stringify({ ...req, extra: true }));
    expect(errorOf(extra).code).toBe(-32600);
    expect(errorOf(extra).data?.pointer).toBe('/extra');
    const wrongVersion = await h.post(JSON.stringify({ ...req, jsonrpc: '1.0' }));
    expect(errorOf(wrongVersion).data?.pointer).toBe('/jsonrpc');
  });

  it('-32600 for numbers and strings JCS cannot canonicalise (1e400, 2^64, lone surrogate)', async () => {
    const req = await c.buildRequest('steps/userMessage', MSG);
    const text = JSON.stringify(req);
    const huge = await h.post(text.replace('"payload":{', '"payload":{"n":1e400,'));
    expect(errorOf(huge).code).toBe(-32600);
    expect(errorOf(huge).data?.reason).toBe('not_canonicalizable');
    expect(errorOf(huge).data?.pointer).toBe('/params/payload/n');
    const big = await h.post(text.replace('"payload":{', '"payload":{"n":18446744073709551616,'));
    expect(errorOf(big).data?.reason).toBe('not_canonicalizable');
    const lone = await h.post(text.replace('"value":"hi"', '"value":"\\ud800x"'));
    expect(errorOf(lone).code).toBe(-32600);
    expect(errorOf(lone).data?.pointer).toBe('/params/payload/content/0/value');
    const escaped = await h.post(text.replace('"payload":{', '"payload":{"a/b~c":[0,{"n":1e400}],'));
    expect(errorOf(escaped).data?.pointer).toBe('/params/payload/a~1b~0c/1/n');
    const loneKey = await h.post(text.replace('"payload":{', '"payload":{"k\\udc00":1,'));
    expect(errorOf(loneKey).data?.pointer).toBe('/params/payload/k\udc00');
  });

  it('-32600 for 10k-deep nesting, answered without a crash', async () => {
    const a = await h.post('['.repeat(10_000) + ']'.repeat(10_000));
    expect(errorOf(a).code).toBe(-32600);
    expect(errorOf(a).data?.reason).toBe('nesting_too_deep');
  });

  it('-32004 unsigned for a missing, malformed or wrong signature (also over a subset of the envelope)', async () => {
    const req = await c.buildRequest('steps/userMessage', MSG);
    const { signature, ...unsignedParams } = req.params;
    const missing = await h.post(JSON.stringify({ ...req, params: unsignedParams }));
    expect(errorOf(missing).code).toBe(-32004);
    expect(errorOf(missing).data?.reason).toBe('signature_missing');
    expect(errorOf(missing).signature).toBeUndefined();
    const malformed = await h.post(
      JSON.stringify({ ...req, params: { ...req.params, signature: { ...signature!, value: 'not base64!' } } }),
    );
    expect(errorOf(malformed).data?.reason).toBe('signature_malformed');
    // Tamper with the payload after signing: the signature no longer covers the envelope.
    const tampered = await h.post(
      JSON.stringify({ ...req, params: { ...req.params, payload: { content: [{ type: 'text', value: 'bye' }] } } }),
    );
    expect(errorOf(tampered).code).toBe(-32004);
    expect(errorOf(tampered).data?.reason).toBe('signature_mismatch');
    const otherMethod = await h.post(JSON.stringify({ ...req, method: 'steps/agentResponse' }));
    expect(errorOf(otherMethod).code).toBe(-32004);
    const otherAlg = await h.post(
      JSON.stringify({ ...req, params: { ...req.params, signature: { ...signature!, algorithm: 'ML-DSA-65' } } }),
    );
    expect(errorOf(otherAlg).code).toBe(-32004);
  });

  it('-32601 (signed) for a method ACS does not define; -32003 for reserved namespaces', async () => {
    const a = await c.exchange(await c.buildRequest('steps/foo', {}));
    expect(errorOf(a).code).toBe(-32601);
    expect(errorOf(a).data?.method).toBe('steps/foo');
    expect(await c.verifyResponse(a)).toBe(true);
    const t = await c.exchange(await c.buildRequest('trace/spans', {}));
    expect(errorOf(t).code).toBe(-32003);
    const a2a = await c.exchange(await c.buildRequest('protocols/A2A/message/send', {}));
    expect(errorOf(a2a).code).toBe(-32003);
  });

  it('-32003 with data.method for a method outside methods_evaluated', async () => {
    const a = await c.exchange(await c.buildRequest('steps/agentResponse', MSG));
    expect(errorOf(a).code).toBe(-32003);
    expect(errorOf(a).data?.method).toBe('steps/agentResponse');
    expect(await c.verifyResponse(a)).toBe(true);
  });

  it('-32602 with data.pointer and data.method for a payload that fails its hook schema', async () => {
    const a = await c.exchange(await c.buildRequest('steps/userMessage', { content: [] }));
    expect(errorOf(a).code).toBe(-32602);
    expect(errorOf(a).data?.pointer).toBe('/params/payload/content');
    expect(errorOf(a).data?.method).toBe('steps/userMessage');
    const t = await c.exchange(await c.buildRequest('steps/toolCallRequest', { tool: { name: 'Bash' } }));
    expect(errorOf(t).data?.pointer).toBe('/params/payload/arguments');
  });

  it('unknown fields are ignored at every level below the envelope', async () => {
    const out = await c.step(
      'steps/userMessage',
      { content: [{ type: 'text', value: 'hi', extra: 1 }], future: true },
      { metadata: { future_meta: 'x' }, params: { future_param: 1 } },
    );
    expect(out.failure).toBeUndefined();
    expect(out.decision).toBe('allow');
  });
});

describe('dispatch: replay and freshness (§10.3)', () => {
  it('a duplicate request_id within the session → -32005; the same id in another session is fine', async () => {
    const req = await c.buildRequest('steps/userMessage', MSG);
    const first = await c.exchange(req);
    expect('result' in first).toBe(true);
    const again = await c.exchange(req);
    expect(errorOf(again).code).toBe(-32005);
    expect(errorOf(again).data?.reason).toBe('duplicate_request_id');
    const other = h.client();
    await other.hello({ methods_implemented: ['steps/userMessage'] });
    const out = await other.step('steps/userMessage', MSG, { params: { request_id: req.params.request_id } });
    expect(out.failure).toBeUndefined();
  });

  it('a duplicate nonce → -32005', async () => {
    const nonce = 'n-' + randomUUID();
    await c.step('steps/userMessage', MSG, { params: { nonce } });
    const a = await c.exchange(await c.buildRequest('steps/userMessage', MSG, { params: { nonce } }));
    expect(errorOf(a).code).toBe(-32005);
    expect(errorOf(a).data?.reason).toBe('duplicate_nonce');
  });

  it('timestamps further than the skew window, past or future → -32006 with data.skew_window_ms; a replay of the refused request → -32005', async () => {
    for (const offset of [-301_000, 301_000]) {
      const req = await c.buildRequest('steps/userMessage', MSG, {
        params: { timestamp: new Date(Date.now() + offset).toISOString() },
      });
      const a = await c.exchange(req);
      expect(errorOf(a).code).toBe(-32006);
      expect(errorOf(a).data?.skew_window_ms).toBe(300000);
      const replay = await c.exchange(req);
      expect(errorOf(replay).code).toBe(-32005);
    }
    const inside = await c.step('steps/userMessage', MSG, {
      params: { timestamp: new Date(Date.now() - 290_000).toISOString() },
    });
    expect(inside.failure).toBeUndefined();
  });
});

describe('system/ping (§11)', () => {
  it('always allows, echoes, needs no signature or session, writes no chain, takes no replay slot', async () => {
    const stranger = h.client();
    const req = await stranger.buildRequest('system/ping', { echo: { n: 1 } });
    const { signature: _s, ...unsigned } = req.params;
    const a = await h.post(JSON.stringify({ ...req, params: unsigned }));
    const result = (a as unknown as { result: Record<string, unknown> }).result;
    expect(result.decision).toBe('allow');
    expect(result.payload).toMatchObject({ status: 'ok', echo: { n: 1 } });
    expect(result.chain_hash).toBeUndefined();
    expect(result.signature).toBeUndefined();
    const again = await h.post(JSON.stringify({ ...req, params: unsigned }));
    expect((again as { result: { decision: string } }).result.decision).toBe('allow');
    const signed = await stranger.exchange(req);
    expect(await stranger.verifyResponse(signed)).toBe(true);
    expect(await h.store.getChainHead(stranger.sessionId)).toBeNull();
  });
});
