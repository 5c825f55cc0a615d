// Session listing for the admin API and the console: newest first, filtered by agent, creation time and by what
// the session's steps were (method, disposition, reason code, policy revision: at least one entry matching all
// of them), keyset paginated on (created_at, id).
import { type SQL, and, desc, eq, exists, gte, lt, or, sql } from 'drizzle-orm';
import type { StoreDatabase } from '../driver.ts';
import { toStoreError } from '../errors.ts';
import { chainHeads, contextEntries, sessions } from '../schema.ts';
import { decodeCursor, encodeCursor } from './cursor.ts';
import { disposition, fromMicros, hasReasonCode } from './decision-columns.ts';

export interface SessionFilter {
  agentId?: string;
  /** Sessions created at or after. */
  since?: Date;
  /** Sessions created before. */
  until?: Date;
  /** Some step of the session is this method (e.g. steps/toolCallRequest). */
  method?: string;
  /** Some step was decided this way. */
  disposition?: string;
  /** Some step's decision carries this reason code. */
  reasonCode?: string;
  /** Some step was decided by this policy bundle revision. */
  revision?: string;
  /** true: closed sessions only; false: open only. */
  closed?: boolean;
}

export interface SessionSummary {
  id: string;
  tenantId: string | null;
  agentId: string;
  parentSessionId: string | null;
  createdAt: Date;
  closedAt: Date | null;
  /** Entries in the chain (head seq + 1; 0 for none). */
  entries: number;
  headHash: string | null;
  prunedAt: Date | null;
}

export interface Page<T> {
  items: T[];
  /** Pass back as `cursor` for the next page; null on the last page. */
  nextCursor: string | null;
}

const sessionMicros = sql<string>`(extract(epoch from ${sessions.createdAt}) * 1000000)::bigint::text`;

export async function listSessions(
  db: StoreDatabase,
  filter: SessionFilter,
  page: { cursor?: string; limit: number },
): Promise<Page<SessionSummary>> {
  const where: (SQL | undefined)[] = [];
  if (filter.agentId !== undefined) where.push(eq(sessions.agentId, filter.agentId));
  if (filter.since) where.push(gte(sessions.createdAt, filter.since));
  if (filter.until) where.push(lt(sessions.createdAt, filter.until));
  if (filter.closed === true) where.push(sql`${sessions.closedAt} is not null`);
  if (filter.closed === false) where.push(sql`${sessions.closedAt} is null`);
  const step: SQL[] = [];
  if (filter.method !== undefined) step.push(eq(contextEntries.stepType, filter.method));
  if (filter.disposition !== undefined) step.push(disposition(filter.disposition));
  if (filter.reasonCode !== undefined) step.push(hasReasonCode(filter.reasonCode));
  if (filter.revision !== undefined) step.push(eq(contextEntries.bundleRevision, filter.revision));
  if (step.length > 0)
    where.push(
      exists(
        db
          .select({ one: sql`1` })
          .from(contextEntries)
          .where(and(eq(contextEntries.sessionId, sessions.id), ...step)),
      ),
    );
  if (page.cursor) {
    const [micros, id] = decodeCursor(page.cursor, ['u', 's']) as [string, string];
    const at = fromMicros(micros);
    where.push(or(lt(sessions.createdAt, at), and(eq(sessions.createdAt, at), lt(sessions.id, id))));
  }
  try {
    const rows = await db
      .select({
        id: sessions.id,
        tenantId: sessions.tenantId,
        agentId: sessions.agentId,
        parentSessionId: sessions.parentSessionId,
        createdAt: sessions.createdAt,
        closedAt: sessions.closedAt,
        micros: sessionMicros,
        headSeq: chainHeads.seq,
        headHash: chainHeads.headHash,
        prunedAt: chainHeads.prunedAt,
      })
      .from(sessions)
      .leftJoin(chainHeads, eq(chainHeads.sessionId, sessions.id))
      .where(and(...where))
      .orderBy(desc(sessions.createdAt), desc(sessions.id))
      .limit(page.limit + 1);
    const more = rows.length > page.limit;
    const items = rows.slice(0, page.limit);
    const last = items.at(-1);
    return {
      items: items.map((r) => ({
        id: r.id,
        tenantId: r.tenantId,
        agentId: r.agentId,
        parentSessionId: r.parentSessionId,
        createdAt: r.createdAt,
        closedAt: r.closedAt,
        entries: r.headSeq === null ? 0 : r.headSeq + 1,
        headHash: r.headHash,
        prunedAt: r.prunedAt,
      })),
      nextCursor: more && last ? encodeCursor([last.micros, last.id]) : null,
    };
  } catch (err) {
    throw toStoreError(err, 'listSessions');
  }
}
