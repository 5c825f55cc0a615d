// The profiles the Guardian declares (ACS conformance.md, "Profile declaration"): the runtime `guardian serve`
// builds, offered all seven, accepts exactly those whose every MUST has a passing test (docs/conformance.md,
// "Profiles"), advertises its AgBOM serializations with Inspect, and — for ACS-Audit — every ContextEntry of a
// mixed session commits to its request (request_hash = SHA-256 of the JCS params, and the request's timestamp).
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sharedValidator } from '../../src/acs/validation/index.ts';
import { verifyChain } from '../../src/audit/index.ts';
import { computeEntryHash, computeRequestHash } from '../../src/chain/index.ts';
import { AcsClient, httpTransport } from '../../src/client/index.ts';
import { loadPolicyEngine, openGuardianRuntime, type GuardianRuntime } from '../../src/server/app.ts';
import { startHttpServer, type RunningHttpServer } from '../../src/server/http.ts';
import { openStore } from '../../src/store/index.ts';
import type { DurableStore } from '../../src/store/types.ts';
import { expectValidAnswer, TEST_IKM } from '../acs/fixtures/harness.ts';
import { ACS_PROFILES } from '../acs/fixtures/profiles.ts';
import { INSPECT_METHODS, REALISTIC_COMPONENTS } from './fixtures.ts';

const ROOT = new URL('../../', import.meta.url).pathname;
let dataDir: string;
let store: DurableStore;
let runtime: GuardianRuntime;
let server: RunningHttpServer;

beforeAll(async () => {
  dataDir = mkdtempSync(join(tmpdir(), 'agbom-profiles-'));
  store = await openStore({ inMemory: true });
  const { engine } = await loadPolicyEngine({ cwd: ROOT, evaluationTimeoutMs: 5000 });
  const env = { GUARDIAN_HMAC_IKM: Buffer.from(TEST_IKM).toString('base64') };
  runtime = await openGuardianRuntime({ dataDir, store, engine, env, onAudit: () => {} });
  server = await startHttpServer(runtime.guardian, { port: 0 });
}, 120_000);
afterAll(async () => {
  await server?.close();
  await runtime?.close();
  await store?.close();
  rmSync(dataDir, { recursive: true, force: true });
});

function client(): AcsClient {
  const base = httpTransport(server.url);
  return new AcsClient({
    transport: async (m) => {
      const text = await base(m);
      expectValidAnswer(JSON.parse(text));
      return text;
    },
    ikm: TEST_IKM,
    agentId: 'agent-1',
  });
}

describe('profiles declared in the handshake', () => {
  it('accepts acs-core, acs-inspect, acs-inspect-dynamic, acs-provenance and acs-audit of the seven, and advertises the AgBOM serializations', async () => {
    const hello = await client().hello({
      methods_implemented: INSPECT_METHODS,
      profiles_supported: ACS_PROFILES,
      provenance_producer: 'deterministic',
    });
    expect(hello.profiles_accepted).toEqual([
      'acs-core',
      'acs-inspect',
      'acs-inspect-dynamic',
      'acs-provenance',
      'acs-audit',
    ]);
    expect(hello.agbom_serializations_supported).toEqual(['canonical', 'cyclonedx-1.6', 'spdx-3.0', 'swid']);
    expect(hello.methods_evaluated).toEqual(INSPECT_METHODS);
  });

  it('acs-provenance is not accepted from a producer of no provenance', async () => {
    const hello = await client().hello({ methods_implemented: INSPECT_METHODS, profiles_supported: ACS_PROFILES });
    expect(hello.profiles_accepted).toEqual(['acs-core', 'acs-inspect', 'acs-inspect-dynamic', 'acs-audit']);
  });

  it('without an Inspect profile: no agbom/* methods and no serializations', async () => {
    const hello = await client().hello({ methods_implemented: INSPECT_METHODS, profiles_supported: ['acs-core'] });
    expect(hello.profiles_accepted).toEqual(['acs-core']);
    expect(hello.agbom_serializations_supported).toBeUndefined();
    expect(hello.methods_evaluated).not.toContain('agbom/snapshot');
  });
});

describe('acs-audit', () => {
  it('every ContextEntry carries request_hash over the params as received and the request timestamp', async () => {
    const c = client();
    await c.hello({
      methods_implemented: INSPECT_METHODS,
      profiles_supported: ['acs-core', 'acs-inspect', 'acs-audit'],
    });
    // The bundled library's default configuration: the content step before the snapshot is denied, then allowed.
    expect((await c.step('steps/sessionStart', {})).decision).toBe('allow');
    expect((await c.step('steps/userMessage', { content: [{ type: 'text', value: 'early' }] })).decision).toBe('deny');
    expect((await c.step('agbom/snapshot', { components: REALISTIC_COMPONENTS })).decision).toBe('allow');
    expect((await c.step('steps/userMessage', { content: [{ type: 'text', value: 'hi' }] })).decision).toBe('allow');
    const entries = await store.listContextEntries(c.sessionId);
    expect(entries.map((e) => e.content.step_type)).toEqual([
      'steps/sessionStart',
      'steps/userMessage',
      'agbom/snapshot',
      'steps/userMessage',
    ]);
    for (const e of entries) {
      const params = e.params as { timestamp: string };
      expect(e.content.request_hash).toBe(computeRequestHash(params));
      expect(e.content.timestamp).toBe(params.timestamp);
    }
  });

  it('every ContextEntry carries the provenance_summary of what entered at its step, hashed into the chain', async () => {
    const c = client();
    await c.hello({
      methods_implemented: INSPECT_METHODS,
      profiles_supported: ['acs-core', 'acs-inspect', 'acs-provenance', 'acs-audit'],
      provenance_producer: 'deterministic',
    });
    expect((await c.step('steps/sessionStart', {})).decision).toBe('allow');
    expect((await c.step('agbom/snapshot', { components: REALISTIC_COMPONENTS })).decision).toBe('allow');
    const message = await c.step('steps/userMessage', {
      content: [
        { type: 'text', value: 'summarise', provenance: { provenance_id: 'u1', origin: 'user_input' } },
        { type: 'file', value: 'q3.csv', provenance: { provenance_id: 'u2', origin: 'user_input' } },
        { type: 'text', value: 'page', provenance: { provenance_id: 'r1', origin: 'retrieved', source_id: 'kb' } },
      ],
    });
    // The SDK recomputed the published head with the summary member: a mismatch would be a failure.
    expect(message.failure).toBeUndefined();
    expect(message.decision).toBe('allow');
    const entries = await store.listContextEntries(c.sessionId);
    expect(entries).toHaveLength(3);
    const [start, snapshot, user] = entries;
    expect(start.content.provenance_summary).toEqual({
      earliest_step_id_by_origin: {},
      entry_count: 0,
      entry_count_by_origin: {},
      origins_seen: [],
    });
    // Every component's registration_provenance is origin `system`.
    expect(snapshot.content.provenance_summary).toEqual({
      earliest_step_id_by_origin: { system: snapshot.content.step_id },
      entry_count: REALISTIC_COMPONENTS.length,
      entry_count_by_origin: { system: REALISTIC_COMPONENTS.length },
      origins_seen: ['system'],
    });
    expect(user.content.provenance_summary).toEqual({
      earliest_step_id_by_origin: { retrieved: user.content.step_id, user_input: user.content.step_id },
      entry_count: 3,
      entry_count_by_origin: { retrieved: 1, user_input: 2 },
      origins_seen: ['retrieved', 'user_input'],
    });
    const validator = sharedValidator();
    for (const e of entries) {
      const check = validator.validate('context-entry.json', { ...e.content, entry_hash: e.entryHash });
      expect(check.ok ? null : check.violation).toBeNull();
      // §8.2: the member is part of what entry_hash commits to.
      expect(computeEntryHash(e.content, e.previousHash)).toBe(e.entryHash);
    }
    expect((await verifyChain(store, c.sessionId)).ok).toBe(true);
  });

  it('a session without acs-audit keeps the five entry members of the interop pin', async () => {
    const c = client();
    await c.hello({ methods_implemented: INSPECT_METHODS, profiles_supported: ['acs-core'] });
    expect((await c.step('steps/sessionStart', {})).decision).toBe('allow');
    const [entry] = await store.listContextEntries(c.sessionId);
    expect(Object.keys(entry.content).sort()).toEqual([
      'entry_id',
      'request_hash',
      'step_id',
      'step_type',
      'timestamp',
    ]);
  });
});
