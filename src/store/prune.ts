// `audit prune`: sessions closed before a date lose their entries, replay keys and session row; each chain's head
// row stays (marked pruned) with a signed checkpoint of it, so `audit verify` still accounts for the chain.
import { and, asc, eq, isNotNull, lt, sql } from 'drizzle-orm';
import type { Checkpointer } from './checkpointing.ts';
import type { StoreDriver } from './driver.ts';
import { toStoreError } from './errors.ts';
import type { ChainReads } from './reads.ts';
import { chainHeads, contextEntries, replayKeys, sessions } from './schema.ts';
import { names } from './sql.ts';

export async function pruneClosedSessions(
  driver: StoreDriver,
  reads: ChainReads,
  checkpointer: Checkpointer,
  before: Date,
): Promise<{ sessions: number; entries: number; skipped: string[] }> {
  const closed = await driver.db
    .select({ id: sessions.id })
    .from(sessions)
    .where(and(isNotNull(sessions.closedAt), lt(sessions.closedAt, before)))
    .orderBy(asc(sessions.id));
  let pruned = 0;
  let entries = 0;
  const skipped: string[] = [];
  for (const { id } of closed) {
    const head = await reads.getChain(id);
    if (head && head.headHash !== null && !head.prunedAt) {
      // Keep a signed head so `audit verify` can still prove what the deleted chain ended with.
      const cps = await checkpointer.list(id);
      const covered = cps.some((c) => c.seq === head.seq && c.headHash === head.headHash);
      if (!covered && !(await checkpointer.write(id, head.seq, head.headHash))) {
        skipped.push(id);
        continue;
      }
    }
    try {
      await driver.transaction(async (query) => {
        const deleted = await query(
          sql`delete from ${contextEntries} where ${eq(contextEntries.sessionId, id)} returning ${names(contextEntries.seq)}`,
        );
        entries += deleted.length;
        await query(sql`delete from ${replayKeys} where ${eq(replayKeys.sessionId, id)}`);
        await query(sql`delete from ${sessions} where ${eq(sessions.id, id)}`);
        await query(
          sql`update ${chainHeads} set ${names(chainHeads.prunedAt)} = now() where ${eq(chainHeads.sessionId, id)}`,
        );
      });
    } catch (err) {
      throw toStoreError(err, 'pruneClosedSessions');
    }
    pruned++;
  }
  return { sessions: pruned, entries, skipped };
}
