// Lifecycle test fixtures: small real bundles (a hand-written OPA-ABI Wasm module returning a constant decision,
// packed by writeBundle), optionally with /smoke.json.
import { buildDecisionModule } from '../acs/fixtures/decision-module.ts';
import { writeBundle } from '../../src/rego/bundle/index.ts';
import type { Json } from '../../src/json.ts';
import type { PolicyInput } from '../../src/policy/types.ts';
import type { DurableStore } from '../../src/store/types.ts';
import { createGuardian } from '../../src/acs/pipeline/index.ts';
import { cryptoEnvelopeSignatures } from '../../src/acs/signing/index.ts';
import { createSignatureRegistry } from '../../src/crypto/index.ts';
import { LifecycleNode, type LifecycleNodeOptions } from '../../src/lifecycle/index.ts';
import { startHttpServer, type RunningHttpServer } from '../../src/server/http.ts';
import { AcsClient, httpTransport } from '../../src/client/index.ts';
import { openStore } from '../../src/store/index.ts';

const modules = new Map<string, Uint8Array>();

/** A bundle whose acs/decision is `decision`; by default the decision's reasoning names the revision. */
export async function constantBundle(
  revision: string,
  options: {
    decision?: Json;
    smoke?: unknown;
    data?: Record<string, unknown>;
    extraFiles?: { path: string; text: string }[];
  } = {},
): Promise<Uint8Array> {
  const decision = options.decision ?? { decision: 'allow', reasoning: `decided by ${revision}` };
  const key = JSON.stringify(decision);
  let wasm = modules.get(key);
  if (!wasm) {
    wasm = await buildDecisionModule({ constant: decision });
    modules.set(key, wasm);
  }
  const sources = [...(options.extraFiles ?? [])];
  if (options.smoke !== undefined) sources.push({ path: '/smoke.json', text: JSON.stringify(options.smoke) });
  return writeBundle({
    manifest: { revision, roots: [''], wasm: [{ entrypoint: 'acs/decision', module: '/policy.wasm' }] },
    wasm,
    data: options.data ?? { owner: revision },
    sources,
  });
}

/**
 * A LifecycleNode started on a fresh in-memory store with `initial` as its start-up bundle; it does not poll
 * (60 s) unless `options` says otherwise. The caller stops the node, then closes the store.
 */
export async function startMemoryNode(
  initial: Uint8Array,
  options: Omit<LifecycleNodeOptions, 'store' | 'initialBundle'> = {},
): Promise<{ store: DurableStore; node: LifecycleNode }> {
  const store = await openStore({ inMemory: true });
  const node = new LifecycleNode({
    store,
    pollIntervalMs: 60_000,
    initialBundle: { bytes: initial, source: 'test' },
    ...options,
  });
  await node.start();
  return { store, node };
}

/** An input to evaluate a lifecycle engine with directly (the constant test bundles decide without reading it). */
export function policyInput(method = 'steps/toolCallRequest', now = new Date().toISOString()): PolicyInput {
  return {
    method,
    params: {},
    session: {},
    client: { modify_capable: true, ask_capable: true },
    guardian: { now, policy_version: '' },
  };
}

export interface LifecycleGuardian {
  store: DurableStore;
  node: LifecycleNode;
  server: RunningHttpServer;
  close(): Promise<void>;
}

/** A Guardian over real HTTP whose engine is a started LifecycleNode (in-memory PGlite, HMAC with `ikm`). */
export async function startLifecycleGuardian(
  ikm: Uint8Array,
  nodeOptions: Omit<LifecycleNodeOptions, 'store'>,
): Promise<LifecycleGuardian> {
  const store = await openStore({ inMemory: true });
  const node = new LifecycleNode({ store, ...nodeOptions });
  const engine = await node.start();
  const registry = createSignatureRegistry({ hmacIkm: ikm, workerPool: false });
  const guardian = createGuardian({ store, engine, signatures: cryptoEnvelopeSignatures(registry), onAudit: () => {} });
  const server = await startHttpServer(guardian, { port: 0 });
  return {
    store,
    node,
    server,
    async close() {
      await server.close();
      await node.stop();
      await registry.close();
      await store.close();
    },
  };
}

export interface SessionLoad {
  /** Every answer so far: its decision, the policy's reasoning (which names the revision) and any failure. */
  outcomes: { decision: string; reasoning: string | undefined; failure: unknown }[];
  sessions: string[];
  /** Resolves once `n` more answers have arrived (so requests are in flight across what the caller does next). */
  moreAnswers(n: number): Promise<void>;
  /** Ends the sessions' loops and waits for their last answers. */
  stop(): Promise<void>;
}

/** `agents` concurrent ACS sessions over HTTP, each sending tool calls back to back until stopped. */
export function startSessionLoad(url: string, ikm: Uint8Array, agents: number, agentPrefix: string): SessionLoad {
  let stopped = false;
  const outcomes: SessionLoad['outcomes'] = [];
  const sessions: string[] = [];
  const agent = async (n: number): Promise<void> => {
    const c = new AcsClient({ transport: httpTransport(url), ikm, agentId: `${agentPrefix}-${n}` });
    await c.hello({ methods_implemented: ['steps/sessionStart', 'steps/toolCallRequest'] });
    sessions.push(c.sessionId);
    await c.step('steps/sessionStart', {});
    while (!stopped) {
      const o = await c.step('steps/toolCallRequest', {
        tool: { name: 'read_file' },
        arguments: { path: { value: '/w/a' } },
      });
      outcomes.push({ decision: o.decision, reasoning: o.result?.reasoning, failure: o.failure });
    }
  };
  const running = Promise.all(Array.from({ length: agents }, (_, n) => agent(n)));
  return {
    outcomes,
    sessions,
    async moreAnswers(n) {
      const target = outcomes.length + n;
      while (outcomes.length < target) await new Promise((r) => setTimeout(r, 5));
    },
    async stop() {
      stopped = true;
      await running;
    },
  };
}

/**
 * Activates each of `shas` in turn while `agents` sessions keep sending: a few more answers arrive before each
 * activation and after the last, so requests are in flight across every swap. `beforeActivate` runs just before
 * each activation (to note what is about to be replaced).
 */
export async function activateUnderLoad(
  node: LifecycleNode,
  url: string,
  ikm: Uint8Array,
  agents: number,
  agentPrefix: string,
  shas: string[],
  beforeActivate: () => void = () => {},
): Promise<Pick<SessionLoad, 'outcomes' | 'sessions'>> {
  const load = startSessionLoad(url, ikm, agents, agentPrefix);
  for (const sha of shas) {
    await load.moreAnswers(3);
    beforeActivate();
    await node.activate(sha, 'tester');
  }
  await load.moreAnswers(4);
  await load.stop();
  return { outcomes: load.outcomes, sessions: load.sessions };
}

/**
 * Every stored entry of `sessions` carries the revision whose module produced its result (the test bundles'
 * reasoning is `decided by <revision>`). Returns how many entries were checked and the revisions seen.
 */
export async function storedDecisionRevisions(
  store: DurableStore,
  sessions: string[],
): Promise<{ checked: number; mismatched: string[]; revisions: Set<string> }> {
  let checked = 0;
  const mismatched: string[] = [];
  const revisions = new Set<string>();
  for (const id of sessions) {
    for (const e of await store.listContextEntries(id, { limit: 10_000 })) {
      const reasoning = (e.result as { reasoning?: string } | null)?.reasoning;
      if (reasoning !== `decided by ${e.bundleRevision}`)
        mismatched.push(`${id}#${e.seq}: ${e.bundleRevision} answered ${String(reasoning)}`);
      revisions.add(String(e.bundleRevision));
      checked++;
    }
  }
  return { checked, mismatched, revisions };
}
