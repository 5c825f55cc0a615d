// AgBOM versions on the Drizzle schema (src/store/schema.ts agbomVersions): written inside the step-commit
// transaction, so a version exists exactly when the chain entry that carried it does (ACS Inspect: "written into
// the SessionContext audit chain"), and read back from the latest adopted full version on. The store keeps the
// documents, diffs and problems as JSON it does not interpret: src/agbom gives them their types and folds them.
import { type SQL, and, asc, eq, like, lte, sql } from 'drizzle-orm';
import { type BoundQuery, type StoreDatabase, type StoreDriver, templateOf } from '../driver.ts';
import { StoreError, toStoreError } from '../errors.ts';
import { agbomVersions, contextEntries } from '../schema.ts';
import { names, slot } from '../sql.ts';
import type { AgbomStore, AgbomVersionRecord, AgbomVersionWrite, EntryTime, StoredEntryRow } from '../types.ts';
import { jcsOf, parseJcs } from '../values.ts';

const a = agbomVersions;
const e = contextEntries;

/** One row per version of the batch (one array per column), kept only where its entry landed as placed. */
const VERSIONS_INSERT = templateOf(sql`
  insert into ${a} (${names(
    a.sessionId,
    a.seq,
    a.entryHash,
    a.method,
    a.form,
    a.adopted,
    a.documentJcs,
    a.diffJcs,
    a.agbomHash,
    a.reportedHash,
    a.problemsJcs,
  )})
  select u.session_id, u.seq, u.entry_hash, u.method, u.form, u.adopted, u.document_jcs, u.diff_jcs, u.agbom_hash,
         u.reported_hash, u.problems_jcs
    from unnest(${slot('sessionId', 'text[]')}, ${slot('seq', 'integer[]')}, ${slot('entryHash', 'text[]')},
                ${slot('method', 'text[]')}, ${slot('form', 'text[]')}, ${slot('adopted', 'boolean[]')},
                ${slot('document', 'text[]')}, ${slot('diff', 'text[]')}, ${slot('agbomHash', 'text[]')},
                ${slot('reportedHash', 'text[]')}, ${slot('problems', 'text[]')})
      as u(session_id, seq, entry_hash, method, form, adopted, document_jcs, diff_jcs, agbom_hash, reported_hash,
           problems_jcs)
    join ${e} on ${e.sessionId} = u.session_id and ${e.seq} = u.seq and ${e.entryHash} = u.entry_hash`);

/** A version serialised before it joins a batch (prepareStep): one that cannot be stored fails only its step. */
export interface PreparedAgbomVersion {
  method: string;
  form: 'full' | 'diff';
  adopted: boolean;
  documentJcs: string | null;
  diffJcs: string;
  agbomHash: string;
  reportedHash: string | null;
  problemsJcs: string;
}

export function prepareAgbomVersion(version: AgbomVersionWrite): PreparedAgbomVersion {
  if (version.form !== 'full' && version.form !== 'diff')
    throw new StoreError('invalid_input', `AgBOM version form must be 'full' or 'diff'`);
  return {
    method: version.method,
    form: version.form,
    adopted: version.adopted,
    documentJcs: version.document ? jcsOf(version.document, 'AgBOM document') : null,
    diffJcs: jcsOf(version.diff, 'AgBOM diff'),
    agbomHash: version.agbomHash,
    reportedHash: version.reportedHash,
    problemsJcs: jcsOf(version.problems, 'AgBOM problems'),
  };
}

/**
 * One insert for a commit batch's AgBOM versions, for the step-commit transaction. Joined on the entry as it
 * landed (seq and entry_hash): a step the batch did not commit (stale head, replay) writes no version. Null when
 * no step of the batch carries one.
 */
export function agbomVersionInsert(
  steps: {
    sessionId: string;
    appended: { seq: number; entryHash: string };
    version: PreparedAgbomVersion | null;
  }[],
): BoundQuery | null {
  const rows = steps.flatMap((s) => (s.version ? [{ ...s, version: s.version }] : []));
  if (rows.length === 0) return null;
  return VERSIONS_INSERT({
    sessionId: rows.map((s) => s.sessionId),
    seq: rows.map((s) => s.appended.seq),
    entryHash: rows.map((s) => s.appended.entryHash),
    method: rows.map((s) => s.version.method),
    form: rows.map((s) => s.version.form),
    adopted: rows.map((s) => s.version.adopted),
    document: rows.map((s) => s.version.documentJcs),
    diff: rows.map((s) => s.version.diffJcs),
    agbomHash: rows.map((s) => s.version.agbomHash),
    reportedHash: rows.map((s) => s.version.reportedHash),
    problems: rows.map((s) => s.version.problemsJcs),
  });
}

function toRecord(row: typeof a.$inferSelect): AgbomVersionRecord {
  return {
    sessionId: row.sessionId,
    seq: row.seq,
    entryHash: row.entryHash,
    method: row.method,
    form: row.form === 'full' ? 'full' : 'diff',
    adopted: row.adopted,
    document: row.documentJcs === null ? null : parseJcs(row.documentJcs),
    diff: parseJcs(row.diffJcs),
    agbomHash: row.agbomHash,
    reportedHash: row.reportedHash,
    problems: parseJcs(row.problemsJcs) as unknown[],
    createdAt: row.createdAt,
  };
}

/** The session's versions up to chain entry `atSeq` (every one when omitted). */
function upTo(sessionId: string, atSeq: number | undefined): SQL | undefined {
  return and(eq(a.sessionId, sessionId), atSeq === undefined ? undefined : lte(a.seq, atSeq));
}

export class AgbomVersions implements AgbomStore {
  constructor(
    driver: StoreDriver,
    private readonly db: StoreDatabase = driver.db,
  ) {}

  async listAgbomVersions(sessionId: string, atSeq?: number): Promise<AgbomVersionRecord[]> {
    const rows = await this.#read('listAgbomVersions', () =>
      this.db.select().from(a).where(upTo(sessionId, atSeq)).orderBy(asc(a.seq)),
    );
    return rows.map(toRecord);
  }

  async agbomVersionsInForce(sessionId: string, atSeq?: number): Promise<AgbomVersionRecord[]> {
    // The seq of the latest adopted full version in range (none: the session's first entry on).
    const lastFull = sql`coalesce((select max(${a.seq}) from ${a}
      where ${and(upTo(sessionId, atSeq), eq(a.adopted, true), eq(a.form, 'full'))}), 0)`;
    const rows = await this.#read('agbomVersionsInForce', () =>
      this.db
        .select()
        .from(a)
        .where(and(upTo(sessionId, atSeq), sql`${a.seq} >= ${lastFull}`))
        .orderBy(asc(a.seq)),
    );
    return rows.map(toRecord);
  }

  async readAgbomEntries(sessionId: string): Promise<StoredEntryRow[]> {
    return this.#read('readAgbomEntries', () =>
      this.db
        .select({
          seq: e.seq,
          entryId: e.entryId,
          stepId: e.stepId,
          stepType: e.stepType,
          requestHash: e.requestHash,
          timestamp: e.timestamp,
          provenanceSummaryJcs: e.provenanceSummaryJcs,
          contentJcs: e.contentJcs,
          previousHash: e.previousHash,
          entryHash: e.entryHash,
          paramsJcs: e.paramsJcs,
          resultJcs: e.resultJcs,
          bundleRevision: e.bundleRevision,
        })
        .from(e)
        .where(and(eq(e.sessionId, sessionId), like(e.stepType, 'agbom/%')))
        .orderBy(asc(e.seq)),
    );
  }

  async getEntryTime(sessionId: string, seq: number): Promise<EntryTime | null> {
    const rows = await this.#read('getEntryTime', () =>
      this.db
        .select({ timestamp: e.timestamp, createdAt: e.createdAt })
        .from(e)
        .where(and(eq(e.sessionId, sessionId), eq(e.seq, seq)))
        .limit(1),
    );
    return rows[0] ?? null;
  }

  async #read<T>(what: string, work: () => Promise<T>): Promise<T> {
    try {
      return await work();
    } catch (err) {
      throw toStoreError(err, what);
    }
  }
}
