// The wire-level members of the ACS-Core conformance corpus (test/fixtures/acs/acs-core, probityai
// agent-evidence-vectors). The corpus describes requests abstractly ("acs": "0.1", "hooks/<name>", params =
// payload, session "s-0001", signature_state); each is translated onto a real v0.1.0 envelope, sent over HTTP
// and judged by the corpus's expected verdict and code. Which members are covered and why the others are not
// is listed in docs/conformance.md.
import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AcsClient } from '../../src/client/index.ts';
import { signEnvelope, hmacEnvelopeSignatures } from '../../src/acs/signing/index.ts';
import type { AcsRequest, ResponseEnvelope } from '../../src/acs/types.ts';
import { startHarness, TEST_IKM, type Harness } from './fixtures/harness.ts';

const DIR = new URL('../fixtures/acs/acs-core/', import.meta.url);
const manifest = JSON.parse(readFileSync(new URL('MANIFEST.json', DIR), 'utf8'));
const CODES: Record<string, number> = manifest.codeRegistry;

interface AbstractRequest {
  acs: string;
  method: string;
  metadata: { session_id: string; turn_id?: string };
  params: Record<string, unknown>;
  request_id: string;
  timestamp: string;
}
interface Vector {
  id: string;
  expected: { verdict: 'allow' | 'deny'; code: string | null };
  payload: Record<string, unknown> & {
    request?: AbstractRequest;
    steps?: { request: AbstractRequest }[];
    signature_state?: string;
    guardian_clock?: string;
  };
}
const load = (id: string): Vector => JSON.parse(readFileSync(new URL(`vectors/${id}.json`, DIR), 'utf8'));

/** "s-0001" is not a UUID (request-envelope.json requires one): each vector run gets its own. */
function toPayload(r: AbstractRequest): Record<string, unknown> {
  if (r.method === 'handshake/hello') return r.params;
  const tool = r.params.tool as { name: string; arguments: Record<string, unknown> };
  return {
    tool: { name: tool.name },
    arguments: Object.fromEntries(Object.entries(tool.arguments).map(([k, v]) => [k, { value: v }])),
  };
}

async function toEnvelope(r: AbstractRequest, sessionId: string, signatureState = 'VALID'): Promise<AcsRequest> {
  const version = r.acs.split('.').length === 2 ? `${r.acs}.0` : r.acs;
  const envelope = {
    jsonrpc: '2.0' as const,
    method: r.method.replace(/^hooks\//, 'steps/'),
    id: r.request_id,
    params: {
      acs_version: version,
      request_id: r.request_id,
      timestamp: r.timestamp,
      metadata: { agent_id: 'vector-agent', session_id: sessionId },
      payload: toPayload(r),
    },
  };
  const sigs = hmacEnvelopeSignatures(TEST_IKM);
  if (signatureState === 'ABSENT') return envelope;
  if (signatureState === 'INVALID')
    return {
      ...envelope,
      params: { ...envelope.params, signature: { algorithm: 'HMAC-SHA256', key_id: 'k1', value: 'AAAA' } },
    };
  if (signatureState === 'COVERS_SUBSET') {
    // Signed over the envelope with metadata.session_id removed, then sent with it.
    const { session_id: _s, ...meta } = envelope.params.metadata;
    const subset = await signEnvelope({ ...envelope, params: { ...envelope.params, metadata: meta } }, 'params', sigs, {
      sessionId,
      keyId: 'k1',
    });
    return {
      ...envelope,
      params: { ...envelope.params, signature: (subset.params as { signature?: unknown }).signature },
    } as unknown as AcsRequest;
  }
  return (await signEnvelope(envelope, 'params', sigs, { sessionId, keyId: 'k1' })) as unknown as AcsRequest;
}

/** The corpus verdict of one answer: a decision's disposition, or deny + registry code for an error. */
function verdictOf(answer: ResponseEnvelope): { verdict: string; code: number | null } {
  if ('error' in answer) return { verdict: 'deny', code: answer.error.code };
  const result = answer.result as { decision?: string };
  return { verdict: result.decision ?? 'allow', code: null };
}

// Every member's Guardian clock is 2026-09-09T12:00:00Z; one Guardian serves all members, each in its own session.
const CLOCK = '2026-09-09T12:00:00Z';
let shared: Harness;
beforeAll(async () => {
  shared = await startHarness({ now: () => new Date(CLOCK) });
});
afterAll(async () => {
  await shared.close();
});

async function withGuardian(clock: string, run: (h: Harness, sessionId: string) => Promise<void>): Promise<void> {
  expect(clock).toBe(CLOCK);
  await run(shared, crypto.randomUUID());
}

async function handshake(h: Harness, sessionId: string, clock: string): Promise<void> {
  const c = new AcsClient({
    transport: async (m) => JSON.stringify(await h.post(m)),
    ikm: TEST_IKM,
    agentId: 'vector-agent',
    sessionId,
    keyId: 'k1',
    now: () => new Date(clock),
  });
  await c.hello({ methods_implemented: ['steps/toolCallRequest', 'steps/toolCallResult'] });
}

const expectVerdict = (v: Vector, answer: ResponseEnvelope): void => {
  const got = verdictOf(answer);
  expect(got.verdict, v.id).toBe(v.expected.verdict);
  expect(got.code, v.id).toBe(v.expected.code === null ? null : CODES[v.expected.code]);
};

describe('ACS-Core vectors: single requests after a handshake', () => {
  for (const id of [
    'v0577dc8ccd4d7e47',
    'vb87b86b4930665ca',
    'vf80a81054d3f0862',
    'vd67cd207a4eb6798',
    'va6d6e952d417c5a1',
    'vb10df32610db1173',
  ]) {
    const v = load(id);
    it(`${id}: ${v.expected.verdict}${v.expected.code ? ' ' + v.expected.code : ''}`, async () => {
      const clock = v.payload.guardian_clock ?? CLOCK;
      await withGuardian(clock, async (h, sessionId) => {
        await handshake(h, sessionId, clock);
        expectVerdict(
          v,
          await h.post(JSON.stringify(await toEnvelope(v.payload.request!, sessionId, v.payload.signature_state))),
        );
      });
    });
  }
});

describe('ACS-Core vectors: handshakes', () => {
  for (const id of ['v412653087b92cb07', 'v78927805373a6c06']) {
    const v = load(id);
    it(`${id}: ${v.expected.verdict}${v.expected.code ? ' ' + v.expected.code : ''}`, async () => {
      await withGuardian(CLOCK, async (h, sessionId) => {
        expectVerdict(v, await h.post(JSON.stringify(await toEnvelope(v.payload.request!, sessionId))));
      });
    });
  }
});

describe('ACS-Core vectors: sequences (last step judged, earlier steps must be allowed)', () => {
  for (const id of ['vef655ce2a45f618b', 'v3e946bcfde26bbe2', 'vae2037ee96435463']) {
    const v = load(id);
    it(`${id}: ${v.expected.verdict}${v.expected.code ? ' ' + v.expected.code : ''}`, async () => {
      const steps = v.payload.steps!;
      const clock = CLOCK;
      await withGuardian(clock, async (h, sessionId) => {
        if (steps[0].request.method !== 'handshake/hello') await handshake(h, sessionId, clock);
        const answers: ResponseEnvelope[] = [];
        for (const s of steps) answers.push(await h.post(JSON.stringify(await toEnvelope(s.request, sessionId))));
        for (const early of answers.slice(0, -1)) expect('error' in early ? early.error : null, v.id).toBeNull();
        expectVerdict(v, answers.at(-1)!);
      });
    });
  }
});

describe('ACS-Core vectors: client side', () => {
  it('va8eebd3334b97257: a gateway error page where a decision belongs is not a decision (fail closed → deny)', async () => {
    const v = load('va8eebd3334b97257');
    const body = (v.payload.guardian_response as { body: string }).body;
    const c = new AcsClient({ transport: async () => body, ikm: TEST_IKM, agentId: 'a', onDecisionFailure: 'deny' });
    const out = await c.step('steps/toolCallRequest', { tool: { name: 'records.lookup' }, arguments: {} });
    expect(out.decision).toBe(v.expected.verdict);
    expect(out.failure?.reason).toBe('transport_failed');
  });
});
