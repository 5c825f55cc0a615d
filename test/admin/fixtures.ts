// A real Guardian for the admin API and console tests: PGlite in memory, the bundle lifecycle serving `rev-a`
// (allow, reason code fixture_allow, a policy reference), the admin API with the replay jobs app, optionally the
// console, over real HTTP; and SDK clients whose every answer is checked against the ACS response schema.
import { createGuardian } from '../../src/acs/pipeline/index.ts';
import { cryptoEnvelopeSignatures } from '../../src/acs/signing/index.ts';
import { type AdminAppOptions, createAdminApp } from '../../src/admin/index.ts';
import { AcsClient } from '../../src/client/index.ts';
import { createConsoleApp } from '../../src/console/index.ts';
import { createSignatureRegistry, type SignatureRegistry } from '../../src/crypto/index.ts';
import { LifecycleNode } from '../../src/lifecycle/index.ts';
import { createAgbomRoutes } from '../../src/agbom/http.ts';
import { createReplayAdminRoutes } from '../../src/replay/http.ts';
import { startHttpServer, type RunningHttpServer } from '../../src/server/http.ts';
import { openStore } from '../../src/store/index.ts';
import type { DurableStore } from '../../src/store/types.ts';
import { expect } from 'vitest';
import { TEST_IKM, checkedHttpTransport } from '../acs/fixtures/harness.ts';
import { DB_MCP, INSPECT_PROFILES, MEMORY, REALISTIC_COMPONENTS, inspectSession } from '../agbom/fixtures.ts';
import { constantBundle } from '../lifecycle/fixtures.ts';

export interface AdminGuardian {
  store: DurableStore;
  node: LifecycleNode;
  registry: SignatureRegistry;
  server: RunningHttpServer;
  /** http://127.0.0.1:<port> */
  origin: string;
  client(agentId: string): AcsClient;
  /** A handshake and `steps` userMessage steps from a new session of `agentId`; its session id. */
  traffic(agentId: string, steps: number): Promise<string>;
  /**
   * A session of `agentId` with an AgBOM: a handshake claiming ACS Inspect, agbom/snapshot (the realistic
   * components but db-mcp), agbom/changed adding db-mcp, agbom/changed removing the memory store, one user
   * message; its session id.
   */
  inventoryTraffic(agentId: string): Promise<string>;
  close(): Promise<void>;
}

export async function startAdminGuardian(options: {
  env: Record<string, string>;
  admin?: Partial<AdminAppOptions>;
  console?: boolean;
}): Promise<AdminGuardian> {
  const store = await openStore({ inMemory: true });
  const registry = createSignatureRegistry({ hmacIkm: TEST_IKM, workerPool: false });
  const node = new LifecycleNode({
    store,
    replicaId: 'admin-test-replica',
    pollIntervalMs: 60_000,
    initialBundle: {
      bytes: await constantBundle('rev-a', {
        decision: {
          decision: 'allow',
          reasoning: 'rev-a allows',
          reason_codes: ['fixture_allow'],
          policy_references: [{ policy_id: 'fixture', policy_version: 'rev-a' }],
        },
      }),
      source: 'test',
    },
  });
  await node.start();
  // It claims ACS Inspect, so sessions may carry AgBOMs (agbom/* steps).
  const guardian = createGuardian({
    store,
    engine: node.engine,
    signatures: cryptoEnvelopeSignatures(registry),
    profiles: INSPECT_PROFILES,
  });
  const admin = createAdminApp({
    node,
    env: options.env,
    signatures: registry,
    replay: createReplayAdminRoutes({ store }),
    agbom: createAgbomRoutes({ store }),
    feedPollMs: 50,
    ...options.admin,
  });
  const server = await startHttpServer(guardian, {
    port: 0,
    admin,
    ...(options.console ? { console: createConsoleApp({ env: options.env }) } : {}),
  });
  const client = (agentId: string): AcsClient =>
    new AcsClient({ transport: checkedHttpTransport(server.url), ikm: TEST_IKM, agentId });
  return {
    store,
    node,
    registry,
    server,
    origin: server.url.replace(/\/acs$/, ''),
    client,
    async traffic(agentId, steps) {
      const c = client(agentId);
      await c.hello({ methods_implemented: ['steps/userMessage'] });
      for (let i = 0; i < steps; i++) {
        const out = await c.step('steps/userMessage', { content: [{ type: 'text', value: `hello ${i}` }] });
        expect(out.failure).toBeUndefined();
      }
      return c.sessionId;
    },
    async inventoryTraffic(agentId) {
      const c = client(agentId);
      await inspectSession(c);
      const steps: [string, Record<string, unknown>][] = [
        ['agbom/snapshot', { components: REALISTIC_COMPONENTS.filter((x) => x.id !== DB_MCP.id) }],
        ['agbom/changed', { added: [DB_MCP] }],
        ['agbom/changed', { removed: [MEMORY.id] }],
        ['steps/userMessage', { content: [{ type: 'text', value: 'what tools do you have?' }] }],
      ];
      for (const [method, payload] of steps) {
        const out = await c.step(method, payload);
        expect(out.failure, method).toBeUndefined();
      }
      return c.sessionId;
    },
    async close() {
      await server.close();
      await node.stop();
      await store.close();
      await registry.close();
    },
  };
}
