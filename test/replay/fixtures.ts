// Test fixtures: history recorded through the real Guardian (createGuardian, real HTTP server, SDK client with
// HMAC signatures) on a given store, and policy versions built from the project's Rego library.
import { cpSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createGuardian, type Guardian } from '../../src/acs/pipeline/index.ts';
import { cryptoEnvelopeSignatures } from '../../src/acs/signing/index.ts';
import { sha256Hex } from '../../src/chain/index.ts';
import { AcsClient, httpTransport } from '../../src/client/index.ts';
import { createSignatureRegistry } from '../../src/crypto/index.ts';
import { buildLibraryBundle, LIBRARY_DIR } from '../../src/policy/library.ts';
import { createWasmPolicyEngine, type PolicyEngine } from '../../src/policy/index.ts';
import { startHttpServer, type RunningHttpServer } from '../../src/server/http.ts';
import type { DurableStore } from '../../src/store/types.ts';

export const IKM = new Uint8Array(Array.from({ length: 32 }, (_, i) => 255 - i));

export interface Recorder {
  guardian: Guardian;
  server: RunningHttpServer;
  /** The clock both the Guardian and the clients read (tests move it to record at chosen times). */
  clock: { now: Date };
  client(agentId: string): AcsClient;
  close(): Promise<void>;
}

/** A live Guardian on `store` deciding with `engine`, behind a real HTTP server. */
export async function startRecorder(store: DurableStore, engine: PolicyEngine): Promise<Recorder> {
  const registry = createSignatureRegistry({ hmacIkm: IKM, workerPool: false });
  const clock = { now: new Date() };
  const guardian = createGuardian({
    store,
    engine,
    signatures: cryptoEnvelopeSignatures(registry),
    now: () => clock.now,
    onAudit: () => {},
  });
  const server = await startHttpServer(guardian, { port: 0 });
  return {
    guardian,
    server,
    clock,
    client: (agentId) =>
      new AcsClient({ transport: httpTransport(server.url), ikm: IKM, agentId, now: () => clock.now }),
    async close() {
      await server.close();
      await registry.close();
    },
  };
}

export interface PolicyVersions {
  v1: Uint8Array;
  v2: Uint8Array;
  /** v2's sources: the library with one rule tightened and one loosened (data.json). */
  v2Dir: string;
}

/**
 * v1 = the project's library. v2 tightens `baseline.tool_denylist` (web_search denied) and loosens
 * `baseline.destructive_shell` (the `git push --force` pattern removed).
 */
export async function buildPolicyVersions(): Promise<PolicyVersions> {
  const v2Dir = mkdtempSync(join(tmpdir(), 'replay-v2-'));
  cpSync(LIBRARY_DIR, v2Dir, { recursive: true });
  const dataPath = join(v2Dir, 'data.json');
  const data = JSON.parse(readFileSync(dataPath, 'utf8')) as {
    acs_config: { baseline: { tool_denylist: string[]; destructive_shell_patterns: string[] } };
  };
  const baseline = data.acs_config.baseline;
  const before = baseline.destructive_shell_patterns.length;
  baseline.destructive_shell_patterns = baseline.destructive_shell_patterns.filter((p) => !p.includes('git\\s+push'));
  if (baseline.destructive_shell_patterns.length !== before - 1)
    throw new Error('fixture: the git push pattern is not in the library any more');
  baseline.tool_denylist = [...baseline.tool_denylist, 'web_search'];
  writeFileSync(dataPath, JSON.stringify(data, null, 2));
  const [v1, v2] = await Promise.all([
    buildLibraryBundle({ revision: 'v1' }),
    buildLibraryBundle({ dir: v2Dir, revision: 'v2' }),
  ]);
  return { v1: v1.bundle, v2: v2.bundle, v2Dir };
}

/** Stores a bundle in the registry under its manifest revision. */
export async function registerBundle(store: DurableStore, bytes: Uint8Array, revision: string): Promise<string> {
  const sha256 = sha256Hex(bytes);
  await store.putPolicyBundle({ sha256, revision, manifest: { revision }, bytes, source: null });
  return sha256;
}

/** The recording engine: a generous deadline, so a loaded test machine does not record timeouts as denials. */
export async function engineOf(bytes: Uint8Array): Promise<PolicyEngine> {
  return createWasmPolicyEngine({ bundle: bytes, timeoutMs: 10_000 });
}

/** Rows replay must never change: every entry with its decision, and every session's state. */
export async function storeSnapshot(store: DurableStore): Promise<string> {
  const entries = await store.query(
    'select session_id, seq, entry_hash, params_jcs, result_jcs, bundle_revision from context_entries order by session_id, seq',
  );
  const sessions = await store.query('select id, state_jcs, intent_jcs, closed_at from sessions order by id');
  const heads = await store.query('select session_id, seq, head_hash from chain_heads order by session_id');
  const bundles = await store.query('select sha256 from policy_bundles order by sha256');
  return JSON.stringify({ entries, sessions, heads, bundles });
}

/**
 * A quick history for API and CLI tests: two sessions recorded through the real Guardian under a constant
 * ALLOW module registered as `allow-all`; a constant DENY module is registered as `deny-all`.
 */
export async function recordConstantHistory(store: DurableStore): Promise<{ sessions: string[]; steps: number }> {
  const { buildDecisionModule } = await import('../acs/fixtures/decision-module.ts');
  const allow = await buildDecisionModule({
    constant: {
      decision: 'allow',
      reasoning: 'allow-all',
      reason_codes: [],
      policy_references: [{ policy_id: 'const', rule_id: 'const.allow' }],
    },
  });
  const deny = await buildDecisionModule({
    constant: {
      decision: 'deny',
      reasoning: 'deny-all <b>&</b>',
      reason_codes: ['denied_<i>by</i>_constant|x'],
      policy_references: [{ policy_id: 'const', rule_id: 'const.deny<script>alert(1)</script>' }],
    },
  });
  await registerBundle(store, allow, 'allow-all');
  await registerBundle(store, deny, 'deny-all');
  const recorder = await startRecorder(store, await createWasmPolicyEngine({ bundle: allow, revision: 'allow-all' }));
  const sessions: string[] = [];
  try {
    for (const agent of ['agent-x', 'agent-y']) {
      const c = recorder.client(agent);
      await c.hello({ methods_implemented: ['steps/sessionStart', 'steps/toolCallRequest'] });
      await c.step('steps/sessionStart', {});
      await c.step('steps/toolCallRequest', { tool: { name: '<script>alert(1)</script>' }, arguments: {} });
      await c.step('steps/toolCallRequest', {
        tool: { name: 'read_file' },
        arguments: { path: { value: '/workspace/a' } },
      });
      sessions.push(c.sessionId);
    }
  } finally {
    await recorder.close();
  }
  return { sessions, steps: 6 };
}
