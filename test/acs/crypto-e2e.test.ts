// ML-DSA-65 (acs-crypto) and ECDSA-P256 sessions end to end over real HTTP, through the serve wiring
// (openGuardianRuntime): requests signed by the agent's key, answers signed by the Guardian's key in the same
// algorithm (ACS §10, §10.1), ServerHello advertising exactly what the Guardian verifies, and `acs-crypto` in
// profiles_accepted only when ML-DSA-65 is configured (docs/keys.md).
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { AcsClient, httpTransport } from '../../src/client/index.ts';
import { cryptoEnvelopeSignatures, verifyEnvelope } from '../../src/acs/signing/index.ts';
import {
  createSignatureRegistry,
  generateKeyFile,
  publicPart,
  type SignatureAlgorithm,
} from '../../src/crypto/index.ts';
import { openGuardianRuntime, type GuardianRuntime } from '../../src/server/app.ts';
import { startHttpServer, type RunningHttpServer } from '../../src/server/http.ts';
import { openStore } from '../../src/store/index.ts';
import { constantDecisionEngine } from './fixtures/decision-module.ts';

const IKM_B64 = Buffer.from(new Uint8Array(32).fill(9)).toString('base64');
const METHODS = ['steps/sessionStart', 'steps/toolCallRequest'];
const cleanups: (() => Promise<void>)[] = [];
afterAll(async () => {
  for (const c of cleanups.reverse()) await c();
});

interface Running {
  runtime: GuardianRuntime;
  server: RunningHttpServer;
}

async function startGuardian(keys: unknown[]): Promise<Running> {
  const dataDir = mkdtempSync(join(tmpdir(), 'acs-crypto-e2e-'));
  const store = await openStore({ inMemory: true });
  const engine = await constantDecisionEngine({ decision: 'allow' });
  const env: NodeJS.ProcessEnv = {
    GUARDIAN_HMAC_IKM: IKM_B64,
    ...(keys.length ? { GUARDIAN_KEYS: JSON.stringify(keys) } : {}),
  };
  const runtime = await openGuardianRuntime({ dataDir, store, engine, env, onAudit: () => {} });
  const server = await startHttpServer(runtime.guardian, { port: 0 });
  cleanups.push(async () => {
    await server.close();
    await runtime.close();
    await store.close();
    rmSync(dataDir, { recursive: true, force: true });
  });
  return { runtime, server };
}

async function post(server: RunningHttpServer, body: string): Promise<Record<string, any>> {
  const res = await fetch(server.url, { method: 'POST', headers: { 'content-type': 'application/json' }, body });
  return (await res.json()) as Record<string, any>;
}

const ASYMMETRIC: SignatureAlgorithm[] = ['ML-DSA-65', 'ECDSA-P256'];

describe.each(ASYMMETRIC)('%s session over HTTP', (algorithm) => {
  const agentKey = generateKeyFile(algorithm, { keyId: 'agent-key', agentId: 'agent-1' });
  const guardianKey = generateKeyFile(algorithm, { keyId: 'guardian-key' });
  const agentRegistry = createSignatureRegistry({ keys: [agentKey, publicPart(guardianKey)] });
  cleanups.push(() => agentRegistry.close());
  const running = startGuardian([publicPart(agentKey), guardianKey]);
  const newClient = async (): Promise<AcsClient> =>
    new AcsClient({
      transport: httpTransport((await running).server.url),
      agentId: 'agent-1',
      keyId: 'agent-key',
      signatures: cryptoEnvelopeSignatures(agentRegistry, algorithm),
    });

  it('handshake: ServerHello lists exactly the verified algorithms; acs-crypto accepted only with ML-DSA-65', async () => {
    const { runtime } = await running;
    const client = await newClient();
    const hello = await client.hello({ methods_implemented: METHODS, profiles_supported: ['acs-core', 'acs-crypto'] });
    expect([...(hello.signature_algorithms_supported ?? [])].sort()).toEqual(['HMAC-SHA256', algorithm].sort());
    expect(hello.signature_algorithms_supported).toEqual(runtime.registry.supportedAlgorithms());
    expect(hello.profiles_accepted).toEqual(algorithm === 'ML-DSA-65' ? ['acs-core', 'acs-crypto'] : ['acs-core']);
  });

  it('a step signed by the agent key is answered, signed by the Guardian key in the same algorithm', async () => {
    const { server } = await running;
    const client = await newClient();
    await client.hello({ methods_implemented: METHODS });
    // The SDK's full path: signature, request_id and the local chain recomputation all accept the answer.
    const outcome = await client.step('steps/toolCallRequest', { tool: { name: 'shell' }, arguments: {} });
    expect(outcome.failure).toBeUndefined();
    expect(outcome.result?.signature?.algorithm).toBe(algorithm);
    const request = await client.buildRequest('steps/toolCallRequest', {
      tool: { name: 'shell' },
      arguments: { command: { value: 'ls' } },
    });
    expect(request.params.signature).toMatchObject({ algorithm, key_id: 'agent-key' });
    const answer = await post(server, JSON.stringify(request));
    expect(answer.result?.decision).toBe('allow');
    expect(answer.result.signature).toMatchObject({ algorithm, key_id: 'guardian-key' });
    // Verified by a party holding only the Guardian's public key (not the SDK's own check).
    const verifierOnly = createSignatureRegistry({ keys: [publicPart(guardianKey)] });
    try {
      const outcome = await verifyEnvelope(cryptoEnvelopeSignatures(verifierOnly), answer, 'result', {
        sessionId: client.sessionId,
      });
      expect(outcome.ok).toBe(true);
      const tamperedAnswer = { ...answer, result: { ...answer.result, decision: 'deny' } };
      expect(
        (
          await verifyEnvelope(cryptoEnvelopeSignatures(verifierOnly), tamperedAnswer, 'result', {
            sessionId: client.sessionId,
          })
        ).ok,
      ).toBe(false);
    } finally {
      await verifierOnly.close();
    }
  });

  it('a tampered request signature is -32004', async () => {
    const { server } = await running;
    const client = await newClient();
    await client.hello({ methods_implemented: METHODS });
    const request = await client.buildRequest('steps/toolCallRequest', { tool: { name: 'shell' }, arguments: {} });
    const sig = request.params.signature as { value: string };
    const bytes = Buffer.from(sig.value, 'base64');
    bytes[bytes.length >> 1] ^= 0x01;
    const tampered = {
      ...request,
      params: { ...request.params, signature: { ...request.params.signature, value: bytes.toString('base64') } },
    };
    const answer = await post(server, JSON.stringify(tampered));
    expect(answer.error?.code).toBe(-32004);
    // A signed field changed under an intact signature is refused the same way.
    const altered = { ...request, params: { ...request.params, payload: { tool: { name: 'rm' }, arguments: {} } } };
    expect((await post(server, JSON.stringify(altered))).error?.code).toBe(-32004);
  });
});

describe('HMAC-only Guardian', () => {
  it('advertises HMAC-SHA256 only and does not accept acs-crypto', async () => {
    const { server } = await startGuardian([]);
    const client = new AcsClient({
      transport: httpTransport(server.url),
      agentId: 'agent-1',
      ikm: Buffer.from(IKM_B64, 'base64'),
    });
    const hello = await client.hello({ methods_implemented: METHODS, profiles_supported: ['acs-core', 'acs-crypto'] });
    expect(hello.signature_algorithms_supported).toEqual(['HMAC-SHA256']);
    expect(hello.profiles_accepted).toEqual(['acs-core']);
    const outcome = await client.step('steps/toolCallRequest', { tool: { name: 'shell' }, arguments: {} });
    expect(outcome.failure).toBeUndefined();
    expect(outcome.result?.signature?.algorithm).toBe('HMAC-SHA256');
  });
});
