// provenance_id is unique within a session (ACS §7), over real HTTP: in a session that accepted ACS-Provenance a
// step whose Provenance object takes an id the session already gave a different object is refused -32602
// `provenance_id_reused` and chains nothing; the same object sent again is the same node. The chain in the store
// is the record, so Guardians started later over the same store (a restart, another replica) refuse the same
// reuse, and a Guardian whose memory fell behind catches up from the store. Every answer is schema-checked.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ProvenanceIdMemory } from '../../src/acs/pipeline/provenance-ids.ts';
import type { AcsRequest } from '../../src/acs/types.ts';
import { AcsClient, httpTransport, type StepOutcome } from '../../src/client/index.ts';
import { openStore } from '../../src/store/index.ts';
import { dropSchema, TEST_DATABASE_URL, uniqueSchema } from '../store/postgres-schema.ts';
import { expectValidAnswer, type Harness, startHarness, TEST_IKM } from './fixtures/harness.ts';

const METHODS = [
  'steps/sessionStart',
  'steps/userMessage',
  'steps/agentResponse',
  'steps/toolCallRequest',
  'steps/toolCallResult',
];
const PROFILES = ['acs-core', 'acs-provenance'];

let a: Harness;
/** A second Guardian over a's store, started after a: a restarted Guardian, or another replica. */
let b: Harness;
/** A third, whose policy denies every step: denied steps are chained too. */
let denying: Harness;

beforeAll(async () => {
  a = await startHarness({ profiles: PROFILES });
  b = await startHarness({ profiles: PROFILES, store: a.store });
  denying = await startHarness({
    profiles: PROFILES,
    store: a.store,
    decision: { decision: 'deny', reasoning: 'fixture denies', reason_codes: ['fixture_denies'] },
  });
}, 60_000);
afterAll(async () => {
  // One store under all three: the first close() closes it, the others find it closed.
  await denying?.close();
  await b?.close();
  await a?.close();
});

/** A client whose requests go to whichever Guardian `to()` names last (`first`, a by default). */
function client(first: Harness = a): { c: AcsClient; to(h: Harness): void } {
  let target = first.url;
  const c = new AcsClient({
    transport: async (message) => {
      const text = await httpTransport(target)(message);
      expectValidAnswer(JSON.parse(text));
      return text;
    },
    ikm: TEST_IKM,
    agentId: 'agent-1',
  });
  return { c, to: (h) => (target = h.url) };
}

async function opened(first: Harness = a): Promise<{ c: AcsClient; to(h: Harness): void }> {
  const s = client(first);
  const hello = await s.c.hello({
    methods_implemented: METHODS,
    profiles_supported: PROFILES,
    provenance_producer: 'deterministic',
  });
  expect(hello.profiles_accepted).toEqual(PROFILES);
  expect((await s.c.step('steps/sessionStart', {})).decision).toBe('allow');
  return s;
}

const said = (id: string, value = 'hi', extra: Record<string, unknown> = {}) => ({
  content: [{ type: 'text', value, provenance: { provenance_id: id, origin: 'user_input', ...extra } }],
});
const output = (id: string) => ({
  tool: { name: 'Bash' },
  exit_status: 'success',
  outputs: [{ value: 'out', provenance: { provenance_id: id, origin: 'tool_output', source_id: 'Bash' } }],
});
const OUTPUT_ID = '/params/payload/outputs/0/provenance/provenance_id';

function expectReused(out: StepOutcome, pointer: string, where?: string): void {
  expect(out.failure?.reason).toBe('error_response');
  expect(out.failure?.error).toMatchObject({ code: -32602, data: { reason: 'provenance_id_reused', pointer } });
  if (where) expect(out.failure?.error?.data?.message).toContain(where);
  expect(out.result).toBeNull();
}

describe('provenance_id unique within a session (ACS §7)', () => {
  it('refuses an id an earlier step gave a different Provenance object; the same object again is the same node', async () => {
    const { c } = await opened();
    expect((await c.step('steps/userMessage', said('u1'))).decision).toBe('allow');
    const head = await a.store.getChainHead(c.sessionId);
    expectReused(await c.step('steps/toolCallResult', output('u1')), OUTPUT_ID, 'at chain entry 1');
    expectReused(
      await c.step('steps/userMessage', said('u1', 'hi', { source_id: 'someone-else' })),
      '/params/payload/content/0/provenance/provenance_id',
    );
    // Refused steps write no entry (ACS §8.2).
    expect(await a.store.getChainHead(c.sessionId)).toEqual(head);
    // The identical object restated on another step names the node it named; lineage cites ids without using them.
    expect((await c.step('steps/userMessage', said('u1', 'the same words again'))).decision).toBe('allow');
    const derived = {
      content: [
        {
          type: 'text',
          value: 'reply',
          provenance: { provenance_id: 'g1', origin: 'agent_generated', derived_from: ['u1'] },
        },
      ],
    };
    expect((await c.step('steps/agentResponse', derived)).decision).toBe('allow');
    // A refused step used none of its ids: o1 is still free after a refusal that carried it.
    const partial = await c.step('steps/toolCallRequest', {
      tool: { name: 'Bash' },
      arguments: {
        command: { value: 'ls', provenance: { provenance_id: 'o1', origin: 'agent_generated', derived_from: ['u1'] } },
        cwd: { value: '/tmp' },
      },
    });
    expect(partial.failure?.error).toMatchObject({ code: -32602, data: { reason: 'provenance_missing' } });
    expect((await c.step('steps/toolCallResult', output('o1'))).decision).toBe('allow');
  });

  it('refuses two different Provenance objects under one id in one payload, not the same one twice', async () => {
    const { c } = await opened();
    expectReused(
      await c.step('steps/userMessage', {
        content: [
          { type: 'text', value: 'a', provenance: { provenance_id: 'x1', origin: 'user_input' } },
          { type: 'text', value: 'b', provenance: { provenance_id: 'x1', origin: 'retrieved', source_id: 'kb' } },
        ],
      }),
      '/params/payload/content/1/provenance/provenance_id',
      'earlier in this payload',
    );
    const same = { provenance_id: 'x1', origin: 'user_input' };
    const twice = {
      content: [
        { type: 'text', value: 'a', provenance: same },
        { type: 'text', value: 'b', provenance: { ...same } },
      ],
    };
    expect((await c.step('steps/userMessage', twice)).decision).toBe('allow');
  });

  it('another Guardian over the same store refuses the reuse (restart, replica), and one behind catches up', async () => {
    const s = await opened();
    expect((await s.c.step('steps/userMessage', said('r1'))).decision).toBe('allow');
    expect((await s.c.step('steps/toolCallResult', output('r2'))).decision).toBe('allow');
    // b has never seen the session: it reads the session's ids from the chain.
    s.to(b);
    expectReused(await s.c.step('steps/toolCallResult', output('r1')), OUTPUT_ID, 'at chain entry 1');
    expect((await s.c.step('steps/userMessage', said('r1'))).decision).toBe('allow');
    expect((await s.c.step('steps/userMessage', said('r3'))).decision).toBe('allow');
    // a remembers the session as of its last step: the entries b appended since are read before a answers.
    s.to(a);
    expectReused(await s.c.step('steps/toolCallResult', output('r3')), OUTPUT_ID, 'at chain entry 4');
    expectReused(
      await s.c.step('steps/userMessage', said('r2')),
      '/params/payload/content/0/provenance/provenance_id',
      'at chain entry 2',
    );
    expect((await s.c.step('steps/toolCallResult', output('r4'))).decision).toBe('allow');
  });

  it('a denied step is chained, so its ids are used', async () => {
    const s = await opened();
    s.to(denying);
    const denied = await s.c.step('steps/userMessage', said('d1'));
    expect(denied.decision).toBe('deny');
    expect(denied.result?.chain_hash).toBeDefined();
    s.to(a);
    expectReused(await s.c.step('steps/toolCallResult', output('d1')), OUTPUT_ID, 'at chain entry 1');
  });

  it('a memory smaller than the session forgets it and asks the store for the ids of the step instead', async () => {
    const { c } = await opened();
    for (const id of ['m1', 'm2', 'm3']) expect((await c.step('steps/userMessage', said(id))).decision).toBe('allow');
    const other = await opened();
    expect((await other.c.step('steps/userMessage', said('n1'))).decision).toBe('allow');
    const memory = new ProvenanceIdMemory({ maxIds: 2, maxIdsPerSession: 2 });
    const request = (sessionId: string, payload: unknown) =>
      ({
        jsonrpc: '2.0',
        id: 1,
        method: 'steps/toolCallResult',
        params: { request_id: crypto.randomUUID(), metadata: { session_id: sessionId }, payload },
      }) as unknown as AcsRequest;
    const at = async (sessionId: string) => a.store.getChainHead(sessionId);
    // Three ids, more than one session may keep: refused all the same, by the store's answer, and not kept.
    for (let round = 0; round < 2; round++) {
      await expect(
        memory.check(a.store, request(c.sessionId, output('m2')), await at(c.sessionId)),
      ).rejects.toMatchObject({ data: { reason: 'provenance_id_reused', pointer: OUTPUT_ID } });
    }
    expect(memory.size).toEqual({ sessions: 0, ids: 0 });
    const fresh = await memory.check(a.store, request(c.sessionId, said('m1')), await at(c.sessionId));
    expect([...fresh.ids.keys()]).toEqual(['m1']);
    // A session that fits is kept, and a committed step's ids join it without another read.
    const small = await memory.check(a.store, request(other.c.sessionId, output('n2')), await at(other.c.sessionId));
    expect(memory.size).toEqual({ sessions: 1, ids: 1 });
    memory.committed(small, { seq: 2, entryHash: 'f'.repeat(64) });
    expect(memory.size).toEqual({ sessions: 1, ids: 2 });
    // A session past the bound of one session is forgotten as soon as a commit takes it there.
    const grown = await memory.check(a.store, request(other.c.sessionId, output('n3')), {
      seq: 2,
      entryHash: 'f'.repeat(64),
    });
    memory.committed(grown, { seq: 3, entryHash: 'e'.repeat(64) });
    expect(memory.size).toEqual({ sessions: 0, ids: 0 });
    // Past the bound over all sessions, the least recently used session is forgotten.
    const third = await opened();
    expect((await third.c.step('steps/userMessage', said('t1'))).decision).toBe('allow');
    const fourth = await opened();
    for (const id of ['f1', 'f2']) expect((await fourth.c.step('steps/userMessage', said(id))).decision).toBe('allow');
    await memory.check(a.store, request(third.c.sessionId, output('t2')), await at(third.c.sessionId));
    expect(memory.size).toEqual({ sessions: 1, ids: 1 });
    await memory.check(a.store, request(fourth.c.sessionId, output('f3')), await at(fourth.c.sessionId));
    expect(memory.size).toEqual({ sessions: 1, ids: 2 });
    await expect(
      memory.check(a.store, request(third.c.sessionId, output('t1')), await at(third.c.sessionId)),
    ).rejects.toMatchObject({ data: { reason: 'provenance_id_reused' } });
    expect(memory.size).toEqual({ sessions: 1, ids: 1 });
  });
});

describe('provenance_id unique within a session, on Postgres across a restart of the Guardian and its store', () => {
  const schema = uniqueSchema('provenance_ids');
  afterAll(async () => {
    await dropSchema(schema);
  });

  it('a Guardian started again over the reopened store refuses the reuse', async () => {
    const before = await startHarness({
      profiles: PROFILES,
      store: await openStore({ databaseUrl: TEST_DATABASE_URL, schema }),
    });
    let s: { c: AcsClient; to(h: Harness): void };
    try {
      s = await opened(before);
      expect((await s.c.step('steps/userMessage', said('p1'))).decision).toBe('allow');
      expect((await s.c.step('steps/toolCallResult', output('p2'))).decision).toBe('allow');
    } finally {
      await before.close();
    }
    const after = await startHarness({
      profiles: PROFILES,
      store: await openStore({ databaseUrl: TEST_DATABASE_URL, schema }),
    });
    try {
      s.to(after);
      expectReused(await s.c.step('steps/toolCallResult', output('p1')), OUTPUT_ID, 'at chain entry 1');
      expectReused(
        await s.c.step('steps/userMessage', said('p2')),
        '/params/payload/content/0/provenance/provenance_id',
        'at chain entry 2',
      );
      expect((await s.c.step('steps/toolCallResult', output('p2'))).decision).toBe('allow');
      expect((await s.c.step('steps/toolCallResult', output('p3'))).decision).toBe('allow');
    } finally {
      await after.close();
    }
  });
});

describe('provenance_id unique within every session, whatever its profiles and producer (ACS §7)', () => {
  const PROFILES_ALL = ['acs-core', 'acs-inspect', 'acs-inspect-dynamic', 'acs-provenance'];
  let h: Harness;
  beforeAll(async () => {
    h = await startHarness({ profiles: PROFILES_ALL });
  }, 60_000);
  afterAll(async () => {
    await h?.close();
  });

  async function session(profiles: string[], producer: 'deterministic' | 'none', intent?: unknown) {
    const { c } = client(h);
    const hello = await c.hello({
      methods_implemented: [...METHODS, 'agbom/snapshot', 'agbom/changed'],
      profiles_supported: profiles,
      provenance_producer: producer,
    });
    expect(hello.profiles_accepted).toEqual(profiles);
    expect((await c.step('steps/sessionStart', intent === undefined ? {} : { intent })).decision).toBe('allow');
    return c;
  }

  it('an ACS-Core session (acs-provenance not accepted) refuses an id reused for a different object', async () => {
    const c = await session(['acs-core'], 'deterministic');
    expect((await c.step('steps/userMessage', said('c1'))).decision).toBe('allow');
    const head = await h.store.getChainHead(c.sessionId);
    expectReused(await c.step('steps/toolCallResult', output('c1')), OUTPUT_ID, 'at chain entry 1');
    expect(await h.store.getChainHead(c.sessionId)).toEqual(head);
    // Base schemas still let Provenance be absent (§7 OPTIONAL); the identical object again is the same node.
    expect((await c.step('steps/userMessage', { content: [{ type: 'text', value: 'bare' }] })).decision).toBe('allow');
    expect((await c.step('steps/userMessage', said('c1', 'again'))).decision).toBe('allow');
  });

  it('a "none" producer\'s structural records (parser_provenance, registration_provenance) are unique too', async () => {
    const parser = { provenance_id: 'n1', origin: 'user_input' };
    const c = await session(['acs-core', 'acs-inspect', 'acs-inspect-dynamic'], 'none', {
      description: 'tidy the build',
      parsed: ['fs.read'],
      parser_provenance: parser,
    });
    const model = (id: string, provenance: Record<string, unknown>) => ({
      id,
      type: 'model',
      name: id,
      version: '1',
      provider: 'OpenAI',
      endpoint: 'https://api.openai.com/v1',
      model_fields: { context_window: 128000 },
      registration_provenance: provenance,
    });
    const registered = { provenance_id: 'n2', origin: 'system', source_id: 'agent-config.yaml' };
    // The Intent's parser_provenance took n1 at entry 0 (sessionStart): a component may not take it.
    expectReused(
      await c.step('agbom/snapshot', { components: [model('m-a', { ...parser, origin: 'system' })] }),
      '/params/payload/components/0/registration_provenance/provenance_id',
      'at chain entry 0',
    );
    expect((await c.step('agbom/snapshot', { components: [model('m-a', registered)] })).decision).toBe('allow');
    const head = await h.store.getChainHead(c.sessionId);
    expectReused(
      await c.step('agbom/changed', { added: [model('m-b', { ...registered, source_id: 'elsewhere' })] }),
      '/params/payload/added/0/registration_provenance/provenance_id',
      'at chain entry 1',
    );
    expect(await h.store.getChainHead(c.sessionId)).toEqual(head);
    // The same record restated (a component changed, its registration unchanged) names the same node.
    expect((await c.step('agbom/changed', { changed: [{ ...model('m-a', registered), version: '2' }] })).decision).toBe(
      'allow',
    );
  });
});
