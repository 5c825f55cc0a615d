// Session rows: created at handshake or by a subagent step, read with their state as of the chain's head, and
// the replay guard's keys (ACS §10.3).
import { and, eq, lt, sql } from 'drizzle-orm';
import type { PgUpdateSetSource } from 'drizzle-orm/pg-core';
import type { StoreDatabase, StoreDriver } from './driver.ts';
import { StoreError, sqlStateOf, toStoreError } from './errors.ts';
import { type NewSession, requireReplayKey, toSessionRow } from './prepare.ts';
import { chainHeads, contextEntries, replayKeys, sessions } from './schema.ts';
import { applyStatePatch } from './state-delta.ts';
import type { Json } from '../json.ts';
import type { ReplayKeyKind, SessionRecord } from './types.ts';
import { asDate, isValidDate, jcsOf, parseJcs, stateTextOf, textOrNull } from './values.ts';

export class SessionRows {
  constructor(
    private readonly driver: StoreDriver,
    private readonly db: StoreDatabase = driver.db,
  ) {}

  async create(session: NewSession): Promise<void> {
    const row = toSessionRow(session);
    try {
      await this.db.insert(sessions).values(row);
    } catch (err) {
      if (sqlStateOf(err) === '23505') throw new StoreError('conflict', `session ${row.id} already exists`);
      throw toStoreError(err, 'createSession');
    }
  }

  /**
   * The row with its state as of the chain's head: the last whole state plus the changes the entries after it
   * carry, read in one statement (one snapshot) with the head they bring it to (`stateHead`).
   */
  async get(id: string): Promise<SessionRecord | null> {
    const s = sessions;
    const e = contextEntries;
    const h = chainHeads;
    let rows: Record<string, unknown>[];
    try {
      rows = await this.driver.execute(sql`
        select ${s.id}, ${s.tenantId}, ${s.agentId}, ${s.keyId}, ${s.helloJcs}, ${s.intentJcs}, ${s.stateJcs},
               ${s.parentSessionId}, ${s.createdAt}, ${s.closedAt}, ${h.seq} as head_seq, ${h.headHash},
               array(select ${e.stateDeltaJcs} from ${e}
                      where ${e.sessionId} = ${s.id} and ${e.seq} > ${s.stateSeq} and ${e.stateDeltaJcs} is not null
                      order by ${e.seq}) as deltas
          from ${s} left join ${h} on ${h.sessionId} = ${s.id}
         where ${s.id} = ${id}`);
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
    return {
      id: String(r.id),
      tenantId: textOrNull(r.tenant_id),
      agentId: String(r.agent_id),
      keyId: textOrNull(r.key_id),
      hello: parseJcs(String(r.hello_jcs)),
      intent: parseJcs(String(r.intent_jcs)),
      state,
      parentSessionId: textOrNull(r.parent_session_id),
      createdAt: asDate(r.created_at),
      closedAt: r.closed_at === null ? null : asDate(r.closed_at),
      stateHead:
        r.head_hash === null || r.head_hash === undefined
          ? null
          : { seq: Number(r.head_seq), entryHash: String(r.head_hash) },
    };
  }

  async update(id: string, patch: Partial<Pick<SessionRecord, 'intent' | 'state' | 'keyId' | 'hello'>>): Promise<void> {
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
      updated = await this.db.update(sessions).set(set).where(eq(sessions.id, id)).returning({ id: sessions.id });
    } catch (err) {
      throw toStoreError(err, 'updateSessionState');
    }
    if (updated.length === 0) throw new StoreError('not_found', `no session ${id}`);
  }

  /** Seals the row (a second close keeps the first time). */
  async close(id: string, at: Date): Promise<void> {
    let found: { closedAt: Date | null }[];
    try {
      await this.db
        .update(sessions)
        .set({ closedAt: at })
        .where(and(eq(sessions.id, id), sql`${sessions.closedAt} is null`));
      found = await this.db.select({ closedAt: sessions.closedAt }).from(sessions).where(eq(sessions.id, id));
    } catch (err) {
      throw toStoreError(err, 'closeSession');
    }
    if (found.length === 0) throw new StoreError('not_found', `no session ${id}`);
  }

  /** A fresh key inserts; an expired one is taken over; a live one matches nothing: false (ACS §10.3). */
  async rememberReplayKey(sessionId: string, kind: ReplayKeyKind, value: string, expiresAt: Date): Promise<boolean> {
    requireReplayKey(kind, value);
    if (!isValidDate(expiresAt)) throw new StoreError('invalid_input', 'expiresAt must be a valid Date');
    const now = new Date();
    try {
      const rows = await this.db
        .insert(replayKeys)
        .values({ sessionId, kind, value, expiresAt })
        .onConflictDoUpdate({
          target: [replayKeys.sessionId, replayKeys.kind, replayKeys.value],
          set: { expiresAt: sql`excluded.expires_at` },
          setWhere: sql`${replayKeys.expiresAt} <= ${now.toISOString()}::timestamptz`,
        })
        .returning({ v: replayKeys.value });
      return rows.length === 1;
    } catch (err) {
      throw toStoreError(err, 'rememberReplayKey');
    }
  }

  /** Deletes keys expired before `now`: dead weight, §10.3 only needs live ones. */
  async purgeExpiredReplayKeys(now: Date): Promise<void> {
    await this.db.delete(replayKeys).where(lt(replayKeys.expiresAt, now));
  }
}
