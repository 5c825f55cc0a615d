// Replay rebuilds `input.agbom` for every recorded step from the session's stored AgBOM versions (src/agbom/replay.ts):
// a policy that denies a banned MCP server, a frozen model hot-swap and content before the snapshot replays to the
// decisions it made live — in process and in a worker thread — including a subagent that sees its parent's AgBOM.
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createWasmPolicyEngine } from '../../src/policy/index.ts';
import { resolveReplayPolicy, runReplay } from '../../src/replay/index.ts';
import { startHarness, type Harness } from '../acs/fixtures/harness.ts';
import {
  DB_MCP,
  GPT,
  INSPECT_PROFILES,
  inspectSession,
  libraryBundle,
  MEMORY,
  REALISTIC_COMPONENTS,
} from './fixtures.ts';

const INVENTORY = {
  require_snapshot: true,
  banned: [{ type: 'mcp_server', endpoint_prefix: 'https://mcp.evil.example/' }],
  frozen_types: ['model'],
};
const ROGUE = { ...DB_MCP, id: 'urn:mcp:rogue', name: 'rogue', endpoint: 'https://mcp.evil.example/x' };

let h: Harness;
let dir: string;
let bundleFile: string;
/** The live decisions, in the order they were made: [session, method, decision]. */
const live: [string, string, string][] = [];

beforeAll(async () => {
  const bundle = await libraryBundle(INVENTORY);
  dir = mkdtempSync(join(tmpdir(), 'agbom-replay-'));
  bundleFile = join(dir, 'inventory.tar.gz');
  writeFileSync(bundleFile, bundle);
  h = await startHarness({
    engine: await createWasmPolicyEngine({ bundle, timeoutMs: 5000 }),
    profiles: INSPECT_PROFILES,
  });
  const record = async (c: ReturnType<Harness['client']>, method: string, payload: Record<string, unknown>) => {
    const out = await c.step(method, payload);
    expect(out.failure).toBeUndefined();
    live.push([c.sessionId, method, out.decision]);
    return out.decision;
  };
  const text = (value: string) => ({ content: [{ type: 'text', value }] });

  const a = h.client();
  await inspectSession(a);
  expect(await record(a, 'steps/sessionStart', {})).toBe('allow');
  expect(await record(a, 'steps/userMessage', text('too early'))).toBe('deny');
  expect(await record(a, 'agbom/snapshot', { components: REALISTIC_COMPONENTS })).toBe('allow');
  expect(await record(a, 'agbom/changed', { added: [ROGUE] })).toBe('deny');
  expect(await record(a, 'agbom/changed', { changed: [{ ...GPT, version: '2025-01-31' }] })).toBe('deny');
  expect(await record(a, 'steps/userMessage', text('hello'))).toBe('allow');
  expect(await record(a, 'agbom/changed', { removed: [MEMORY.id] })).toBe('allow');
  // Removing a component the AgBOM no longer has only fails against the AgBOM as the previous step left it.
  expect(await record(a, 'agbom/changed', { removed: [MEMORY.id] })).toBe('deny');
  const childId = randomUUID();
  expect(
    await record(a, 'steps/subagentStart', {
      subagent_session_id: childId,
      parent_session_id: a.sessionId,
      intent_derivation: 'inherit_full',
    }),
  ).toBe('allow');
  // The child has no AgBOM of its own: its content step is decided on its parent's.
  const child = h.client({ sessionId: childId, serverHello: a.serverHello ?? undefined });
  expect(await record(child, 'steps/userMessage', text('sub'))).toBe('allow');

  const b = h.client();
  await inspectSession(b);
  expect(await record(b, 'steps/sessionStart', {})).toBe('allow');
  expect(await record(b, 'agbom/snapshot', { components: [...REALISTIC_COMPONENTS, ROGUE] })).toBe('deny');
  expect(await record(b, 'steps/userMessage', text('no AgBOM was adopted'))).toBe('deny');
}, 180_000);
afterAll(async () => {
  await h?.close();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

describe('replay of AgBOM policies', () => {
  it.each([0, 1])(
    'reproduces every live decision with input.agbom rebuilt per step (%i workers)',
    async (workers) => {
      const report = await runReplay({
        store: h.store,
        policy: await resolveReplayPolicy(h.store, bundleFile, { allowPaths: true }),
        workers,
        reportUnchanged: true,
      });
      expect(report.summary.compared).toBe(live.length);
      expect(report.summary.changed).toBe(0);
      const replayed = report.steps.map((s) => [s.sessionId, s.method, s.replayed?.decision]);
      expect(replayed.sort()).toEqual([...live].sort());
      // The denials are the inventory rules', not a missing AgBOM's.
      const reasons = report.steps
        .filter((s) => s.replayed?.decision === 'deny')
        .map((s) => [s.method, s.replayed?.reasonCodes]);
      expect(reasons).toEqual(
        expect.arrayContaining([
          ['agbom/changed', ['agbom_component_banned']],
          ['agbom/changed', ['agbom_hot_swap_denied']],
          ['agbom/snapshot', ['agbom_component_banned']],
        ]),
      );
    },
    120_000,
  );
});
