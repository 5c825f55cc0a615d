// Decisions across sessions: one row per chain entry with its delivered decision (ACS §6: decision, reasoning,
// reason_codes, policy_references) and the bundle revision that decided it. Newest first for search, oldest
// first from a point in time for the live feed; keyset paginated on (created_at, session_id, seq).
import { type SQL, and, asc, desc, eq, gte, isNotNull, lt, or } from 'drizzle-orm';
import type { StoreDatabase } from '../driver.ts';
import { toStoreError } from '../errors.ts';
import { contextEntries, sessions } from '../schema.ts';
import type { Json } from '../../json.ts';
import { decodeCursor, encodeCursor } from './cursor.ts';
import { disposition, entryMicros, fromMicros, hasReasonCode } from './decision-columns.ts';
import type { Page } from './sessions.ts';

export interface DecisionFilter {
  sessionId?: string;
  agentId?: string;
  method?: string;
  disposition?: string;
  reasonCode?: string;
  revision?: string;
  /** Entries written at or after. */
  since?: Date;
  /** Entries written before. */
  until?: Date;
}

export interface DecisionRow {
  sessionId: string;
  seq: number;
  agentId: string;
  entryId: string;
  method: string;
  createdAt: Date;
  /** The signed result as delivered (null if the step has no recorded decision). */
  result: Json;
  bundleRevision: string | null;
  evaluationDurationMs: number | null;
  /** Epoch microseconds of createdAt (feed position). */
  at: string;
}

const columns = {
  sessionId: contextEntries.sessionId,
  seq: contextEntries.seq,
  agentId: sessions.agentId,
  entryId: contextEntries.entryId,
  method: contextEntries.stepType,
  createdAt: contextEntries.createdAt,
  resultJcs: contextEntries.resultJcs,
  bundleRevision: contextEntries.bundleRevision,
  evaluationDurationMs: contextEntries.evaluationDurationMs,
  at: entryMicros,
};

function conditions(filter: DecisionFilter): SQL[] {
  const where: SQL[] = [isNotNull(contextEntries.resultJcs)];
  if (filter.sessionId !== undefined) where.push(eq(contextEntries.sessionId, filter.sessionId));
  if (filter.agentId !== undefined) where.push(eq(sessions.agentId, filter.agentId));
  if (filter.method !== undefined) where.push(eq(contextEntries.stepType, filter.method));
  if (filter.disposition !== undefined) where.push(disposition(filter.disposition));
  if (filter.reasonCode !== undefined) where.push(hasReasonCode(filter.reasonCode));
  if (filter.revision !== undefined) where.push(eq(contextEntries.bundleRevision, filter.revision));
  if (filter.since) where.push(gte(contextEntries.createdAt, filter.since));
  if (filter.until) where.push(lt(contextEntries.createdAt, filter.until));
  return where;
}

type Row = { [K in keyof typeof columns]: unknown };

function toDecisionRow(r: Row): DecisionRow {
  return {
    sessionId: r.sessionId as string,
    seq: r.seq as number,
    agentId: r.agentId as string,
    entryId: r.entryId as string,
    method: r.method as string,
    createdAt: r.createdAt as Date,
    result: r.resultJcs === null ? null : (JSON.parse(r.resultJcs as string) as Json),
    bundleRevision: r.bundleRevision as string | null,
    evaluationDurationMs: r.evaluationDurationMs as number | null,
    at: r.at as string,
  };
}

/** Newest first. */
export async function searchDecisions(
  db: StoreDatabase,
  filter: DecisionFilter,
  page: { cursor?: string; limit: number },
): Promise<Page<DecisionRow>> {
  const where = conditions(filter);
  if (page.cursor) {
    const [micros, sessionId, seq] = decodeCursor(page.cursor, ['u', 's', 'n']) as [string, string, number];
    const at = fromMicros(micros);
    where.push(
      or(
        lt(contextEntries.createdAt, at),
        and(eq(contextEntries.createdAt, at), lt(contextEntries.sessionId, sessionId)),
        and(eq(contextEntries.createdAt, at), eq(contextEntries.sessionId, sessionId), lt(contextEntries.seq, seq)),
      ) as SQL,
    );
  }
  try {
    const rows = await db
      .select(columns)
      .from(contextEntries)
      .innerJoin(sessions, eq(sessions.id, contextEntries.sessionId))
      .where(and(...where))
      .orderBy(desc(contextEntries.createdAt), desc(contextEntries.sessionId), desc(contextEntries.seq))
      .limit(page.limit + 1);
    const items = rows.slice(0, page.limit).map(toDecisionRow);
    const last = items.at(-1);
    return {
      items,
      nextCursor: rows.length > page.limit && last ? encodeCursor([last.at, last.sessionId, last.seq]) : null,
    };
  } catch (err) {
    throw toStoreError(err, 'searchDecisions');
  }
}

/**
 * Oldest first, written at or after `sinceMicros` (epoch microseconds): the live feed's poll. A step's created_at
 * is its transaction's start, so a step committed late can be older than one already seen: the feed polls with
 * an overlap and drops the rows it already sent.
 */
export async function decisionsSince(
  db: StoreDatabase,
  sinceMicros: string,
  filter: DecisionFilter,
  limit: number,
): Promise<DecisionRow[]> {
  try {
    const rows = await db
      .select(columns)
      .from(contextEntries)
      .innerJoin(sessions, eq(sessions.id, contextEntries.sessionId))
      .where(and(...conditions(filter), gte(contextEntries.createdAt, fromMicros(sinceMicros))))
      .orderBy(asc(contextEntries.createdAt), asc(contextEntries.sessionId), asc(contextEntries.seq))
      .limit(limit);
    return rows.map(toDecisionRow);
  } catch (err) {
    throw toStoreError(err, 'decisionsSince');
  }
}
