// Reads of the audit chain: heads, entries as records (the API), and entries as stored (replay and `audit verify`
// hash the stored JCS texts instead of canonicalising parsed objects again). Keyset pages on (session_id, seq).
import { type SQL, and, asc, eq, gt, sql } from 'drizzle-orm';
import type { ContextEntryContent } from '../chain/index.ts';
import type { StoreDatabase, StoreDriver } from './driver.ts';
import { toStoreError } from './errors.ts';
import { chainHeads, checkpoints, contextEntries, policyBundles, replayKeys, sessions } from './schema.ts';
import type { ChainInfo, ContextEntryRecord, StoredEntryRow } from './types.ts';
import { pageLimit, parseJcs, textOrNull } from './values.ts';

const e = contextEntries;

const chainInfo = {
  sessionId: chainHeads.sessionId,
  seq: chainHeads.seq,
  headHash: chainHeads.headHash,
  prunedAt: chainHeads.prunedAt,
};

/**
 * A packed row: one text column per row, since drivers pay per field. Header
 * `seq,created_ms,len,len,len,len,len,len;` (lengths in UTF-8 bytes of content, previous hash, entry hash,
 * params, result and bundle revision, empty for NULL; octet_length is O(1) where length() scans) then the texts
 * back to back (concat skips the NULLs). created_ms is floor(µs / 1000) as the driver's Date holds it; µs since
 * 1970 are below 2^53, so the rounding is exact. src/replay/entries.ts unpacks it.
 */
const PACKED_ENTRY: SQL = sql`concat(${e.seq}, ',', round(date_part('epoch', ${e.createdAt}) * 1e6)::bigint / 1000, ',',
  octet_length(${e.contentJcs}), ',', octet_length(${e.previousHash}), ',', octet_length(${e.entryHash}), ',',
  octet_length(${e.paramsJcs}), ',', octet_length(${e.resultJcs}), ',', octet_length(${e.bundleRevision}), ';',
  ${e.contentJcs}, ${e.previousHash}, ${e.entryHash}, ${e.paramsJcs}, ${e.resultJcs}, ${e.bundleRevision})`;

/** The tables `guardian db status` counts. */
const COUNTED = {
  sessions,
  chain_heads: chainHeads,
  context_entries: e,
  checkpoints,
  replay_keys: replayKeys,
  policy_bundles: policyBundles,
};

export class ChainReads {
  constructor(
    private readonly driver: StoreDriver,
    private readonly db: StoreDatabase = driver.db,
  ) {}

  async getChain(sessionId: string): Promise<ChainInfo | null> {
    try {
      const rows = await this.db.select(chainInfo).from(chainHeads).where(eq(chainHeads.sessionId, sessionId)).limit(1);
      return rows[0] ?? null;
    } catch (err) {
      throw toStoreError(err, 'getChain');
    }
  }

  async listChains(options: { afterSessionId?: string; limit?: number } = {}): Promise<ChainInfo[]> {
    try {
      return await this.db
        .select(chainInfo)
        .from(chainHeads)
        .where(options.afterSessionId === undefined ? undefined : gt(chainHeads.sessionId, options.afterSessionId))
        .orderBy(asc(chainHeads.sessionId))
        .limit(pageLimit(options.limit));
    } catch (err) {
      throw toStoreError(err, 'listChains');
    }
  }

  async listContextEntries(
    sessionId: string,
    options: { afterSeq?: number; limit?: number } = {},
  ): Promise<ContextEntryRecord[]> {
    let rows: (typeof e.$inferSelect)[];
    try {
      rows = await this.db
        .select()
        .from(e)
        .where(and(eq(e.sessionId, sessionId), gt(e.seq, options.afterSeq ?? -1)))
        .orderBy(asc(e.seq))
        .limit(pageLimit(options.limit));
    } catch (err) {
      throw toStoreError(err, 'listContextEntries');
    }
    return rows.map((row) => ({
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
    }));
  }

  async readStoredEntries(sessionId: string, afterSeq: number, limit: number): Promise<StoredEntryRow[]> {
    const rows = await this.#page(
      'readStoredEntries',
      sessionId,
      afterSeq,
      limit,
      sql`
      ${e.seq}, ${e.entryId}, ${e.stepId}, ${e.stepType}, ${e.requestHash}, ${e.timestamp}, ${e.provenanceSummaryJcs},
      ${e.contentJcs}, ${e.previousHash}, ${e.entryHash}, ${e.paramsJcs}, ${e.resultJcs}, ${e.bundleRevision},
      ${e.createdAt}`,
    );
    return rows.map((r) => ({
      seq: Number(r.seq),
      entryId: String(r.entry_id),
      stepId: String(r.step_id),
      stepType: String(r.step_type),
      requestHash: textOrNull(r.request_hash),
      timestamp: textOrNull(r.timestamp),
      provenanceSummaryJcs: textOrNull(r.provenance_summary_jcs),
      contentJcs: String(r.content_jcs),
      previousHash: textOrNull(r.previous_hash),
      entryHash: String(r.entry_hash),
      paramsJcs: String(r.params_jcs),
      resultJcs: textOrNull(r.result_jcs),
      bundleRevision: textOrNull(r.bundle_revision),
    }));
  }

  async readPackedEntries(sessionId: string, afterSeq: number, limit: number): Promise<string[]> {
    const rows = await this.#page('readPackedEntries', sessionId, afterSeq, limit, sql`${PACKED_ENTRY} as packed`);
    return rows.map((r) => String(r.packed));
  }

  async countRows(): Promise<Record<string, number>> {
    const counts: Record<string, number> = {};
    try {
      for (const [name, table] of Object.entries(COUNTED)) {
        const [row] = await this.driver.execute(sql`select count(*)::int as n from ${table}`);
        counts[name] = Number(row.n);
      }
    } catch (err) {
      throw toStoreError(err, 'countRows');
    }
    return counts;
  }

  async #page(what: string, sessionId: string, afterSeq: number, limit: number, columns: SQL) {
    try {
      return await this.driver.execute(sql`
        select ${columns} from ${e} where ${e.sessionId} = ${sessionId} and ${e.seq} > ${afterSeq}
         order by ${e.seq} limit ${limit}`);
    } catch (err) {
      throw toStoreError(err, what);
    }
  }
}
