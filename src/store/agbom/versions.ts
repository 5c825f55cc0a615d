// AgBOM versions on the Drizzle schema (src/store/schema.ts agbomVersions): written inside the step-commit
// transaction, so a version exists exactly when the chain entry that carried it does (ACS Inspect: "written into
// the SessionContext audit chain"), and read back from the latest adopted full version on. The store keeps the
// documents, diffs and problems as JSON it does not interpret: src/agbom gives them their types and folds them.
import { canonicalJson } from '../../chain/index.ts';

/** What an agbom/* step writes beside its entry (StepCommit.agbom). */
export interface AgbomVersionWrite<Document = unknown, Diff = unknown, Problem = unknown> {
  method: string;
  form: 'full' | 'diff';
  /** Whether the decision let the change happen (allow / modify): only adopted versions make the current AgBOM. */
  adopted: boolean;
  /** The whole document, for form 'full'. */
  document: Document | null;
  diff: Diff;
  /** agbom_hash of the document the version results in. */
  agbomHash: string;
  reportedHash: string | null;
  problems: Problem[];
}

export interface AgbomVersionRecord<Document = unknown, Diff = unknown, Problem = unknown>
  extends AgbomVersionWrite<Document, Diff, Problem> {
  sessionId: string;
  seq: number;
  entryHash: string;
  createdAt: Date;
}

/** Raw SQL on one connection (a transaction's RawQuery, or the store's query). */
export type AgbomQuery = (sqlText: string, params?: unknown[]) => Promise<Record<string, unknown>[]>;

/**
 * One insert for a commit batch's AgBOM versions. Joined on the entry as it landed (seq and entry_hash): a step
 * the batch did not commit (stale head, replay) writes no version. Null when no step of the batch carries one.
 */
export function agbomVersionInsert(
  steps: {
    sessionId: string;
    appended: { seq: number; entryHash: string };
    version: AgbomVersionWrite | null | undefined;
  }[],
): { text: string; params: unknown[] } | null {
  const rows = steps.filter((s) => s.version);
  if (rows.length === 0) return null;
  const v = (s: (typeof rows)[number]) => s.version!;
  return {
    text: `insert into agbom_versions
        (session_id, seq, entry_hash, method, form, adopted, document_jcs, diff_jcs, agbom_hash, reported_hash,
         problems_jcs)
      select u.session_id, u.seq, u.entry_hash, u.method, u.form, u.adopted, u.document_jcs, u.diff_jcs,
             u.agbom_hash, u.reported_hash, u.problems_jcs
        from unnest($1::text[], $2::integer[], $3::text[], $4::text[], $5::text[], $6::boolean[], $7::text[],
                    $8::text[], $9::text[], $10::text[], $11::text[])
          as u(session_id, seq, entry_hash, method, form, adopted, document_jcs, diff_jcs, agbom_hash,
               reported_hash, problems_jcs)
        join context_entries as e on e.session_id = u.session_id and e.seq = u.seq and e.entry_hash = u.entry_hash`,
    params: [
      rows.map((s) => s.sessionId),
      rows.map((s) => s.appended.seq),
      rows.map((s) => s.appended.entryHash),
      rows.map((s) => v(s).method),
      rows.map((s) => v(s).form),
      rows.map((s) => v(s).adopted),
      rows.map((s) => (v(s).document ? canonicalJson(v(s).document) : null)),
      rows.map((s) => canonicalJson(v(s).diff)),
      rows.map((s) => v(s).agbomHash),
      rows.map((s) => v(s).reportedHash),
      rows.map((s) => canonicalJson(v(s).problems)),
    ],
  };
}

function toRecord(r: Record<string, unknown>): AgbomVersionRecord {
  return {
    sessionId: String(r.session_id),
    seq: Number(r.seq),
    entryHash: String(r.entry_hash),
    method: String(r.method),
    form: r.form === 'full' ? 'full' : 'diff',
    adopted: r.adopted === true,
    document: r.document_jcs === null ? null : (JSON.parse(String(r.document_jcs)) as unknown),
    diff: JSON.parse(String(r.diff_jcs)) as unknown,
    agbomHash: String(r.agbom_hash),
    reportedHash: r.reported_hash === null ? null : String(r.reported_hash),
    problems: JSON.parse(String(r.problems_jcs)) as unknown[],
    createdAt: r.created_at instanceof Date ? r.created_at : new Date(String(r.created_at)),
  };
}

const COLUMNS =
  'session_id, seq, entry_hash, method, form, adopted, document_jcs, diff_jcs, agbom_hash, reported_hash, problems_jcs, created_at';

/** A session's versions in chain order, up to `atSeq` (inclusive) when given. */
export async function listAgbomVersions(
  query: AgbomQuery,
  sessionId: string,
  atSeq?: number,
): Promise<AgbomVersionRecord[]> {
  const rows = await query(`select ${COLUMNS} from agbom_versions where session_id = $1 and seq <= $2 order by seq`, [
    sessionId,
    atSeq ?? 2_147_483_647,
  ]);
  return rows.map(toRecord);
}

/**
 * The versions that make the session's AgBOM as of chain entry `atSeq` (the latest when omitted): from the latest
 * adopted full version on, since the diffs before it no longer matter.
 */
export async function agbomVersionsInForce(
  query: AgbomQuery,
  sessionId: string,
  atSeq?: number,
): Promise<AgbomVersionRecord[]> {
  const rows = await query(
    `select ${COLUMNS} from agbom_versions
      where session_id = $1 and seq <= $2 and seq >= coalesce((select max(seq) from agbom_versions
        where session_id = $1 and seq <= $2 and adopted and form = 'full'), 0)
      order by seq`,
    [sessionId, atSeq ?? 2_147_483_647],
  );
  return rows.map(toRecord);
}
