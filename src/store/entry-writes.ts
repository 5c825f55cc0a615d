// The statements of the append and step hot paths. One array parameter per column (unnest): a fixed handful of
// statements whatever the batch size. Each is rendered once with named placeholders (templateOf), so its text is
// the same for every batch (drivers keep it prepared) and a batch only binds its arrays.
import { type SQL, sql } from 'drizzle-orm';
import { entryHashOfJcs } from '../chain/index.ts';
import { type BoundQuery, type TransactionQuery, templateOf } from './driver.ts';
import type { PreparedAppend, PreparedStep } from './prepare.ts';
import { chainHeads, contextEntries, replayKeys, sessions } from './schema.ts';
import { names, slot } from './sql.ts';
import type { AppendedEntry, ReplayKeyKind } from './types.ts';
import { jsonTextsArray } from './values.ts';

/** A chain head as locked inside a transaction. */
export interface LockedHead {
  seq: number;
  headHash: string | null;
  pruned: boolean;
  changed: boolean;
}

/** Column arrays for one multi-row entries insert. */
export class EntryColumns {
  readonly sessionId: string[] = [];
  readonly seq: number[] = [];
  readonly entryId: string[] = [];
  readonly stepId: string[] = [];
  readonly stepType: string[] = [];
  readonly requestHash: (string | null)[] = [];
  readonly timestamp: (string | null)[] = [];
  readonly provenance: (string | null)[] = [];
  readonly content: string[] = [];
  readonly previousHash: (string | null)[] = [];
  readonly entryHash: string[] = [];
  readonly params: string[] = [];
  readonly result: (string | null)[] = [];
  readonly revision: (string | null)[] = [];
  readonly durationMs: (number | null)[] = [];
  readonly stateDelta: (string | null)[] = [];

  /** Appends at the locked head and moves it; returns where the entry landed (ACS §8.2 entry_hash). */
  add(
    sessionId: string,
    head: LockedHead,
    p: PreparedAppend,
    decision?: {
      resultJcs: string;
      bundleRevision: string | null;
      evaluationDurationMs: number;
      stateDeltaJcs: string | null;
    },
  ): AppendedEntry {
    const seq = head.seq + 1;
    const previousHash = head.headHash;
    const entryHash = entryHashOfJcs(p.contentJcs, previousHash);
    this.sessionId.push(sessionId);
    this.seq.push(seq);
    this.entryId.push(p.content.entry_id);
    this.stepId.push(p.content.step_id);
    this.stepType.push(p.content.step_type);
    this.requestHash.push(p.content.request_hash ?? null);
    this.timestamp.push(p.content.timestamp ?? null);
    this.provenance.push(p.provenanceSummaryJcs);
    this.content.push(p.contentJcs);
    this.previousHash.push(previousHash);
    this.entryHash.push(entryHash);
    this.params.push(p.paramsJcs);
    this.result.push(decision?.resultJcs ?? null);
    this.revision.push(decision?.bundleRevision ?? null);
    this.durationMs.push(decision?.evaluationDurationMs ?? null);
    this.stateDelta.push(decision?.stateDeltaJcs ?? null);
    Object.assign(head, { seq, headHash: entryHash, changed: true });
    return { seq, entryHash, previousHash };
  }

  get length(): number {
    return this.sessionId.length;
  }
}

const h = chainHeads;
const e = contextEntries;
const k = replayKeys;
const s = sessions;

const LOCK_HEADS = templateOf(sql`
  insert into ${h} (${names(h.sessionId, h.seq, h.headHash)})
    select id, -1, null from unnest(${slot('ids', 'text[]')}) with ordinality as t(id, ord) order by ord
  on conflict (${names(h.sessionId)}) do update set ${names(h.seq)} = ${h.seq}
  returning ${names(h.sessionId, h.seq, h.headHash, h.prunedAt)}`);

/**
 * Upsert = create the head on a session's first entry AND row-lock it, in one statement: two writers can never
 * both see "no head" (the first-append race of a bare SELECT … FOR UPDATE). `ids` must be sorted: unnest keeps
 * the array order, so every batch locks in session-id order and concurrent batches cannot deadlock.
 */
export async function lockChainHeads(query: TransactionQuery, ids: string[]): Promise<Map<string, LockedHead>> {
  const heads = await query(LOCK_HEADS({ ids }));
  return new Map(
    heads.map((r) => [
      String(r.session_id),
      {
        seq: Number(r.seq),
        headHash: r.head_hash === null ? null : String(r.head_hash),
        pruned: r.pruned_at !== null,
        changed: false,
      },
    ]),
  );
}

/** A batch's entry columns but the JSON texts, one row per entry, `ord` its place. */
const ENTRY_ROWS = sql`unnest(${slot('sessionId', 'text[]')}, ${slot('seq', 'integer[]')}, ${slot('entryId', 'text[]')},
    ${slot('stepId', 'text[]')}, ${slot('stepType', 'text[]')}, ${slot('requestHash', 'text[]')},
    ${slot('timestamp', 'text[]')}, ${slot('provenance', 'text[]')}, ${slot('previousHash', 'text[]')},
    ${slot('entryHash', 'text[]')}, ${slot('revision', 'text[]')}, ${slot('durationMs', 'double precision[]')})
  with ordinality
  as u(session_id, seq, entry_id, step_id, step_type, request_hash, timestamp, provenance, previous_hash, entry_hash,
       revision, ms, ord)`;

/**
 * Inserts the entries of the rows named `source` (ENTRY_ROWS' columns), each with its JSON texts picked by `ord`.
 * The texts go as `json` arrays (jsonTextsArray); result and state change are objects or arrays when present,
 * so JSON null marks them absent.
 */
function entriesInsert(source: string): SQL {
  return sql`
    insert into ${e} (${names(
      e.sessionId,
      e.seq,
      e.entryId,
      e.stepId,
      e.stepType,
      e.requestHash,
      e.timestamp,
      e.provenanceSummaryJcs,
      e.contentJcs,
      e.previousHash,
      e.entryHash,
      e.paramsJcs,
      e.resultJcs,
      e.bundleRevision,
      e.evaluationDurationMs,
      e.stateDeltaJcs,
    )})
    select s.session_id, s.seq, s.entry_id, s.step_id, s.step_type, s.request_hash, s.timestamp, s.provenance, c.value::text,
           s.previous_hash, s.entry_hash, p.value::text, case when json_typeof(r.value) <> 'null' then r.value::text end,
           s.revision, s.ms, case when json_typeof(d.value) <> 'null' then d.value::text end
      from ${sql.identifier(source)} as s
      join json_array_elements(${slot('content', 'json')}) with ordinality as c(value, ord) on c.ord = s.ord
      join json_array_elements(${slot('params', 'json')}) with ordinality as p(value, ord) on p.ord = s.ord
      join json_array_elements(${slot('result', 'json')}) with ordinality as r(value, ord) on r.ord = s.ord
      join json_array_elements(${slot('stateDelta', 'json')}) with ordinality as d(value, ord) on d.ord = s.ord`;
}

/** Values of ENTRY_ROWS' and entriesInsert's placeholders: the columns by their names, the JSON texts as arrays. */
function entryValues(c: EntryColumns): Record<string, unknown> {
  const { content, params, result, stateDelta, ...columns } = c;
  return {
    ...columns,
    content: jsonTextsArray(content),
    params: jsonTextsArray(params),
    result: jsonTextsArray(result),
    stateDelta: jsonTextsArray(stateDelta),
  };
}

const APPEND_WRITES = templateOf(sql`
  with placed as (select * from ${ENTRY_ROWS}),
  entries as (${entriesInsert('placed')}),
  moved as (
    update ${h} set ${names(h.seq)} = v.seq, ${names(h.headHash)} = v.head_hash, ${names(h.updatedAt)} = now()
      from unnest(${slot('movedIds', 'text[]')}, ${slot('movedSeqs', 'integer[]')}, ${slot('movedHashes', 'text[]')})
             as v(session_id, seq, head_hash)
     where ${h.sessionId} = v.session_id)
  select 1`);

/**
 * A batch's entries and the moves of the heads they were appended at, in one statement (one round trip; a
 * statement is atomic, and the transaction holds the head locks).
 */
export function appendWrites(cols: EntryColumns, heads: Map<string, LockedHead>): BoundQuery {
  const moved = [...heads].filter(([, head]) => head.changed);
  return APPEND_WRITES({
    ...entryValues(cols),
    movedIds: moved.map(([id]) => id),
    movedSeqs: moved.map(([, head]) => head.seq),
    movedHashes: moved.map(([, head]) => head.headHash),
  });
}

export type StepItem = { key: string; value: PreparedStep };

/**
 * The writes of a step batch, reading each session's head from `heads`: the chain_heads table (its rows locked by
 * the statement before, LOCK_HEADS) or the `locked` CTE (LOCKED_STEP_WRITES, which locks them itself).
 */
function stepWritesStatement(heads: SQL, lockFirst: SQL, tail: SQL): SQL {
  return sql`
  ${lockFirst}placed as materialized (
    select u.*, k.request_id, k.nonce, k.keys_expire_at
      from ${ENTRY_ROWS}
      join unnest(${slot('requestIds', 'text[]')}, ${slot('nonces', 'text[]')}, ${slot('keysExpireAt', 'timestamptz[]')})
             with ordinality as k(request_id, nonce, keys_expire_at, ord) on k.ord = u.ord
      join ${heads} as lh on lh.session_id = u.session_id and lh.pruned_at is null
               and lh.seq = u.seq - 1 and lh.head_hash is not distinct from u.previous_hash),
  keys as (
    insert into ${k} (${names(k.sessionId, k.kind, k.value, k.expiresAt)})
      select p.session_id, v.kind, v.value, p.keys_expire_at
        from placed as p cross join lateral (values ('request_id', p.request_id), ('nonce', p.nonce)) as v(kind, value)
       where v.value is not null
    on conflict (${names(k.sessionId, k.kind, k.value)}) do update set ${names(k.expiresAt)} = excluded.expires_at
      where ${k.expiresAt} <= ${slot('now', 'timestamptz')}
    returning ${names(k.sessionId, k.kind, k.value)}),
  steps as materialized (
    select p.* from placed as p
      left join (select session_id, count(*) as n from keys group by session_id) as w on w.session_id = p.session_id
     where coalesce(w.n, 0) = (p.request_id is not null)::integer + (p.nonce is not null)::integer),
  entries as (${entriesInsert('steps')}),
  moved as (
    update ${h} set ${names(h.seq)} = st.seq, ${names(h.headHash)} = st.entry_hash, ${names(h.updatedAt)} = now()
      from steps as st where ${h.sessionId} = st.session_id),
  children as (
    insert into ${s} (${names(s.id, s.tenantId, s.agentId, s.keyId, s.helloJcs, s.intentJcs, s.stateJcs, s.parentSessionId, s.createdAt)})
    select c.id, c.tenant_id, c.agent_id, c.key_id, c.hello_jcs, c.intent_jcs, c.state_jcs, c.parent_session_id,
           coalesce(c.created_at, now())
      from unnest(${slot('childOf', 'text[]')}, ${slot('childId', 'text[]')}, ${slot('childTenant', 'text[]')},
                  ${slot('childAgent', 'text[]')}, ${slot('childKey', 'text[]')}, ${slot('childHello', 'text[]')},
                  ${slot('childIntent', 'text[]')}, ${slot('childState', 'text[]')}, ${slot('childParent', 'text[]')},
                  ${slot('childCreatedAt', 'timestamptz[]')})
             as c(step_session_id, id, tenant_id, agent_id, key_id, hello_jcs, intent_jcs, state_jcs, parent_session_id, created_at)
      join steps as st on st.session_id = c.step_session_id
    on conflict (${names(s.id)}) do nothing),
  session_rows as (
    update ${s}
       set ${names(s.stateJcs)} = coalesce(v.state_jcs, ${s.stateJcs}), ${names(s.stateSeq)} = coalesce(v.state_seq, ${s.stateSeq}),
           ${names(s.intentJcs)} = coalesce(v.intent_jcs, ${s.intentJcs}), ${names(s.keyId)} = coalesce(v.key_id, ${s.keyId}),
           ${names(s.closedAt)} = coalesce(${s.closedAt}, v.closed_at)
      from (select u.id, case when u.has_state then j.value::text end, case when u.has_state then u.seq end,
                   u.intent_jcs, u.key_id, u.closed_at
              from unnest(${slot('rowId', 'text[]')}, ${slot('rowHasState', 'boolean[]')}, ${slot('rowSeq', 'integer[]')},
                          ${slot('rowIntent', 'text[]')}, ${slot('rowKey', 'text[]')}, ${slot('rowClosedAt', 'timestamptz[]')})
                     with ordinality as u(id, has_state, seq, intent_jcs, key_id, closed_at, ord)
              join json_array_elements(${slot('rowStates', 'json')}) with ordinality as j(value, ord) on j.ord = u.ord
              join steps as st on st.session_id = u.id)
           as v(id, state_jcs, state_seq, intent_jcs, key_id, closed_at)
     where ${s.id} = v.id)
  ${tail}`;
}

const STEP_WRITES = templateOf(
  stepWritesStatement(
    sql`${h}`,
    sql`with `,
    sql`select session_id, null as kind, null as value from steps
  union all select session_id, kind, value from keys`,
  ),
);

/**
 * A step batch as one statement outside any transaction (the driver's autocommit): it row-locks the heads of the
 * batch's sessions itself, in `ids` order like LOCK_HEADS (so it cannot deadlock with a transaction's batch), then
 * writes as STEP_WRITES does. For sessions whose head row exists: a lock cannot create one (LOCK_HEADS' upsert
 * does). Under READ COMMITTED the lock waits for a concurrent writer and returns the head as that writer left it,
 * and the statement's own head update then applies to that row version (PostgreSQL docs, "Read Committed
 * Isolation Level"), so a step placed at a head that moved meanwhile writes nothing. Rows: the committed steps'
 * sessions (kind null), the keys written, and each locked head (kind 'head', value its hash).
 */
const LOCKED_STEP_WRITES = templateOf(
  stepWritesStatement(
    sql.raw('locked'),
    sql`with locked as materialized (
    select ${h.sessionId}, ${h.seq}, ${h.headHash}, ${h.prunedAt}
      from unnest(${slot('ids', 'text[]')}) with ordinality as t(id, ord)
      join ${h} on ${h.sessionId} = t.id
     order by t.ord
       for update of ${h}),
  `,
    sql`select session_id, null as kind, null as value, null::integer as seq, null::boolean as pruned from steps
  union all select session_id, kind, value, null, null from keys
  union all select session_id, 'head', head_hash, seq, pruned_at is not null from locked`,
  ),
);

/**
 * A step batch's writes, in one statement sent right behind lockChainHeads' (the two and COMMIT go out together:
 * one round trip). It cannot wait for the heads, so it reads them itself, under the lock the first statement took:
 * the steps whose head is still where they expect it insert their replay keys (§10.3: a fresh key inserts, an
 * expired one is taken over, a live one returns nothing; a stale step's keys are not burnt, since its re-evaluated
 * retry carries the same request_id), and those whose every key went in write their entries, head moves, subagent
 * session rows and session rows. Rows: the committed steps' sessions (kind null), then the keys written.
 */
export function stepWrites(batch: StepItem[], cols: EntryColumns, now: Date): BoundQuery {
  return STEP_WRITES(stepValues(batch, cols, now));
}

/**
 * A step batch whose sessions all have a head row, as LOCKED_STEP_WRITES: one statement, its own transaction.
 * `ids`: the batch's sessions, sorted (the lock order).
 */
export function lockedStepWrites(batch: StepItem[], cols: EntryColumns, now: Date, ids: string[]): BoundQuery {
  return LOCKED_STEP_WRITES({ ...stepValues(batch, cols, now), ids });
}

function stepValues(batch: StepItem[], cols: EntryColumns, now: Date): Record<string, unknown> {
  const keyOf = (p: PreparedStep, kind: ReplayKeyKind) => p.keys.find((key) => key.kind === kind)?.value ?? null;
  const children = batch.flatMap(({ key, value }) => (value.child ? [{ key, child: value.child }] : []));
  // Most steps store only their state's change (in the entry) and leave the session row alone.
  const rows = batch.filter(({ value: p }) => p.stateJcs ?? p.intentJcs ?? p.keyId ?? p.closedAt);
  return {
    ...entryValues(cols),
    requestIds: batch.map((item) => keyOf(item.value, 'request_id')),
    nonces: batch.map((item) => keyOf(item.value, 'nonce')),
    keysExpireAt: batch.map((item) => item.value.keysExpireAt),
    now: now.toISOString(),
    childOf: children.map((c) => c.key),
    childId: children.map((c) => c.child.id),
    childTenant: children.map((c) => c.child.tenantId ?? null),
    childAgent: children.map((c) => c.child.agentId),
    childKey: children.map((c) => c.child.keyId ?? null),
    childHello: children.map((c) => c.child.helloJcs),
    childIntent: children.map((c) => c.child.intentJcs),
    childState: children.map((c) => c.child.stateJcs),
    childParent: children.map((c) => c.child.parentSessionId ?? null),
    childCreatedAt: children.map((c) => c.child.createdAt?.toISOString() ?? null),
    rowId: rows.map((r) => r.key),
    rowHasState: rows.map((r) => r.value.stateJcs !== null),
    rowSeq: rows.map((r) => r.value.expected.seq + 1),
    rowIntent: rows.map((r) => r.value.intentJcs),
    rowKey: rows.map((r) => r.value.keyId),
    rowClosedAt: rows.map((r) => r.value.closedAt),
    rowStates: jsonTextsArray(rows.map((r) => r.value.stateJcs)),
  };
}
