// The AgBOM kept per session (ACS Inspect) end to end: real HTTP, the project's policy library compiled with an
// inventory configuration, and the AgBOM store on both drivers (PGlite and a real Postgres).
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { agbomHash, documentOf, type AgbomComponent } from '../../src/agbom/model.ts';
import type { AcsClient } from '../../src/client/index.ts';
import { agbomAt, listAgbomVersions } from '../../src/agbom/versions.ts';
import { openStore } from '../../src/store/index.ts';
import type { DurableStore } from '../../src/store/types.ts';
import { startHarness, type Harness } from '../acs/fixtures/harness.ts';
import { dropSchema, TEST_DATABASE_URL, uniqueSchema } from '../store/postgres-schema.ts';
import {
  DB_MCP,
  GPT,
  INSPECT_METHODS,
  INSPECT_PROFILES,
  inspectSession,
  libraryEngine,
  REALISTIC_COMPONENTS,
} from './fixtures.ts';

const TIMEOUT = 180_000;
const INVENTORY = {
  require_snapshot: true,
  banned: [{ type: 'model', provider: 'DeepSeek' }],
  allowed: { mcp_server: [{ endpoint_prefix: 'https://mcp.internal/' }, { endpoint_prefix: 'file:///opt/mcp/' }] },
  frozen_types: ['model'],
};
const schema = uniqueSchema('agbom_session');

const drivers: [string, () => Promise<DurableStore>][] = [
  ['pglite', () => openStore({ inMemory: true })],
  ['postgres', () => openStore({ databaseUrl: TEST_DATABASE_URL, schema })],
];

afterAll(() => dropSchema(schema));

describe.each(drivers)('AgBOM per session on %s', (_driver, open) => {
  let h: Harness;
  beforeAll(async () => {
    h = await startHarness({ engine: await libraryEngine(INVENTORY), store: await open(), profiles: INSPECT_PROFILES });
  }, TIMEOUT);
  afterAll(async () => {
    await h?.close();
  });

  async function opened(): Promise<AcsClient> {
    const c = h.client();
    await inspectSession(c);
    const start = await c.step('steps/sessionStart', {});
    expect(start.decision).toBe('allow');
    return c;
  }

  it('denies content before the snapshot, keeps the snapshot bound to its chain entry with its agbom_hash', async () => {
    const c = await opened();
    const early = await c.step('steps/userMessage', { content: [{ type: 'text', value: 'hi' }] });
    expect(early.decision).toBe('deny');
    expect(early.result?.reason_codes).toContain('agbom_snapshot_missing');

    const expected = documentOf('agent-1', REALISTIC_COMPONENTS as AgbomComponent[]);
    const snap = await c.step('agbom/snapshot', {
      agbom: { agent_id: 'agent-1', components: REALISTIC_COMPONENTS, agbom_hash: agbomHash(expected) },
    });
    expect(snap.decision).toBe('allow');
    const entries = await h.store.listContextEntries(c.sessionId);
    const versions = await listAgbomVersions(h.store, c.sessionId);
    expect(versions).toHaveLength(1);
    const v = versions[0];
    const carrier = entries.find((e) => e.seq === v.seq)!;
    expect(carrier.content.step_type).toBe('agbom/snapshot');
    expect(v.entryHash).toBe(carrier.entryHash);
    expect(v.entryHash).toBe(snap.result?.chain_hash);
    expect(v).toMatchObject({ form: 'full', adopted: true, agbomHash: agbomHash(expected), problems: [] });
    expect(v.document).toEqual(expected);

    const later = await c.step('steps/userMessage', { content: [{ type: 'text', value: 'hi again' }] });
    expect(later.decision).toBe('allow');
  });

  it('applies an allowed diff, refuses a hot-swap and an MCP server off the allow list, keeping the AgBOM as it was', async () => {
    const c = await opened();
    const base = REALISTIC_COMPONENTS.filter((x) => x.id !== DB_MCP.id);
    expect((await c.step('agbom/snapshot', { components: base })).decision).toBe('allow');

    const added = await c.step('agbom/changed', { added: [DB_MCP] });
    expect(added.decision).toBe('allow');
    const afterAdd = await agbomAt(h.store, c.sessionId);
    expect(afterAdd.document?.components.map((x) => x.id)).toContain(DB_MCP.id);

    const rogue = { ...DB_MCP, id: 'urn:mcp:rogue', name: 'rogue', endpoint: 'https://mcp.evil.example/x' };
    const offList = await c.step('agbom/changed', { added: [rogue] });
    expect(offList.decision).toBe('deny');
    expect(offList.result?.reason_codes).toEqual(['agbom_component_not_allowed']);

    const swap = await c.step('agbom/changed', { changed: [{ ...GPT, version: '2025-01-31' }] });
    expect(swap.decision).toBe('deny');
    expect(swap.result?.reason_codes).toEqual(['agbom_hot_swap_denied']);

    const now = await agbomAt(h.store, c.sessionId);
    expect(now.document).toEqual(afterAdd.document);
    const versions = await listAgbomVersions(h.store, c.sessionId);
    expect(versions.map((x) => [x.method, x.form, x.adopted])).toEqual([
      ['agbom/snapshot', 'full', true],
      ['agbom/changed', 'diff', true],
      ['agbom/changed', 'diff', false],
      ['agbom/changed', 'diff', false],
    ]);
    // Each version is the chain entry's: same seq and entry_hash.
    const entries = new Map((await h.store.listContextEntries(c.sessionId)).map((e) => [e.seq, e.entryHash]));
    for (const x of versions) expect(entries.get(x.seq)).toBe(x.entryHash);
  });

  it('allows a hot-swap of a type that is not frozen (a tool upgraded, an MCP server moved on the allow list)', async () => {
    const c = await opened();
    expect((await c.step('agbom/snapshot', { components: REALISTIC_COMPONENTS })).decision).toBe('allow');
    const tool = REALISTIC_COMPONENTS.find((x) => x.type === 'tool')!;
    const upgraded = { ...tool, version: '2.0.0' };
    const moved = { ...DB_MCP, endpoint: 'https://mcp.internal/db-v2' };
    const swap = await c.step('agbom/changed', { changed: [upgraded, moved] });
    expect(swap.decision).toBe('allow');
    const now = await agbomAt(h.store, c.sessionId);
    expect(now.version).toMatchObject({ method: 'agbom/changed', form: 'diff', adopted: true });
    expect(now.version?.entryHash).toBe(swap.result?.chain_hash);
    const byId = new Map(now.document?.components.map((x) => [x.id, x]));
    expect(byId.get(tool.id)?.version).toBe('2.0.0');
    expect(byId.get(DB_MCP.id)?.endpoint).toBe('https://mcp.internal/db-v2');
    expect(byId.get(GPT.id)?.version).toBe(GPT.version);
    // The model stays frozen after an allowed swap of other types.
    const model = await c.step('agbom/changed', { changed: [{ ...GPT, version: '2025-01-31' }] });
    expect(model.result?.reason_codes).toEqual(['agbom_hot_swap_denied']);
  });

  it('a subagent sees its parent AgBOM until it reports its own, which is kept on its own chain', async () => {
    const parent = await opened();
    expect((await parent.step('agbom/snapshot', { components: REALISTIC_COMPONENTS })).decision).toBe('allow');
    const childId = randomUUID();
    const spawn = await parent.step('steps/subagentStart', {
      subagent_session_id: childId,
      parent_session_id: parent.sessionId,
      intent_derivation: 'inherit_full',
    });
    expect(spawn.decision).toBe('allow');
    // The child session inherits the parent's negotiated terms (its entries commit to the same members).
    const child = h.client({ sessionId: childId, serverHello: parent.serverHello ?? undefined });
    // The parent's AgBOM stands in: the child's content step is not refused for a missing snapshot.
    expect((await child.step('steps/userMessage', { content: [{ type: 'text', value: 'sub' }] })).decision).toBe(
      'allow',
    );
    expect((await agbomAt(h.store, childId)).document).toBeNull();
    const own = await child.step('agbom/snapshot', { components: [GPT] });
    expect(own.decision).toBe('allow');
    const versions = await listAgbomVersions(h.store, childId);
    expect(versions).toHaveLength(1);
    expect(versions[0].entryHash).toBe(own.result?.chain_hash);
    expect((await agbomAt(h.store, childId)).document?.components.map((x) => x.id)).toEqual([GPT.id]);
    expect((await agbomAt(h.store, parent.sessionId)).document?.components).toHaveLength(REALISTIC_COMPONENTS.length);
  });

  it('under ACS-Provenance (deterministic producer) refuses a component without registration_provenance', async () => {
    const { registration_provenance: _rp, ...bare } = GPT;
    const strict = h.client();
    await strict.hello({
      methods_implemented: INSPECT_METHODS,
      profiles_supported: INSPECT_PROFILES,
      provenance_producer: 'deterministic',
    });
    const refused = await strict.step('agbom/snapshot', { components: [bare] });
    expect(refused.decision).toBe('deny');
    expect(refused.result?.reason_codes).toEqual(['agbom_invalid', 'registration_provenance_missing']);
    // A producer of no provenance (ACS-Core) may omit it: SHOULD, not MUST.
    const core = await opened();
    expect((await core.step('agbom/snapshot', { components: [bare] })).decision).toBe('allow');
  });

  it('under ACS-Provenance (deterministic producer) refuses an agbom/changed component without registration_provenance', async () => {
    const strict = h.client();
    await strict.hello({
      methods_implemented: INSPECT_METHODS,
      profiles_supported: INSPECT_PROFILES,
      provenance_producer: 'deterministic',
    });
    expect((await strict.step('steps/sessionStart', {})).decision).toBe('allow');
    const base = REALISTIC_COMPONENTS.filter((x) => x.id !== DB_MCP.id);
    expect((await strict.step('agbom/snapshot', { components: base })).decision).toBe('allow');
    const before = await agbomAt(h.store, strict.sessionId);
    const { registration_provenance: _db, ...bareMcp } = DB_MCP;
    const tool = REALISTIC_COMPONENTS.find((x) => x.type === 'tool')!;
    const { registration_provenance: _tool, ...bareTool } = tool;
    for (const diff of [{ added: [bareMcp] }, { changed: [{ ...bareTool, version: '2.0.0' }] }]) {
      const refused = await strict.step('agbom/changed', diff);
      expect(refused.decision).toBe('deny');
      expect(refused.result?.reason_codes).toEqual(['agbom_invalid', 'registration_provenance_missing']);
    }
    expect((await agbomAt(h.store, strict.sessionId)).document).toEqual(before.document);
    const versions = await listAgbomVersions(h.store, strict.sessionId);
    expect(versions.map((x) => [x.form, x.adopted])).toEqual([
      ['full', true],
      ['diff', false],
      ['diff', false],
    ]);
    // With it, the same diff is adopted.
    expect((await strict.step('agbom/changed', { added: [DB_MCP] })).decision).toBe('allow');
    expect((await agbomAt(h.store, strict.sessionId)).document?.components.map((x) => x.id)).toContain(DB_MCP.id);
  });

  it('refuses a snapshot with a banned model, and a diff whose agbom_hash or ids do not match the Guardian AgBOM', async () => {
    const banned = await opened();
    const deepseek = { ...GPT, id: 'deepseek-r1', name: 'DeepSeek-R1', provider: 'DeepSeek' };
    const refused = await banned.step('agbom/snapshot', { components: [...REALISTIC_COMPONENTS, deepseek] });
    expect(refused.decision).toBe('deny');
    expect(refused.result?.reason_codes).toEqual(['agbom_component_banned']);
    expect((await agbomAt(h.store, banned.sessionId)).document).toBeNull();

    const c = await opened();
    expect((await c.step('agbom/snapshot', { components: REALISTIC_COMPONENTS })).decision).toBe('allow');
    const wrongHash = await c.step('agbom/changed', {
      removed: ['urn:memory:user-notes'],
      agbom_hash: 'sha256:' + '0'.repeat(64),
    });
    expect(wrongHash.decision).toBe('deny');
    expect(wrongHash.result?.reason_codes).toEqual(['agbom_hash_mismatch', 'agbom_invalid']);
    const unknown = await c.step('agbom/changed', { removed: ['urn:never-there'] });
    expect(unknown.decision).toBe('deny');
    expect(unknown.result?.reason_codes).toEqual(['agbom_invalid', 'removed_component_unknown']);
    const current = await agbomAt(h.store, c.sessionId);
    expect(current.document?.components).toHaveLength(REALISTIC_COMPONENTS.length);
    expect(current.version?.method).toBe('agbom/snapshot');
  });
});
