// The GuardianStore over Drizzle, written once for both drivers (src/store/pglite, src/store/postgres).
import { and, asc, desc, eq, gt, isNotNull, lt, sql } from 'drizzle-orm';
import type { PgDatabase, PgQueryResultHKT, PgUpdateSetSource } from 'drizzle-orm/pg-core';
import { createHash } from 'node:crypto';
import { canonicalJson, sha256Hex, type ContextEntryContent } from '../chain/index.ts';
import { type CheckpointPolicy, signCheckpoint } from './checkpoints.ts';
import { StoreError, isRetryableConflict, sqlStateOf, toStoreError } from './errors.ts';
import { GroupCommitQueue, type QueuedItem } from './group-commit.ts';
import {
  chainHeads,
  checkpoints,
  contextEntries,
  policyActivations,
  policyBundles,
  replayKeys,
  sessions,
} from './schema.ts';
import { applyStatePatch, stateDiff } from './state-delta.ts';
import type {
  AppendedEntry,
  ChainHead,
  ChainInfo,
  CheckpointRecord,
  ContextEntryRecord,
  DurableStore,
  Json,
  NewContextEntry,
  PolicyActivationRecord,
  PolicyBundleRecord,
  ReplayKeyKind,
  SessionRecord,
  StepCommit,
  StepCommitOutcome,
} from './types.ts';

export type StoreDatabase = PgDatabase<PgQueryResultHKT>;

/**
 * Parameterised SQL on one connection, rows as plain objects. In a transaction, `{ last: true }` marks its final
 * statement: a driver may send COMMIT along with it (one round trip less); nothing may follow it.
 */
export type RawQuery = (
  sqlText: string,
  params?: unknown[],
  options?: { last?: boolean },
) => Promise<Record<string, unknown>[]>;

/** What a driver folder provides; everything else is shared. */
export interface StoreDriver {
  readonly name: 'pglite' | 'postgres';
  readonly db: StoreDatabase;
  /** Applies migrations/ (idempotent, safe when several processes start at once). */
  migrate(): Promise<void>;
  close(): Promise<void>;
  /**
   * Runs `work` in one transaction (commit on return, rollback on throw). Drivers own this so a lost
   * connection ends in a rejected promise and a discarded connection, never a leaked or poisoned one.
   */
  transaction<T>(work: (query: RawQuery) => Promise<T>): Promise<T>;
  /** Raw SQL for operators and tests. */
  query(sqlText: string, params?: unknown[]): Promise<Record<string, unknown>[]>;
  /** Concurrent append transactions (PGlite has one connection: 1). */
  readonly appendConcurrency: number;
}

export interface StoreOptions {
  /** Signed checkpoints of chain heads; without it no checkpoints are written. */
  checkpoints?: CheckpointPolicy;
  /** Appends per transaction at most (default 256). */
  maxBatch?: number;
  /** Retries of a transaction that hit a serialization failure or deadlock (default 8). */
  maxRetries?: number;
  /**
   * A step handed the state it started from (StepCommit.session.stateBase) stores only its change, with its entry;
   * the session row gets the whole state when the entry's seq + 1 is a multiple of this (default 32), or when the
   * step writes the row anyway. 1 writes the whole state on every step.
   */
  stateCheckpointEvery?: number;
  /** Background failures (checkpoint writes, replay-key purge); default: one line on stderr. */
  onBackgroundError?: (err: StoreError) => void;
}

interface PreparedAppend {
  content: ContextEntryContent;
  contentJcs: string;
  paramsJcs: string;
  provenanceSummaryJcs: string | null;
}

const HEX64 = /^[0-9a-f]{64}$/;
const MAX_PAGE = 10_000;

function parseJcs(text: string): Json {
  return JSON.parse(text) as Json;
}

function jcsOf(value: unknown, what: string): string {
  try {
    return canonicalJson(value);
  } catch (err) {
    throw new StoreError(
      'invalid_input',
      `${what} is not a JSON value: ${err instanceof Error ? err.message : String(err)}`,
    );
  }
}

/**
 * JSON text of the policy session state. Not canonical: nothing hashes or signs the state, it is only read back,
 * and at 10–20 KB per step JCS (a key sort at every level) was the largest single CPU cost of a durable step.
 */
function stateTextOf(value: unknown): string {
  let text: string | undefined;
  try {
    text = JSON.stringify(value);
  } catch (err) {
    throw new StoreError(
      'invalid_input',
      `state is not a JSON value: ${err instanceof Error ? err.message : String(err)}`,
    );
  }
  if (text === undefined) throw new StoreError('invalid_input', 'state is not a JSON value');
  return text;
}

/**
 * JSON texts as one `json` array parameter: the texts go out as they are, where a text[] parameter has the
 * driver escape every quote of every element (for the 5–20 KB session states, as much CPU as stringifying them).
 * Postgres' json_array_elements gives each element back as its exact text. A null is written as JSON null:
 * the caller says apart which elements are absent.
 */
function jsonTextsArray(texts: (string | null)[]): string {
  return '[' + texts.map((t) => t ?? 'null').join(',') + ']';
}

function requireId(value: unknown, what: string): string {
  if (typeof value !== 'string' || value.length === 0 || value.length > 512) {
    throw new StoreError('invalid_input', `${what} must be a non-empty string of at most 512 characters`);
  }
  return value;
}

/** Validates an entry before it joins a batch, so one bad entry cannot fail its neighbours' transaction. */
function prepareAppend(entry: NewContextEntry): PreparedAppend {
  if (!entry || typeof entry !== 'object' || !entry.content || typeof entry.content !== 'object') {
    throw new StoreError('invalid_input', 'entry.content must be an object');
  }
  const { entry_hash: _h, previous_hash: _p, ...content } = entry.content;
  requireId(content.entry_id, 'entry_id');
  requireId(content.step_id, 'step_id');
  requireId(content.step_type, 'step_type');
  if (content.timestamp !== undefined && typeof content.timestamp !== 'string') {
    throw new StoreError('invalid_input', 'timestamp must be a string when present');
  }
  const paramsJcs = typeof entry.paramsJcs === 'string' ? entry.paramsJcs : jcsOf(entry.params, 'params');
  if (content.request_hash !== undefined) {
    if (typeof content.request_hash !== 'string' || !HEX64.test(content.request_hash)) {
      throw new StoreError('invalid_input', 'request_hash must be 64 lowercase hex digits');
    }
    // ACS §8.2: request_hash is over params as received; refuse a pair that `audit verify` would reject.
    // sha256Hex(JCS(params)) is computeRequestHash(params); the JCS text is already at hand.
    if (sha256Hex(paramsJcs) !== content.request_hash) {
      throw new StoreError('invalid_input', 'request_hash does not match SHA-256(JCS(params))');
    }
  }
  // The caller's text when it hashed the content itself (the pipeline signs the resulting chain_hash).
  const contentJcs = typeof entry.contentJcs === 'string' ? entry.contentJcs : jcsOf(content, 'entry content');
  return {
    content: content as ContextEntryContent,
    contentJcs,
    paramsJcs,
    provenanceSummaryJcs: content.provenance_summary === undefined ? null : canonicalJson(content.provenance_summary),
  };
}

/**
 * ACS §8.2 entry_hash from the content's JCS text, which prepareAppend already holds: the same bytes
 * computeEntryHash hashes (JCS of the entry minus entry_hash and previous_hash, then the previous hash's raw 32
 * bytes), without canonicalising the content a second time. `previousHash` is a head read back from the store
 * or checked by prepareStep: 64 hex digits or null.
 */
function entryHashOf(contentJcs: string, previousHash: string | null): string {
  const hash = createHash('sha256').update(contentJcs, 'utf8');
  if (previousHash !== null) hash.update(Buffer.from(previousHash, 'hex'));
  return hash.digest('hex');
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

type EntryRow = typeof contextEntries.$inferSelect;

interface PendingDecision {
  sessionId: string;
  seq: number;
  resultJcs: string;
  bundleRevision: string | null;
  evaluationDurationMs: number;
}

type DecisionOutcome = 'recorded' | 'exists' | 'missing';

function toEntryRecord(row: EntryRow): ContextEntryRecord {
  return {
    sessionId: row.sessionId,
    seq: row.seq,
    content: JSON.parse(row.contentJcs) as ContextEntryContent,
    previousHash: row.previousHash,
    entryHash: row.entryHash,
    params: parseJcs(row.paramsJcs),
    result: row.resultJcs === null ? null : parseJcs(row.resultJcs),
    bundleRevision: row.bundleRevision,
    evaluationDurationMs: row.evaluationDurationMs,
    createdAt: row.createdAt,
  };
}

type NewSession = Omit<SessionRecord, 'createdAt' | 'closedAt'> & { createdAt?: Date };

function toSessionRow(session: NewSession): typeof sessions.$inferInsert {
  return {
    id: requireId(session.id, 'session id'),
    tenantId: session.tenantId ?? null,
    agentId: requireId(session.agentId, 'agent id'),
    keyId: session.keyId ?? null,
    helloJcs: jcsOf(session.hello ?? null, 'hello'),
    intentJcs: jcsOf(session.intent ?? null, 'intent'),
    stateJcs: stateTextOf(session.state ?? null),
    parentSessionId: session.parentSessionId ?? null,
    ...(session.createdAt ? { createdAt: session.createdAt } : {}),
  };
}

/** A StepCommit validated and serialised before it joins a batch (one bad step cannot fail its neighbours). */
interface PreparedStep {
  append: PreparedAppend;
  expected: { seq: number; headHash: string | null };
  keys: { kind: ReplayKeyKind; value: string }[];
  keysExpireAt: string;
  resultJcs: string;
  bundleRevision: string | null;
  evaluationDurationMs: number;
  /** The whole state for the session row (a state checkpoint), or null. */
  stateJcs: string | null;
  /** The state's change, stored with the entry, when the row does not get the whole state. */
  stateDeltaJcs: string | null;
  intentJcs: string | null;
  keyId: string | null;
  closedAt: string | null;
  child: typeof sessions.$inferInsert | null;
}

/** JSON text of a state patch (see stateTextOf for why not JCS); null when the step left the state as it was. */
function stateDeltaTextOf(base: Json, next: Json): string | null {
  const patch = stateDiff(base, next);
  return patch === undefined ? null : stateTextOf(patch);
}

function isValidDate(d: unknown): d is Date {
  return d instanceof Date && !Number.isNaN(d.getTime());
}

function prepareStep(step: StepCommit, checkpointEvery: number): PreparedStep {
  for (const k of step.replayKeys) {
    if (k.kind !== 'request_id' && k.kind !== 'nonce')
      throw new StoreError('invalid_input', `unknown replay key kind ${String(k.kind)}`);
    requireId(k.value, k.kind);
  }
  if (new Set(step.replayKeys.map((k) => k.kind)).size !== step.replayKeys.length)
    throw new StoreError('invalid_input', 'one replay key per kind');
  if (!isValidDate(step.replayKeysExpireAt))
    throw new StoreError('invalid_input', 'replayKeysExpireAt must be a valid Date');
  if (step.session.closedAt !== undefined && !isValidDate(step.session.closedAt))
    throw new StoreError('invalid_input', 'closedAt must be a valid Date');
  if (!Number.isFinite(step.decision.evaluationDurationMs))
    throw new StoreError('invalid_input', 'evaluationDurationMs must be a finite number');
  const head = step.expectedHead;
  if (head !== null && (!Number.isInteger(head.seq) || head.seq < 0 || !HEX64.test(head.entryHash))) {
    throw new StoreError('invalid_input', 'expectedHead must be null or { seq ≥ 0, entryHash: 64 hex digits }');
  }
  const { state, stateBase } = step.session;
  // The row is rewritten anyway when the step binds a key, fixes the intent or seals the session.
  const rowWritten =
    step.session.intent !== undefined || step.session.keyId !== undefined || step.session.closedAt !== undefined;
  const seq = (head?.seq ?? -1) + 1;
  const whole = state !== undefined && (stateBase === undefined || rowWritten || (seq + 1) % checkpointEvery === 0);
  return {
    append: prepareAppend(step.entry),
    expected: head === null ? { seq: -1, headHash: null } : { seq: head.seq, headHash: head.entryHash },
    keys: step.replayKeys,
    keysExpireAt: step.replayKeysExpireAt.toISOString(),
    resultJcs:
      typeof step.decision.resultJcs === 'string' ? step.decision.resultJcs : jcsOf(step.decision.result, 'result'),
    bundleRevision: step.decision.bundleRevision ?? null,
    evaluationDurationMs: step.decision.evaluationDurationMs,
    stateJcs: whole ? stateTextOf(state) : null,
    stateDeltaJcs: state === undefined || whole ? null : stateDeltaTextOf(stateBase ?? null, state),
    intentJcs: step.session.intent === undefined ? null : jcsOf(step.session.intent, 'intent'),
    keyId: step.session.keyId ?? null,
    closedAt: step.session.closedAt?.toISOString() ?? null,
    child: step.childSession ? toSessionRow(step.childSession) : null,
  };
}

/** A chain head as locked inside a transaction. */
interface LockedHead {
  seq: number;
  headHash: string | null;
  pruned: boolean;
  changed: boolean;
}

/** Column arrays for one multi-row entries insert (unnest keeps it at one statement per batch). */
class EntryColumns {
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

  /** Appends at the locked head and moves it; returns where the entry landed. */
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
    const entryHash = entryHashOf(p.contentJcs, previousHash);
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

/**
 * Upsert = create the head on a session's first entry AND row-lock it, in one statement: two writers can never
 * both see "no head" (the first-append race of a bare SELECT … FOR UPDATE). `ids` must be sorted: unnest keeps
 * the array order, so every batch locks in session-id order and concurrent batches cannot deadlock.
 */
async function lockChainHeads(query: RawQuery, ids: string[]): Promise<Map<string, LockedHead>> {
  const heads = await query(
    `insert into chain_heads (session_id, seq, head_hash)
       select id, -1, null from unnest($1::text[]) with ordinality as t(id, ord) order by ord
     on conflict (session_id) do update set seq = chain_heads.seq
     returning session_id, seq, head_hash, pruned_at`,
    [ids],
  );
  return new Map(
    heads.map((h) => [
      String(h.session_id),
      {
        seq: Number(h.seq),
        headHash: h.head_hash === null ? null : String(h.head_hash),
        pruned: h.pruned_at !== null,
        changed: false,
      },
    ]),
  );
}

/**
 * Parameters of the entries insert ($1…$16) and the head moves ($17…$19) of ENTRY_WRITES. The JSON texts (content,
 * params, result, state change) go as `json` arrays (jsonTextsArray): as text[] elements the driver escaped every
 * quote of every entry (≈ 13 µs of the event loop per durable step). Result and state change are objects or
 * arrays when present, so JSON null marks them absent.
 */
function entryWriteParams(cols: EntryColumns, heads: Map<string, LockedHead>): unknown[] {
  const moved = [...heads].filter(([, h]) => h.changed);
  return [
    cols.sessionId,
    cols.seq,
    cols.entryId,
    cols.stepId,
    cols.stepType,
    cols.requestHash,
    cols.timestamp,
    cols.provenance,
    jsonTextsArray(cols.content),
    cols.previousHash,
    cols.entryHash,
    jsonTextsArray(cols.params),
    jsonTextsArray(cols.result),
    cols.revision,
    cols.durationMs,
    jsonTextsArray(cols.stateDelta),
    moved.map(([id]) => id),
    moved.map(([, h]) => h.seq),
    moved.map(([, h]) => h.headHash),
  ];
}

/** A batch's entry columns (entryWriteParams' $1…$16 but the JSON texts), one row per entry, `ord` its place. */
const ENTRY_ROWS = `
  unnest($1::text[], $2::integer[], $3::text[], $4::text[], $5::text[], $6::text[], $7::text[], $8::text[],
         $10::text[], $11::text[], $14::text[], $15::double precision[]) with ordinality
    as u(session_id, seq, entry_id, step_id, step_type, request_hash, timestamp, provenance, previous_hash, entry_hash, revision, ms, ord)`;

/**
 * Inserts the entries of `source` (rows with ENTRY_ROWS' columns), each with its JSON texts (content, params,
 * result, state change: $9, $12, $13, $16) picked by `ord`.
 */
function entriesInsertFrom(source: string): string {
  return `
    insert into context_entries (session_id, seq, entry_id, step_id, step_type, request_hash, timestamp, provenance_summary_jcs,
                                 content_jcs, previous_hash, entry_hash, params_jcs, result_jcs, bundle_revision, evaluation_duration_ms,
                                 state_delta_jcs)
    select s.session_id, s.seq, s.entry_id, s.step_id, s.step_type, s.request_hash, s.timestamp, s.provenance, c.value::text,
           s.previous_hash, s.entry_hash, p.value::text, case when json_typeof(r.value) <> 'null' then r.value::text end,
           s.revision, s.ms, case when json_typeof(d.value) <> 'null' then d.value::text end
      from ${source} as s
      join json_array_elements($9::json) with ordinality as c(value, ord) on c.ord = s.ord
      join json_array_elements($12::json) with ordinality as p(value, ord) on p.ord = s.ord
      join json_array_elements($13::json) with ordinality as r(value, ord) on r.ord = s.ord
      join json_array_elements($16::json) with ordinality as d(value, ord) on d.ord = s.ord`;
}

/**
 * A batch's entries and the moves of the heads they were appended at, as WITH clauses of one statement (one
 * round trip; a statement is atomic, and the transaction holds the head locks). Parameters: entryWriteParams.
 */
const ENTRY_WRITES = `
  placed as (select * from ${ENTRY_ROWS}),
  entries as (${entriesInsertFrom('placed')}),
  moved as (
    update chain_heads as h set seq = v.seq, head_hash = v.head_hash, updated_at = now()
      from unnest($17::text[], $18::integer[], $19::text[]) as v(session_id, seq, head_hash)
     where h.session_id = v.session_id)`;

/** Writes a batch's entries and moves the heads that changed, the transaction's last statement. */
async function writeEntries(query: RawQuery, cols: EntryColumns, heads: Map<string, LockedHead>): Promise<void> {
  if (cols.length === 0) return;
  await query(`with ${ENTRY_WRITES} select 1`, entryWriteParams(cols, heads), { last: true });
}

/**
 * A step batch's writes, in one statement sent right behind lockChainHeads' (the two and COMMIT go out together:
 * one round trip). It cannot wait for the heads, so it reads them itself, under the lock the first statement took:
 * the steps whose head is still where they expect it insert their replay keys (§10.3: a fresh key inserts, an
 * expired one is taken over, a live one returns nothing; a stale step's keys are not burnt, since its re-evaluated
 * retry carries the same request_id), and those whose every key went in write their entries, head moves, subagent
 * session rows and session rows. Rows: the committed steps' sessions (kind null), then the keys written.
 * Parameters: stepWriteParams.
 */
const STEP_WRITES = `
  with placed as materialized (
    select u.*, k.request_id, k.nonce, k.keys_expire_at
      from ${ENTRY_ROWS}
      join unnest($17::text[], $18::text[], $19::timestamptz[]) with ordinality as k(request_id, nonce, keys_expire_at, ord) on k.ord = u.ord
      join chain_heads as h on h.session_id = u.session_id and h.pruned_at is null
                           and h.seq = u.seq - 1 and h.head_hash is not distinct from u.previous_hash),
  keys as (
    insert into replay_keys (session_id, kind, value, expires_at)
      select p.session_id, k.kind, k.value, p.keys_expire_at
        from placed as p cross join lateral (values ('request_id', p.request_id), ('nonce', p.nonce)) as k(kind, value)
       where k.value is not null
    on conflict (session_id, kind, value) do update set expires_at = excluded.expires_at
      where replay_keys.expires_at <= $20::timestamptz
    returning session_id, kind, value),
  steps as materialized (
    select p.* from placed as p
      left join (select session_id, count(*) as n from keys group by session_id) as w on w.session_id = p.session_id
     where coalesce(w.n, 0) = (p.request_id is not null)::integer + (p.nonce is not null)::integer),
  entries as (${entriesInsertFrom('steps')}),
  moved as (
    update chain_heads as h set seq = s.seq, head_hash = s.entry_hash, updated_at = now()
      from steps as s where h.session_id = s.session_id),
  children as (
    insert into sessions (id, tenant_id, agent_id, key_id, hello_jcs, intent_jcs, state_jcs, parent_session_id, created_at)
    select c.id, c.tenant_id, c.agent_id, c.key_id, c.hello_jcs, c.intent_jcs, c.state_jcs, c.parent_session_id, coalesce(c.created_at, now())
      from unnest($28::text[], $29::text[], $30::text[], $31::text[], $32::text[], $33::text[], $34::text[], $35::text[], $36::text[],
                  $37::timestamptz[])
             as c(step_session_id, id, tenant_id, agent_id, key_id, hello_jcs, intent_jcs, state_jcs, parent_session_id, created_at)
      join steps as s on s.session_id = c.step_session_id
    on conflict (id) do nothing),
  session_rows as (
    update sessions as s
       set state_jcs = coalesce(v.state_jcs, s.state_jcs), state_seq = coalesce(v.state_seq, s.state_seq),
           intent_jcs = coalesce(v.intent_jcs, s.intent_jcs), key_id = coalesce(v.key_id, s.key_id),
           closed_at = coalesce(s.closed_at, v.closed_at)
      from (select u.id, case when u.has_state then j.value::text end, case when u.has_state then u.seq end,
                   u.intent_jcs, u.key_id, u.closed_at
              from unnest($21::text[], $22::boolean[], $23::integer[], $24::text[], $25::text[], $26::timestamptz[])
                     with ordinality as u(id, has_state, seq, intent_jcs, key_id, closed_at, ord)
              join json_array_elements($27::json) with ordinality as j(value, ord) on j.ord = u.ord
              join steps as st on st.session_id = u.id)
           as v(id, state_jcs, state_seq, intent_jcs, key_id, closed_at)
     where s.id = v.id)
  select session_id, null as kind, null as value from steps
  union all select session_id, kind, value from keys`;

/** A step's expected head, as the head its entry is placed at. */
function expectedHeadOf(p: PreparedStep): LockedHead {
  return { seq: p.expected.seq, headHash: p.expected.headHash, pruned: false, changed: false };
}

/**
 * Parameters of STEP_WRITES: the entries ($1…$16, in ENTRY_WRITES' order), each step's keys (one per kind) and their
 * expiry, the time keys expire against, session rows, subagent rows.
 */
function stepWriteParams(batch: QueuedItem<PreparedStep, StepCommitOutcome>[], cols: EntryColumns): unknown[] {
  const keyOf = (p: PreparedStep, kind: ReplayKeyKind) => p.keys.find((k) => k.kind === kind)?.value ?? null;
  // Most steps store only their state's change (in the entry) and leave the session row alone.
  const rowsOf = batch.filter(({ value: p }) => p.stateJcs ?? p.intentJcs ?? p.keyId ?? p.closedAt);
  const children = batch.filter(({ value: p }) => p.child !== null);
  const child = (item: QueuedItem<PreparedStep, StepCommitOutcome>) => item.value.child!;
  return [
    cols.sessionId,
    cols.seq,
    cols.entryId,
    cols.stepId,
    cols.stepType,
    cols.requestHash,
    cols.timestamp,
    cols.provenance,
    jsonTextsArray(cols.content),
    cols.previousHash,
    cols.entryHash,
    jsonTextsArray(cols.params),
    jsonTextsArray(cols.result),
    cols.revision,
    cols.durationMs,
    jsonTextsArray(cols.stateDelta),
    batch.map((item) => keyOf(item.value, 'request_id')),
    batch.map((item) => keyOf(item.value, 'nonce')),
    batch.map((item) => item.value.keysExpireAt),
    new Date().toISOString(),
    rowsOf.map((r) => r.key),
    rowsOf.map((r) => r.value.stateJcs !== null),
    rowsOf.map((r) => r.value.expected.seq + 1),
    rowsOf.map((r) => r.value.intentJcs),
    rowsOf.map((r) => r.value.keyId),
    rowsOf.map((r) => r.value.closedAt),
    jsonTextsArray(rowsOf.map((r) => r.value.stateJcs)),
    children.map((r) => r.key),
    children.map((r) => child(r).id),
    children.map((r) => child(r).tenantId ?? null),
    children.map((r) => child(r).agentId),
    children.map((r) => child(r).keyId ?? null),
    children.map((r) => child(r).helloJcs),
    children.map((r) => child(r).intentJcs),
    children.map((r) => child(r).stateJcs),
    children.map((r) => child(r).parentSessionId ?? null),
    children.map((r) => child(r).createdAt?.toISOString() ?? null),
  ];
}

export class DrizzleGuardianStore implements DurableStore {
  readonly driver: 'pglite' | 'postgres';
  readonly #d: StoreDriver;
  readonly #db: StoreDatabase;
  readonly #appends: GroupCommitQueue<PreparedAppend, AppendedEntry>;
  readonly #decisions: GroupCommitQueue<PendingDecision, DecisionOutcome>;
  readonly #steps: GroupCommitQueue<PreparedStep, StepCommitOutcome>;
  readonly #options: StoreOptions;
  readonly #maxRetries: number;
  readonly #stateCheckpointEvery: number;
  /** Heads appended by this process and not yet checkpointed (for the time-based checkpoint). */
  readonly #uncheckpointed = new Map<string, { seq: number; headHash: string; since: number }>();
  readonly #background = new Set<Promise<unknown>>();
  #checkpointTimer: NodeJS.Timeout | undefined;
  #lastReplayPurge = Date.now();
  #closed = false;

  constructor(driver: StoreDriver, options: StoreOptions = {}) {
    this.driver = driver.name;
    this.#d = driver;
    this.#db = driver.db;
    this.#options = options;
    this.#maxRetries = options.maxRetries ?? 8;
    const every = Math.floor(options.stateCheckpointEvery ?? 32);
    this.#stateCheckpointEvery = Number.isFinite(every) && every > 1 ? every : 1;
    this.#appends = new GroupCommitQueue(
      (batch) => this.#commitAppends(batch),
      options.maxBatch ?? 256,
      driver.appendConcurrency,
    );
    this.#decisions = new GroupCommitQueue(
      (batch) => this.#commitDecisions(batch),
      options.maxBatch ?? 256,
      driver.appendConcurrency,
    );
    // One step per session per batch: each is placed at the head it was evaluated against, which a second step of
    // the same session in the batch would see moved (it goes in the next batch and comes back stale_head).
    this.#steps = new GroupCommitQueue(
      (batch) => this.#commitSteps(batch),
      options.maxBatch ?? 256,
      driver.appendConcurrency,
      true,
    );
    const everyMs = options.checkpoints?.everyMs ?? 10_000;
    if (options.checkpoints && everyMs > 0) {
      this.#checkpointTimer = setInterval(() => this.#checkpointStale(everyMs), Math.max(50, Math.floor(everyMs / 2)));
      this.#checkpointTimer.unref();
    }
  }

  /** The Drizzle handle, for the operator read queries in src/store/admin/ (the only other user of it). */
  get database(): StoreDatabase {
    return this.#db;
  }

  async migrate(): Promise<void> {
    try {
      await this.#d.migrate();
    } catch (err) {
      throw toStoreError(err, 'migrate');
    }
  }

  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    if (this.#checkpointTimer) clearInterval(this.#checkpointTimer);
    await this.#appends.idle();
    await this.#decisions.idle();
    await this.#steps.idle();
    await this.#checkpointStale(0);
    await this.flush();
    await this.#d.close();
  }

  #assertOpen(): void {
    if (this.#closed) throw new StoreError('unavailable', 'store is closed');
  }

  // ---------------------------------------------------------------- sessions

  async createSession(session: NewSession): Promise<void> {
    this.#assertOpen();
    const row = toSessionRow(session);
    try {
      await this.#db.insert(sessions).values(row);
    } catch (err) {
      if (sqlStateOf(err) === '23505') throw new StoreError('conflict', `session ${row.id} already exists`);
      throw toStoreError(err, 'createSession');
    }
  }

  /**
   * The row with its state as of the chain's head: the last whole state plus the changes the entries after it
   * carry, read in one statement (one snapshot) with the head they bring it to (`stateHead`).
   */
  async getSession(id: string): Promise<SessionRecord | null> {
    this.#assertOpen();
    let rows: Record<string, unknown>[];
    try {
      rows = await this.#d.query(
        `select s.id, s.tenant_id, s.agent_id, s.key_id, s.hello_jcs, s.intent_jcs, s.state_jcs, s.parent_session_id, s.created_at, s.closed_at,
                h.seq as head_seq, h.head_hash,
                array(select e.state_delta_jcs from context_entries as e
                       where e.session_id = s.id and e.seq > s.state_seq and e.state_delta_jcs is not null order by e.seq) as deltas
           from sessions as s left join chain_heads as h on h.session_id = s.id
          where s.id = $1`,
        [id],
      );
    } catch (err) {
      throw toStoreError(err, 'getSession');
    }
    if (rows.length === 0) return null;
    const r = rows[0];
    let state = parseJcs(String(r.state_jcs));
    try {
      for (const delta of r.deltas as string[]) state = applyStatePatch(state, JSON.parse(delta)) as Json;
    } catch (err) {
      throw new StoreError(
        'unavailable',
        `session ${id}: a stored state change does not apply: ${err instanceof Error ? err.message : String(err)}`,
      );
    }
    const date = (v: unknown): Date => (v instanceof Date ? v : new Date(String(v)));
    return {
      id: String(r.id),
      tenantId: r.tenant_id === null ? null : String(r.tenant_id),
      agentId: String(r.agent_id),
      keyId: r.key_id === null ? null : String(r.key_id),
      hello: parseJcs(String(r.hello_jcs)),
      intent: parseJcs(String(r.intent_jcs)),
      state,
      parentSessionId: r.parent_session_id === null ? null : String(r.parent_session_id),
      createdAt: date(r.created_at),
      closedAt: r.closed_at === null ? null : date(r.closed_at),
      stateHead:
        r.head_hash === null || r.head_hash === undefined
          ? null
          : { seq: Number(r.head_seq), entryHash: String(r.head_hash) },
    };
  }

  async updateSessionState(
    id: string,
    patch: Partial<Pick<SessionRecord, 'intent' | 'state' | 'keyId' | 'hello'>>,
  ): Promise<void> {
    this.#assertOpen();
    const set: PgUpdateSetSource<typeof sessions> = {};
    if (patch.intent !== undefined) set.intentJcs = jcsOf(patch.intent, 'intent');
    if (patch.state !== undefined) {
      set.stateJcs = stateTextOf(patch.state);
      // The state as of the chain's head now: entries appended before it carry no change for it.
      set.stateSeq = sql`coalesce((select ${chainHeads.seq} from ${chainHeads} where ${chainHeads.sessionId} = ${id}), -1)`;
    }
    if (patch.hello !== undefined) set.helloJcs = jcsOf(patch.hello, 'hello');
    if (patch.keyId !== undefined) set.keyId = patch.keyId;
    if (Object.keys(set).length === 0) return;
    let updated: { id: string }[];
    try {
      updated = await this.#db.update(sessions).set(set).where(eq(sessions.id, id)).returning({ id: sessions.id });
    } catch (err) {
      throw toStoreError(err, 'updateSessionState');
    }
    if (updated.length === 0) throw new StoreError('not_found', `no session ${id}`);
  }

  async closeSession(id: string, at: Date): Promise<void> {
    this.#assertOpen();
    let found: { closedAt: Date | null }[];
    try {
      await this.#db
        .update(sessions)
        .set({ closedAt: at })
        .where(and(eq(sessions.id, id), sql`${sessions.closedAt} is null`));
      found = await this.#db.select({ closedAt: sessions.closedAt }).from(sessions).where(eq(sessions.id, id));
    } catch (err) {
      throw toStoreError(err, 'closeSession');
    }
    if (found.length === 0) throw new StoreError('not_found', `no session ${id}`);
    // A closed chain gets a final signed head, so a later truncation or rewrite is detectable. The head
    // is read from the database: appends the caller awaited are committed (no global queue wait, which
    // could starve under load).
    if (this.#options.checkpoints) await this.checkpoint(id);
  }

  // ---------------------------------------------------------------- audit chain

  appendContextEntry(sessionId: string, entry: NewContextEntry): Promise<AppendedEntry> {
    try {
      this.#assertOpen();
      requireId(sessionId, 'session id');
      return this.#appends.enqueue(sessionId, prepareAppend(entry)).then((appended) => {
        this.#afterAppend(sessionId, appended);
        return appended;
      });
    } catch (err) {
      return Promise.reject(err);
    }
  }

  /**
   * One transaction for the whole batch; retried as a whole on serialization failures and deadlocks.
   * Hand-written SQL with one array parameter per column (unnest): three statements whatever the batch
   * size, and none of the per-value query building that dominated the CPU profile of this path.
   */
  async #commitAppends(batch: QueuedItem<PreparedAppend, AppendedEntry>[]): Promise<(AppendedEntry | Error)[]> {
    const ids = [...new Set(batch.map((b) => b.key))].sort();
    return this.#retrying('appendContextEntry', () =>
      this.#d.transaction(async (query) => {
        const heads = await lockChainHeads(query, ids);
        const cols = new EntryColumns();
        const outcomes = batch.map((item): AppendedEntry | Error => {
          const head = heads.get(item.key);
          if (!head) return new StoreError('unavailable', `chain head for ${item.key} was not returned`);
          if (head.pruned) return new StoreError('conflict', `session ${item.key} was pruned; its chain is closed`);
          return cols.add(item.key, head, item.value);
        });
        await writeEntries(query, cols, heads);
        return outcomes;
      }),
    );
  }

  /** A batch transaction, retried as a whole on serialization failures and deadlocks. */
  async #retrying<T>(what: string, work: () => Promise<T>): Promise<T> {
    for (let attempt = 0; ; attempt++) {
      try {
        return await work();
      } catch (err) {
        if (isRetryableConflict(err) && attempt < this.#maxRetries) {
          await sleep(Math.random() * Math.min(50, 2 ** attempt));
          continue;
        }
        throw toStoreError(err, what);
      }
    }
  }

  commitStep(sessionId: string, step: StepCommit): Promise<StepCommitOutcome> {
    try {
      this.#assertOpen();
      requireId(sessionId, 'session id');
      return this.#steps.enqueue(sessionId, prepareStep(step, this.#stateCheckpointEvery)).then(async (outcome) => {
        this.#purgeExpiredReplayKeys();
        if (outcome.status !== 'committed') return outcome;
        this.#afterAppend(sessionId, outcome.appended);
        // A sealed chain gets a final signed head at once, so a later truncation or rewrite is detectable.
        if (step.session.closedAt !== undefined && this.#options.checkpoints) {
          this.#uncheckpointed.delete(sessionId);
          await this.#writeCheckpoint(sessionId, outcome.appended.seq, outcome.appended.entryHash);
        }
        return outcome;
      });
    } catch (err) {
      return Promise.reject(err);
    }
  }

  /**
   * Group commit of whole steps: replay keys, entries with their decisions, head moves and session rows of the
   * batch in one transaction of two statements, whatever the batch size, sent in one round trip. A step whose head
   * moved writes nothing; one whose key is a live duplicate writes no entry (the keys it brought fresh stay
   * recorded, §10.3); the others commit.
   */
  async #commitSteps(batch: QueuedItem<PreparedStep, StepCommitOutcome>[]): Promise<(StepCommitOutcome | Error)[]> {
    try {
      return await this.#commitStepsOnce(batch);
    } catch (err) {
      const settled = await this.#settleInDoubt(batch).catch(() => null);
      if (!settled) throw err;
      return settled.map((outcome) => outcome ?? toStoreError(err, 'commitStep'));
    }
  }

  /**
   * A connection lost while COMMIT was under way leaves the outcome in doubt: the transaction may have committed.
   * Look before reporting a failure, so the agent is not told "denied, not recorded" about a step the chain holds
   * with another decision. Each step can only have landed at its expected head, with the hash it was signed with.
   * Null when nothing of the batch landed (then nothing did: the batch was one transaction).
   */
  async #settleInDoubt(
    batch: QueuedItem<PreparedStep, StepCommitOutcome>[],
  ): Promise<(StepCommitOutcome | null)[] | null> {
    const placed = batch.map((item) => {
      const { seq, headHash } = item.value.expected;
      return {
        sessionId: item.key,
        seq: seq + 1,
        previousHash: headHash,
        entryHash: entryHashOf(item.value.append.contentJcs, headHash),
      };
    });
    const rows = await this.#d.query(
      `select e.session_id, e.seq from context_entries as e
         join unnest($1::text[], $2::integer[], $3::text[]) as v(session_id, seq, entry_hash)
           on e.session_id = v.session_id and e.seq = v.seq and e.entry_hash = v.entry_hash`,
      [placed.map((p) => p.sessionId), placed.map((p) => p.seq), placed.map((p) => p.entryHash)],
    );
    if (rows.length === 0) return null;
    const landed = new Set(rows.map((r) => `${String(r.session_id)}#${Number(r.seq)}`));
    return placed.map((p) =>
      landed.has(`${p.sessionId}#${p.seq}`)
        ? { status: 'committed', appended: { seq: p.seq, entryHash: p.entryHash, previousHash: p.previousHash } }
        : null,
    );
  }

  async #commitStepsOnce(batch: QueuedItem<PreparedStep, StepCommitOutcome>[]): Promise<(StepCommitOutcome | Error)[]> {
    // The queue batches one step per session; sorted ids make every batch lock heads in the same order.
    const ids = batch.map((item) => item.key).sort();
    // Each step can only land at the head it expects, so its entry (and hash) is known before the transaction.
    const cols = new EntryColumns();
    const placed = batch.map((item) => cols.add(item.key, expectedHeadOf(item.value), item.value.append, item.value));
    const writes = stepWriteParams(batch, cols);
    return this.#retrying('commitStep', () =>
      this.#d.transaction(async (query) => {
        const [heads, rows] = await Promise.all([
          lockChainHeads(query, ids),
          query(STEP_WRITES, writes, { last: true }),
        ]);
        const committed = new Set<string>();
        const fresh = new Set<string>();
        for (const r of rows) {
          if (r.kind === null) committed.add(String(r.session_id));
          else fresh.add(`${String(r.session_id)}\u0000${String(r.kind)}\u0000${String(r.value)}`);
        }
        return batch.map((item, i): StepCommitOutcome | Error => {
          if (committed.has(item.key)) return { status: 'committed', appended: placed[i] };
          const head = heads.get(item.key);
          const p = item.value;
          if (!head) return new StoreError('unavailable', `chain head for ${item.key} was not returned`);
          if (head.pruned) return new StoreError('conflict', `session ${item.key} was pruned; its chain is closed`);
          if (head.seq !== p.expected.seq || head.headHash !== p.expected.headHash) {
            return {
              status: 'stale_head',
              head: head.headHash === null ? null : { seq: head.seq, entryHash: head.headHash },
            };
          }
          const taken = p.keys.find((k) => !fresh.has(`${item.key}\u0000${k.kind}\u0000${k.value}`));
          // Placed at its head with every key fresh, the statement would have written it.
          return taken
            ? { status: 'replay', kind: taken.kind }
            : new StoreError('unavailable', `step for ${item.key} was not written`);
        });
      }),
    );
  }

  #afterAppend(sessionId: string, appended: AppendedEntry): void {
    const policy = this.#options.checkpoints;
    if (!policy) return;
    const every = policy.everyEntries ?? 64;
    if (every > 0 && (appended.seq + 1) % every === 0) {
      this.#uncheckpointed.delete(sessionId);
      this.#track(this.#writeCheckpoint(sessionId, appended.seq, appended.entryHash));
    } else if ((policy.everyMs ?? 10_000) <= 0) {
      // No time-based checkpoints: nothing to remember (the map would otherwise grow with every session).
    } else if (!this.#uncheckpointed.has(sessionId)) {
      this.#uncheckpointed.set(sessionId, { seq: appended.seq, headHash: appended.entryHash, since: Date.now() });
    } else {
      const u = this.#uncheckpointed.get(sessionId)!;
      u.seq = appended.seq;
      u.headHash = appended.entryHash;
    }
  }

  async recordDecision(
    sessionId: string,
    seq: number,
    decision: { result: Json; bundleRevision: string | null; evaluationDurationMs: number },
  ): Promise<void> {
    this.#assertOpen();
    const resultJcs = jcsOf(decision.result, 'result');
    if (!Number.isFinite(decision.evaluationDurationMs))
      throw new StoreError('invalid_input', 'evaluationDurationMs must be a finite number');
    if (!Number.isInteger(seq) || seq < 0) throw new StoreError('invalid_input', 'seq must be a non-negative integer');
    const outcome = await this.#decisions.enqueue(`${sessionId}#${seq}`, {
      sessionId,
      seq,
      resultJcs,
      bundleRevision: decision.bundleRevision ?? null,
      evaluationDurationMs: decision.evaluationDurationMs,
    });
    if (outcome === 'recorded') return;
    // Decisions are write-once: what was delivered to the agent cannot be replaced afterwards.
    throw outcome === 'exists'
      ? new StoreError('conflict', `a decision is already recorded for ${sessionId}#${seq}`)
      : new StoreError('not_found', `no entry ${sessionId}#${seq}`);
  }

  /** Group commit for decisions too: one UPDATE … FROM unnest(…) per batch, itself atomic. */
  async #commitDecisions(all: QueuedItem<PendingDecision, DecisionOutcome>[]): Promise<DecisionOutcome[]> {
    // The same entry twice in one batch: only the first may write (an UPDATE … FROM would pick either).
    const firstOf = new Map<string, number>();
    all.forEach((b, i) => firstOf.has(b.key) || firstOf.set(b.key, i));
    const batch = all.filter((b, i) => firstOf.get(b.key) === i);
    let updated: Set<string>;
    let existing: Set<string>;
    const keyOf = (r: Record<string, unknown>) => `${String(r.session_id)}#${Number(r.seq)}`;
    try {
      const rows = await this.#d.query(
        `update context_entries as e
            set result_jcs = v.result_jcs, bundle_revision = v.bundle_revision, evaluation_duration_ms = v.ms
           from unnest($1::text[], $2::integer[], $3::text[], $4::text[], $5::double precision[]) as v(session_id, seq, result_jcs, bundle_revision, ms)
          where e.session_id = v.session_id and e.seq = v.seq and e.result_jcs is null
         returning e.session_id, e.seq`,
        [
          batch.map((b) => b.value.sessionId),
          batch.map((b) => b.value.seq),
          batch.map((b) => b.value.resultJcs),
          batch.map((b) => b.value.bundleRevision),
          batch.map((b) => b.value.evaluationDurationMs),
        ],
      );
      updated = new Set(rows.map(keyOf));
      const missing = batch.filter((b) => !updated.has(b.key));
      existing = new Set();
      if (missing.length > 0) {
        const probe = await this.#d.query(
          `select e.session_id, e.seq from context_entries as e
             join unnest($1::text[], $2::integer[]) as v(session_id, seq) on e.session_id = v.session_id and e.seq = v.seq`,
          [missing.map((b) => b.value.sessionId), missing.map((b) => b.value.seq)],
        );
        existing = new Set(probe.map(keyOf));
      }
    } catch (err) {
      throw toStoreError(err, 'recordDecision');
    }
    return all.map((b, i) => {
      const outcome: DecisionOutcome = updated.has(b.key) ? 'recorded' : existing.has(b.key) ? 'exists' : 'missing';
      return outcome === 'recorded' && firstOf.get(b.key) !== i ? 'exists' : outcome;
    });
  }

  async getChainHead(sessionId: string): Promise<ChainHead | null> {
    const chain = await this.getChain(sessionId);
    return chain && chain.headHash !== null ? { seq: chain.seq, entryHash: chain.headHash } : null;
  }

  async getChain(sessionId: string): Promise<ChainInfo | null> {
    this.#assertOpen();
    try {
      const rows = await this.#db
        .select({
          sessionId: chainHeads.sessionId,
          seq: chainHeads.seq,
          headHash: chainHeads.headHash,
          prunedAt: chainHeads.prunedAt,
        })
        .from(chainHeads)
        .where(eq(chainHeads.sessionId, sessionId))
        .limit(1);
      return rows[0] ?? null;
    } catch (err) {
      throw toStoreError(err, 'getChain');
    }
  }

  async listChains(options: { afterSessionId?: string; limit?: number } = {}): Promise<ChainInfo[]> {
    this.#assertOpen();
    const limit = Math.min(Math.max(1, options.limit ?? 1000), MAX_PAGE);
    try {
      return await this.#db
        .select({
          sessionId: chainHeads.sessionId,
          seq: chainHeads.seq,
          headHash: chainHeads.headHash,
          prunedAt: chainHeads.prunedAt,
        })
        .from(chainHeads)
        .where(options.afterSessionId === undefined ? undefined : gt(chainHeads.sessionId, options.afterSessionId))
        .orderBy(asc(chainHeads.sessionId))
        .limit(limit);
    } catch (err) {
      throw toStoreError(err, 'listChains');
    }
  }

  async listContextEntries(
    sessionId: string,
    options: { afterSeq?: number; limit?: number } = {},
  ): Promise<ContextEntryRecord[]> {
    this.#assertOpen();
    const limit = Math.min(Math.max(1, options.limit ?? 1000), MAX_PAGE);
    let rows: EntryRow[];
    try {
      rows = await this.#db
        .select()
        .from(contextEntries)
        .where(and(eq(contextEntries.sessionId, sessionId), gt(contextEntries.seq, options.afterSeq ?? -1)))
        .orderBy(asc(contextEntries.seq))
        .limit(limit);
    } catch (err) {
      throw toStoreError(err, 'listContextEntries');
    }
    return rows.map(toEntryRecord);
  }

  // ---------------------------------------------------------------- checkpoints

  async listCheckpoints(scope: string): Promise<CheckpointRecord[]> {
    this.#assertOpen();
    try {
      return await this.#db
        .select({
          scope: checkpoints.scope,
          seq: checkpoints.seq,
          headHash: checkpoints.headHash,
          algorithm: checkpoints.algorithm,
          keyId: checkpoints.keyId,
          signature: checkpoints.signature,
          createdAt: checkpoints.createdAt,
        })
        .from(checkpoints)
        .where(eq(checkpoints.scope, scope))
        .orderBy(asc(checkpoints.seq), asc(checkpoints.id));
    } catch (err) {
      throw toStoreError(err, 'listCheckpoints');
    }
  }

  async checkpoint(sessionId: string): Promise<CheckpointRecord | null> {
    this.#assertOpen();
    const head = await this.getChain(sessionId);
    if (!this.#options.checkpoints || !head || head.headHash === null) return null;
    this.#uncheckpointed.delete(sessionId);
    return this.#writeCheckpoint(sessionId, head.seq, head.headHash);
  }

  async #writeCheckpoint(scope: string, seq: number, headHash: string): Promise<CheckpointRecord | null> {
    const policy = this.#options.checkpoints;
    if (!policy) return null;
    try {
      const signed = await signCheckpoint(policy.signer, policy.keyId, scope, seq, headHash);
      const rows = await this.#db
        .insert(checkpoints)
        .values(signed)
        .onConflictDoNothing()
        .returning({ createdAt: checkpoints.createdAt });
      return { ...signed, createdAt: rows[0]?.createdAt ?? new Date() };
    } catch (err) {
      throw toStoreError(err, 'checkpoint');
    }
  }

  async #checkpointStale(maxAgeMs: number): Promise<void> {
    const now = Date.now();
    const due = [...this.#uncheckpointed].filter(([, u]) => now - u.since >= maxAgeMs);
    for (const [scope, u] of due) {
      this.#uncheckpointed.delete(scope);
      this.#track(this.#writeCheckpoint(scope, u.seq, u.headHash));
    }
    await this.flush();
  }

  #track(work: Promise<unknown>): void {
    const p = work.catch((err: unknown) => this.#reportBackground(toStoreError(err, 'background work')));
    this.#background.add(p);
    void p.finally(() => this.#background.delete(p));
  }

  #reportBackground(err: StoreError): void {
    if (this.#options.onBackgroundError) this.#options.onBackgroundError(err);
    else process.stderr.write(`guardian store: ${err.message}\n`);
  }

  async flush(): Promise<void> {
    await this.#appends.idle();
    await this.#decisions.idle();
    await this.#steps.idle();
    while (this.#background.size > 0) await Promise.all([...this.#background]);
  }

  // ---------------------------------------------------------------- replay guard

  async rememberReplayKey(sessionId: string, kind: ReplayKeyKind, value: string, expiresAt: Date): Promise<boolean> {
    this.#assertOpen();
    if (kind !== 'request_id' && kind !== 'nonce')
      throw new StoreError('invalid_input', `unknown replay key kind ${String(kind)}`);
    requireId(value, kind);
    if (!(expiresAt instanceof Date) || Number.isNaN(expiresAt.getTime()))
      throw new StoreError('invalid_input', 'expiresAt must be a valid Date');
    const now = new Date();
    let rows: { v: string }[];
    try {
      // A fresh key inserts; an expired one is taken over; a live one matches nothing (ACS §10.3).
      rows = await this.#db
        .insert(replayKeys)
        .values({ sessionId, kind, value, expiresAt })
        .onConflictDoUpdate({
          target: [replayKeys.sessionId, replayKeys.kind, replayKeys.value],
          set: { expiresAt: sql`excluded.expires_at` },
          setWhere: sql`${replayKeys.expiresAt} <= ${now.toISOString()}::timestamptz`,
        })
        .returning({ v: replayKeys.value });
    } catch (err) {
      throw toStoreError(err, 'rememberReplayKey');
    }
    this.#purgeExpiredReplayKeys();
    return rows.length === 1;
  }

  /** At most once a minute, in the background: expired keys are dead weight (§10.3 only needs live ones). */
  #purgeExpiredReplayKeys(): void {
    const now = new Date();
    if (now.getTime() - this.#lastReplayPurge <= 60_000) return;
    this.#lastReplayPurge = now.getTime();
    this.#track(this.#db.delete(replayKeys).where(lt(replayKeys.expiresAt, now)));
  }

  // ---------------------------------------------------------------- pruning

  async pruneClosedSessions(before: Date): Promise<{ sessions: number; entries: number; skipped: string[] }> {
    this.#assertOpen();
    const closed = await this.#db
      .select({ id: sessions.id })
      .from(sessions)
      .where(and(isNotNull(sessions.closedAt), lt(sessions.closedAt, before)))
      .orderBy(asc(sessions.id));
    let pruned = 0;
    let entries = 0;
    const skipped: string[] = [];
    for (const { id } of closed) {
      const head = await this.getChain(id);
      if (head && head.headHash !== null && !head.prunedAt) {
        // Keep a signed head so `audit verify` can still prove what the deleted chain ended with.
        const cps = await this.listCheckpoints(id);
        const covered = cps.some((c) => c.seq === head.seq && c.headHash === head.headHash);
        if (!covered && !(await this.checkpoint(id))) {
          skipped.push(id);
          continue;
        }
      }
      try {
        await this.#d.transaction(async (query) => {
          const deleted = await query('delete from context_entries where session_id = $1 returning seq', [id]);
          entries += deleted.length;
          await query('delete from replay_keys where session_id = $1', [id]);
          await query('delete from sessions where id = $1', [id]);
          await query('update chain_heads set pruned_at = now() where session_id = $1', [id]);
        });
      } catch (err) {
        throw toStoreError(err, 'pruneClosedSessions');
      }
      pruned++;
    }
    return { sessions: pruned, entries, skipped };
  }

  // ---------------------------------------------------------------- policy bundles

  async putPolicyBundle(bundle: Omit<PolicyBundleRecord, 'createdAt'>): Promise<void> {
    this.#assertOpen();
    if (!HEX64.test(bundle.sha256))
      throw new StoreError('invalid_input', 'bundle sha256 must be 64 lowercase hex digits');
    try {
      // Bytes travel as base64 text: PGlite's bytea parameter and row codecs take hundreds of ms per MB on the
      // event loop (measured by the lifecycle work), base64 a few tens.
      await this.#d.query(
        `insert into policy_bundles (sha256, revision, manifest_jcs, bytes, source)
         values ($1, $2, $3, decode($4, 'base64'), $5) on conflict do nothing`,
        [
          bundle.sha256,
          bundle.revision,
          jcsOf(bundle.manifest, 'manifest'),
          Buffer.from(bundle.bytes).toString('base64'),
          bundle.source ?? null,
        ],
      );
    } catch (err) {
      throw toStoreError(err, 'putPolicyBundle');
    }
  }

  async getPolicyBundle(sha256: string): Promise<PolicyBundleRecord | null> {
    this.#assertOpen();
    let rows: Record<string, unknown>[];
    try {
      rows = await this.#d.query(
        `select sha256, revision, manifest_jcs, encode(bytes, 'base64') as bytes_b64, source, created_at from policy_bundles where sha256 = $1`,
        [sha256],
      );
    } catch (err) {
      throw toStoreError(err, 'getPolicyBundle');
    }
    if (!rows.length) return null;
    const r = rows[0];
    return {
      sha256: String(r.sha256),
      revision: String(r.revision),
      manifest: parseJcs(String(r.manifest_jcs)),
      // encode(…, 'base64') wraps lines every 76 characters; Buffer.from skips the newlines.
      bytes: new Uint8Array(Buffer.from(String(r.bytes_b64), 'base64')),
      source: r.source === null ? null : String(r.source),
      createdAt: r.created_at instanceof Date ? r.created_at : new Date(String(r.created_at)),
    };
  }

  async activatePolicyBundle(sha256: string, activatedBy: string | null = null): Promise<void> {
    this.#assertOpen();
    const bundle = await this.#db
      .select({ revision: policyBundles.revision })
      .from(policyBundles)
      .where(eq(policyBundles.sha256, sha256))
      .limit(1);
    if (!bundle.length) throw new StoreError('not_found', `no policy bundle ${sha256}`);
    await this.#db
      .insert(policyActivations)
      .values({ bundleSha256: sha256, revision: bundle[0].revision, activatedBy });
  }

  async getActivePolicyBundle(): Promise<PolicyActivationRecord | null> {
    this.#assertOpen();
    const rows = await this.#db
      .select({
        bundleSha256: policyActivations.bundleSha256,
        revision: policyActivations.revision,
        activatedBy: policyActivations.activatedBy,
        activatedAt: policyActivations.activatedAt,
      })
      .from(policyActivations)
      .orderBy(desc(policyActivations.id))
      .limit(1);
    return rows[0] ?? null;
  }

  async query(sqlText: string, params: unknown[] = []): Promise<Record<string, unknown>[]> {
    this.#assertOpen();
    return this.#d.query(sqlText, params);
  }
}
