// The GuardianStore over Drizzle, written once for both drivers (src/store/pglite, src/store/postgres).
import { and, asc, desc, eq, gt, isNotNull, lt, sql } from 'drizzle-orm';
import type { PgDatabase, PgQueryResultHKT } from 'drizzle-orm/pg-core';
import { canonicalJson, computeEntryHash, sha256Hex, type ContextEntryContent } from '../chain/index.ts';
import { type CheckpointPolicy, signCheckpoint } from './checkpoints.ts';
import { StoreError, isRetryableConflict, sqlStateOf, toStoreError } from './errors.ts';
import { GroupCommitQueue, type QueuedItem } from './group-commit.ts';
import { chainHeads, checkpoints, contextEntries, policyActivations, policyBundles, replayKeys, sessions } from './schema.ts';
import type {
  AppendedEntry, ChainInfo, CheckpointRecord, ContextEntryRecord, DurableStore, Json, NewContextEntry,
  PolicyActivationRecord, PolicyBundleRecord, ReplayKeyKind, SessionRecord,
} from './types.ts';

export type StoreDatabase = PgDatabase<PgQueryResultHKT>;

/** Parameterised SQL on one connection, rows as plain objects. */
export type RawQuery = (sqlText: string, params?: unknown[]) => Promise<Record<string, unknown>[]>;

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
    throw new StoreError('invalid_input', `${what} is not a JSON value: ${err instanceof Error ? err.message : String(err)}`);
  }
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
  const paramsJcs = jcsOf(entry.params, 'params');
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
  const contentJcs = jcsOf(content, 'entry content');
  return {
    content: content as ContextEntryContent,
    contentJcs,
    paramsJcs,
    provenanceSummaryJcs: content.provenance_summary === undefined ? null : canonicalJson(content.provenance_summary),
  };
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

function toSessionRecord(row: typeof sessions.$inferSelect): SessionRecord {
  return {
    id: row.id,
    tenantId: row.tenantId,
    agentId: row.agentId,
    keyId: row.keyId,
    hello: parseJcs(row.helloJcs),
    intent: parseJcs(row.intentJcs),
    state: parseJcs(row.stateJcs),
    parentSessionId: row.parentSessionId,
    createdAt: row.createdAt,
    closedAt: row.closedAt,
  };
}

export class DrizzleGuardianStore implements DurableStore {
  readonly driver: 'pglite' | 'postgres';
  readonly #d: StoreDriver;
  readonly #db: StoreDatabase;
  readonly #appends: GroupCommitQueue<PreparedAppend, AppendedEntry>;
  readonly #decisions: GroupCommitQueue<PendingDecision, DecisionOutcome>;
  readonly #options: StoreOptions;
  readonly #maxRetries: number;
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
    this.#appends = new GroupCommitQueue((batch) => this.#commitAppends(batch), options.maxBatch ?? 256, driver.appendConcurrency);
    this.#decisions = new GroupCommitQueue((batch) => this.#commitDecisions(batch), options.maxBatch ?? 256, driver.appendConcurrency);
    const everyMs = options.checkpoints?.everyMs ?? 10_000;
    if (options.checkpoints && everyMs > 0) {
      this.#checkpointTimer = setInterval(() => this.#checkpointStale(everyMs), Math.max(50, Math.floor(everyMs / 2)));
      this.#checkpointTimer.unref();
    }
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
    await this.#checkpointStale(0);
    await this.flush();
    await this.#d.close();
  }

  #assertOpen(): void {
    if (this.#closed) throw new StoreError('unavailable', 'store is closed');
  }

  // ---------------------------------------------------------------- sessions

  async createSession(session: Omit<SessionRecord, 'createdAt' | 'closedAt'> & { createdAt?: Date }): Promise<void> {
    this.#assertOpen();
    const row = {
      id: requireId(session.id, 'session id'),
      tenantId: session.tenantId ?? null,
      agentId: requireId(session.agentId, 'agent id'),
      keyId: session.keyId ?? null,
      helloJcs: jcsOf(session.hello ?? null, 'hello'),
      intentJcs: jcsOf(session.intent ?? null, 'intent'),
      stateJcs: jcsOf(session.state ?? null, 'state'),
      parentSessionId: session.parentSessionId ?? null,
      ...(session.createdAt ? { createdAt: session.createdAt } : {}),
    };
    try {
      await this.#db.insert(sessions).values(row);
    } catch (err) {
      if (sqlStateOf(err) === '23505') throw new StoreError('conflict', `session ${row.id} already exists`);
      throw toStoreError(err, 'createSession');
    }
  }

  async getSession(id: string): Promise<SessionRecord | null> {
    this.#assertOpen();
    try {
      const rows = await this.#db.select().from(sessions).where(eq(sessions.id, id)).limit(1);
      return rows.length ? toSessionRecord(rows[0]) : null;
    } catch (err) {
      throw toStoreError(err, 'getSession');
    }
  }

  async updateSessionState(id: string, patch: Partial<Pick<SessionRecord, 'intent' | 'state' | 'keyId' | 'hello'>>): Promise<void> {
    this.#assertOpen();
    const set: Partial<typeof sessions.$inferInsert> = {};
    if (patch.intent !== undefined) set.intentJcs = jcsOf(patch.intent, 'intent');
    if (patch.state !== undefined) set.stateJcs = jcsOf(patch.state, 'state');
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
      await this.#db.update(sessions).set({ closedAt: at }).where(and(eq(sessions.id, id), sql`${sessions.closedAt} is null`));
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
    // Lock head rows in one global order (session id) so concurrent batches cannot deadlock.
    const ids = [...new Set(batch.map((b) => b.key))].sort();
    for (let attempt = 0; ; attempt++) {
      try {
        return await this.#d.transaction(async (query) => {
          // Upsert = create the head on a session's first entry AND row-lock it, in one statement: two
          // writers can never both see "no head" (the first-append race of a bare SELECT … FOR UPDATE).
          // unnest keeps the array order, so rows are locked in session-id order.
          const heads = await query(
            `insert into chain_heads (session_id, seq, head_hash)
               select id, -1, null from unnest($1::text[]) with ordinality as t(id, ord) order by ord
             on conflict (session_id) do update set seq = chain_heads.seq
             returning session_id, seq, head_hash, pruned_at`,
            [ids],
          );
          const state = new Map(heads.map((h) => [String(h.session_id), {
            seq: Number(h.seq), headHash: h.head_hash === null ? null : String(h.head_hash), pruned: h.pruned_at !== null, changed: false,
          }]));
          const outcomes: (AppendedEntry | Error)[] = [];
          const cols = {
            sessionId: [] as string[], seq: [] as number[], entryId: [] as string[], stepId: [] as string[], stepType: [] as string[],
            requestHash: [] as (string | null)[], timestamp: [] as (string | null)[], provenance: [] as (string | null)[],
            content: [] as string[], previousHash: [] as (string | null)[], entryHash: [] as string[], params: [] as string[],
          };
          for (const item of batch) {
            const head = state.get(item.key);
            if (!head) throw new StoreError('unavailable', `chain head for ${item.key} was not returned`);
            if (head.pruned) {
              outcomes.push(new StoreError('conflict', `session ${item.key} was pruned; its chain is closed`));
              continue;
            }
            const p = item.value;
            const seq = head.seq + 1;
            const previousHash = head.headHash;
            const entryHash = computeEntryHash(p.content, previousHash);
            cols.sessionId.push(item.key); cols.seq.push(seq); cols.entryId.push(p.content.entry_id); cols.stepId.push(p.content.step_id);
            cols.stepType.push(p.content.step_type); cols.requestHash.push(p.content.request_hash ?? null); cols.timestamp.push(p.content.timestamp ?? null);
            cols.provenance.push(p.provenanceSummaryJcs); cols.content.push(p.contentJcs); cols.previousHash.push(previousHash);
            cols.entryHash.push(entryHash); cols.params.push(p.paramsJcs);
            Object.assign(head, { seq, headHash: entryHash, changed: true });
            outcomes.push({ seq, entryHash, previousHash });
          }
          if (cols.sessionId.length > 0) {
            await query(
              `insert into context_entries (session_id, seq, entry_id, step_id, step_type, request_hash, timestamp,
                                            provenance_summary_jcs, content_jcs, previous_hash, entry_hash, params_jcs)
               select * from unnest($1::text[], $2::integer[], $3::text[], $4::text[], $5::text[], $6::text[], $7::text[],
                                    $8::text[], $9::text[], $10::text[], $11::text[], $12::text[])`,
              [cols.sessionId, cols.seq, cols.entryId, cols.stepId, cols.stepType, cols.requestHash, cols.timestamp,
                cols.provenance, cols.content, cols.previousHash, cols.entryHash, cols.params],
            );
            const moved = [...state].filter(([, h]) => h.changed);
            await query(
              `update chain_heads as h set seq = v.seq, head_hash = v.head_hash, updated_at = now()
                 from unnest($1::text[], $2::integer[], $3::text[]) as v(session_id, seq, head_hash)
                where h.session_id = v.session_id`,
              [moved.map(([id]) => id), moved.map(([, h]) => h.seq), moved.map(([, h]) => h.headHash)],
            );
          }
          return outcomes;
        });
      } catch (err) {
        if (isRetryableConflict(err) && attempt < this.#maxRetries) {
          await sleep(Math.random() * Math.min(50, 2 ** attempt));
          continue;
        }
        throw toStoreError(err, 'appendContextEntry');
      }
    }
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

  async recordDecision(sessionId: string, seq: number, decision: { result: Json; bundleRevision: string | null; evaluationDurationMs: number }): Promise<void> {
    this.#assertOpen();
    const resultJcs = jcsOf(decision.result, 'result');
    if (!Number.isFinite(decision.evaluationDurationMs)) throw new StoreError('invalid_input', 'evaluationDurationMs must be a finite number');
    if (!Number.isInteger(seq) || seq < 0) throw new StoreError('invalid_input', 'seq must be a non-negative integer');
    const outcome = await this.#decisions.enqueue(`${sessionId}#${seq}`, {
      sessionId, seq, resultJcs, bundleRevision: decision.bundleRevision ?? null, evaluationDurationMs: decision.evaluationDurationMs,
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
        [batch.map((b) => b.value.sessionId), batch.map((b) => b.value.seq), batch.map((b) => b.value.resultJcs),
          batch.map((b) => b.value.bundleRevision), batch.map((b) => b.value.evaluationDurationMs)],
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

  async getChainHead(sessionId: string): Promise<{ seq: number; entryHash: string } | null> {
    const chain = await this.getChain(sessionId);
    return chain && chain.headHash !== null ? { seq: chain.seq, entryHash: chain.headHash } : null;
  }

  async getChain(sessionId: string): Promise<ChainInfo | null> {
    this.#assertOpen();
    try {
      const rows = await this.#db.select({ sessionId: chainHeads.sessionId, seq: chainHeads.seq, headHash: chainHeads.headHash, prunedAt: chainHeads.prunedAt })
        .from(chainHeads).where(eq(chainHeads.sessionId, sessionId)).limit(1);
      return rows[0] ?? null;
    } catch (err) {
      throw toStoreError(err, 'getChain');
    }
  }

  async listChains(options: { afterSessionId?: string; limit?: number } = {}): Promise<ChainInfo[]> {
    this.#assertOpen();
    const limit = Math.min(Math.max(1, options.limit ?? 1000), MAX_PAGE);
    try {
      return await this.#db.select({ sessionId: chainHeads.sessionId, seq: chainHeads.seq, headHash: chainHeads.headHash, prunedAt: chainHeads.prunedAt })
        .from(chainHeads)
        .where(options.afterSessionId === undefined ? undefined : gt(chainHeads.sessionId, options.afterSessionId))
        .orderBy(asc(chainHeads.sessionId)).limit(limit);
    } catch (err) {
      throw toStoreError(err, 'listChains');
    }
  }

  async listContextEntries(sessionId: string, options: { afterSeq?: number; limit?: number } = {}): Promise<ContextEntryRecord[]> {
    this.#assertOpen();
    const limit = Math.min(Math.max(1, options.limit ?? 1000), MAX_PAGE);
    let rows: EntryRow[];
    try {
      rows = await this.#db.select().from(contextEntries)
        .where(and(eq(contextEntries.sessionId, sessionId), gt(contextEntries.seq, options.afterSeq ?? -1)))
        .orderBy(asc(contextEntries.seq)).limit(limit);
    } catch (err) {
      throw toStoreError(err, 'listContextEntries');
    }
    return rows.map(toEntryRecord);
  }

  // ---------------------------------------------------------------- checkpoints

  async listCheckpoints(scope: string): Promise<CheckpointRecord[]> {
    this.#assertOpen();
    try {
      return await this.#db.select({
        scope: checkpoints.scope, seq: checkpoints.seq, headHash: checkpoints.headHash, algorithm: checkpoints.algorithm,
        keyId: checkpoints.keyId, signature: checkpoints.signature, createdAt: checkpoints.createdAt,
      }).from(checkpoints).where(eq(checkpoints.scope, scope)).orderBy(asc(checkpoints.seq), asc(checkpoints.id));
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
      const rows = await this.#db.insert(checkpoints).values(signed).onConflictDoNothing().returning({ createdAt: checkpoints.createdAt });
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
    while (this.#background.size > 0) await Promise.all([...this.#background]);
  }

  // ---------------------------------------------------------------- replay guard

  async rememberReplayKey(sessionId: string, kind: ReplayKeyKind, value: string, expiresAt: Date): Promise<boolean> {
    this.#assertOpen();
    if (kind !== 'request_id' && kind !== 'nonce') throw new StoreError('invalid_input', `unknown replay key kind ${String(kind)}`);
    requireId(value, kind);
    if (!(expiresAt instanceof Date) || Number.isNaN(expiresAt.getTime())) throw new StoreError('invalid_input', 'expiresAt must be a valid Date');
    const now = new Date();
    let rows: { v: string }[];
    try {
      // A fresh key inserts; an expired one is taken over; a live one matches nothing (ACS §10.3).
      rows = await this.#db.insert(replayKeys).values({ sessionId, kind, value, expiresAt })
        .onConflictDoUpdate({
          target: [replayKeys.sessionId, replayKeys.kind, replayKeys.value],
          set: { expiresAt: sql`excluded.expires_at` },
          setWhere: sql`${replayKeys.expiresAt} <= ${now.toISOString()}::timestamptz`,
        })
        .returning({ v: replayKeys.value });
    } catch (err) {
      throw toStoreError(err, 'rememberReplayKey');
    }
    if (now.getTime() - this.#lastReplayPurge > 60_000) {
      this.#lastReplayPurge = now.getTime();
      this.#track(this.#db.delete(replayKeys).where(lt(replayKeys.expiresAt, now)));
    }
    return rows.length === 1;
  }

  // ---------------------------------------------------------------- pruning

  async pruneClosedSessions(before: Date): Promise<{ sessions: number; entries: number; skipped: string[] }> {
    this.#assertOpen();
    const closed = await this.#db.select({ id: sessions.id }).from(sessions)
      .where(and(isNotNull(sessions.closedAt), lt(sessions.closedAt, before))).orderBy(asc(sessions.id));
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
    if (!HEX64.test(bundle.sha256)) throw new StoreError('invalid_input', 'bundle sha256 must be 64 lowercase hex digits');
    try {
      await this.#db.insert(policyBundles).values({
        sha256: bundle.sha256, revision: bundle.revision, manifestJcs: jcsOf(bundle.manifest, 'manifest'),
        bytes: bundle.bytes, source: bundle.source ?? null,
      }).onConflictDoNothing();
    } catch (err) {
      throw toStoreError(err, 'putPolicyBundle');
    }
  }

  async getPolicyBundle(sha256: string): Promise<PolicyBundleRecord | null> {
    this.#assertOpen();
    const rows = await this.#db.select().from(policyBundles).where(eq(policyBundles.sha256, sha256)).limit(1);
    if (!rows.length) return null;
    const r = rows[0];
    return { sha256: r.sha256, revision: r.revision, manifest: parseJcs(r.manifestJcs), bytes: new Uint8Array(r.bytes), source: r.source, createdAt: r.createdAt };
  }

  async activatePolicyBundle(sha256: string, activatedBy: string | null = null): Promise<void> {
    this.#assertOpen();
    const bundle = await this.#db.select({ revision: policyBundles.revision }).from(policyBundles).where(eq(policyBundles.sha256, sha256)).limit(1);
    if (!bundle.length) throw new StoreError('not_found', `no policy bundle ${sha256}`);
    await this.#db.insert(policyActivations).values({ bundleSha256: sha256, revision: bundle[0].revision, activatedBy });
  }

  async getActivePolicyBundle(): Promise<PolicyActivationRecord | null> {
    this.#assertOpen();
    const rows = await this.#db.select({
      bundleSha256: policyActivations.bundleSha256, revision: policyActivations.revision,
      activatedBy: policyActivations.activatedBy, activatedAt: policyActivations.activatedAt,
    }).from(policyActivations).orderBy(desc(policyActivations.id)).limit(1);
    return rows[0] ?? null;
  }

  async query(sqlText: string, params: unknown[] = []): Promise<Record<string, unknown>[]> {
    this.#assertOpen();
    return this.#d.query(sqlText, params);
  }
}
