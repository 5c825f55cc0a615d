// Operator read queries (and the admin audit log) for src/admin/: the sessions, decisions and audit listings the
// admin API and the console show. They run on the store's own Drizzle handle, so they share its connections,
// driver and schema (docs/admin-api.md).
import { DrizzleGuardianStore } from '../drizzle-store.ts';
import type { StoreDatabase } from '../driver.ts';
import { StoreError } from '../errors.ts';
import type { DurableStore } from '../types.ts';
import { type AdminAuditEntry, type NewAdminAuditEntry, appendAdminAudit, listAdminAudit } from './audit-log.ts';
import { type DecisionFilter, type DecisionRow, decisionsSince, searchDecisions } from './decisions.ts';
import { type Page, type SessionFilter, type SessionSummary, listSessions } from './sessions.ts';
import { type DecisionStats, decisionStats } from './stats.ts';

export type {
  DecisionStats,
  AdminAuditEntry,
  NewAdminAuditEntry,
  DecisionFilter,
  DecisionRow,
  Page,
  SessionFilter,
  SessionSummary,
};
export { encodeCursor, decodeCursor } from './cursor.ts';

export interface AdminQueries {
  listSessions(filter: SessionFilter, page: { cursor?: string; limit: number }): Promise<Page<SessionSummary>>;
  searchDecisions(filter: DecisionFilter, page: { cursor?: string; limit: number }): Promise<Page<DecisionRow>>;
  decisionsSince(sinceMicros: string, filter: DecisionFilter, limit: number): Promise<DecisionRow[]>;
  decisionStats(since: Date, topCodes?: number): Promise<DecisionStats>;
  appendAdminAudit(entry: NewAdminAuditEntry): Promise<AdminAuditEntry>;
  listAdminAudit(
    filter: { actor?: string; action?: string },
    page: { cursor?: string; limit: number },
  ): Promise<Page<AdminAuditEntry>>;
}

/** The queries over a store opened by openStore(). */
export function adminQueries(store: DurableStore): AdminQueries {
  if (!(store instanceof DrizzleGuardianStore))
    throw new StoreError('invalid_input', 'the admin queries need a store opened by openStore()');
  const db: StoreDatabase = store.database;
  return {
    listSessions: (filter, page) => listSessions(db, filter, page),
    searchDecisions: (filter, page) => searchDecisions(db, filter, page),
    decisionsSince: (since, filter, limit) => decisionsSince(db, since, filter, limit),
    decisionStats: (since, topCodes) => decisionStats(db, since, topCodes),
    appendAdminAudit: (entry) => appendAdminAudit(db, entry),
    listAdminAudit: (filter, page) => listAdminAudit(db, filter, page),
  };
}
