// The admin audit log (table admin_audit): appended once per state-changing admin call, read newest first.
import { type SQL, and, desc, eq, lt } from 'drizzle-orm';
import type { StoreDatabase } from '../driver.ts';
import { toStoreError } from '../errors.ts';
import { adminAudit } from '../schema.ts';
import { decodeCursor, encodeCursor } from './cursor.ts';
import type { Page } from './sessions.ts';

export interface AdminAuditEntry {
  id: number;
  at: Date;
  /** The token's configured name. */
  actor: string;
  role: string;
  method: string;
  path: string;
  /** The route's operation id (e.g. activateBundle). */
  action: string;
  target: string | null;
  /** HTTP status answered. */
  status: number;
  /** ok (2xx), refused (4xx: denied by role, invalid input, conflict) or failed (5xx). */
  outcome: 'ok' | 'refused' | 'failed';
  detail: string | null;
}

export type NewAdminAuditEntry = Omit<AdminAuditEntry, 'id' | 'at'>;

export async function appendAdminAudit(db: StoreDatabase, entry: NewAdminAuditEntry): Promise<AdminAuditEntry> {
  try {
    const [row] = await db.insert(adminAudit).values(entry).returning();
    return row as AdminAuditEntry;
  } catch (err) {
    throw toStoreError(err, 'appendAdminAudit');
  }
}

export async function listAdminAudit(
  db: StoreDatabase,
  filter: { actor?: string; action?: string },
  page: { cursor?: string; limit: number },
): Promise<Page<AdminAuditEntry>> {
  const where: SQL[] = [];
  if (filter.actor !== undefined) where.push(eq(adminAudit.actor, filter.actor));
  if (filter.action !== undefined) where.push(eq(adminAudit.action, filter.action));
  if (page.cursor) where.push(lt(adminAudit.id, decodeCursor(page.cursor, ['n'])[0] as number));
  try {
    const rows = await db
      .select()
      .from(adminAudit)
      .where(and(...where))
      .orderBy(desc(adminAudit.id))
      .limit(page.limit + 1);
    const items = rows.slice(0, page.limit) as AdminAuditEntry[];
    const last = items.at(-1);
    return { items, nextCursor: rows.length > page.limit && last ? encodeCursor([last.id]) : null };
  } catch (err) {
    throw toStoreError(err, 'listAdminAudit');
  }
}
