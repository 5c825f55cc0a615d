// History read back from the store, as DurableStore offers it (src/store/types.ts): chain entries as stored (replay,
// `audit verify`), AgBOM versions bound to their entries, and the provenance ids of recorded params.

/** One context_entries row as stored: JCS texts, not parsed (replay and `audit verify` hash what is stored). */
export interface StoredEntryRow {
  seq: number;
  entryId: string;
  stepId: string;
  stepType: string;
  requestHash: string | null;
  timestamp: string | null;
  provenanceSummaryJcs: string | null;
  /** JCS of the hashed entry members (what entry_hash covers, with previous_hash). */
  contentJcs: string;
  previousHash: string | null;
  entryHash: string;
  /** JCS of the params as received (what request_hash covers). */
  paramsJcs: string;
  resultJcs: string | null;
  bundleRevision: string | null;
}

/** Chain pages as stored, for replay and `audit verify` (keyset pages on the (session_id, seq) key). */
export interface ReplayReadStore {
  /** Entries with seq > afterSeq, in seq order, at most `limit`. */
  readStoredEntries(sessionId: string, afterSeq: number, limit: number): Promise<StoredEntryRow[]>;
  /**
   * The same page, each row packed into one string (the format: src/store/reads.ts): a page crosses to a
   * worker thread as flat text.
   */
  readPackedEntries(sessionId: string, afterSeq: number, limit: number): Promise<string[]>;
}

/** What an agbom/* step writes beside its entry (StepCommit.agbom); the JSON members are src/agbom's to type. */
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

/** A stored AgBOM version, bound to the chain entry that carried it (same session and seq, entry_hash). */
export interface AgbomVersionRecord<Document = unknown, Diff = unknown, Problem = unknown>
  extends AgbomVersionWrite<Document, Diff, Problem> {
  sessionId: string;
  seq: number;
  entryHash: string;
  createdAt: Date;
}

/** A chain entry's time: its hashed params.timestamp (ACS §8.2) when it has one, and when it was stored. */
export interface EntryTime {
  timestamp: string | null;
  createdAt: Date;
}

/**
 * The AgBOM versions of sessions (ACS Inspect; docs/agbom.md), written only with their entries (StepCommit.agbom),
 * and the chain entries src/agbom reads beside them. Documents, diffs and problems come back as stored JSON.
 */
export interface AgbomStore {
  /** A session's versions in chain order, up to `atSeq` (inclusive) when given. */
  listAgbomVersions(sessionId: string, atSeq?: number): Promise<AgbomVersionRecord[]>;
  /**
   * The versions that make the session's AgBOM as of chain entry `atSeq` (the latest when omitted), in chain
   * order: from the latest adopted full version on, since the diffs before it no longer matter.
   */
  agbomVersionsInForce(sessionId: string, atSeq?: number): Promise<AgbomVersionRecord[]>;
  /** The session's agbom/* entries as stored, in chain order (`audit verify` re-derives the versions from them). */
  readAgbomEntries(sessionId: string): Promise<StoredEntryRow[]>;
  /** When the entry at `seq` happened; null when the session has no such entry. */
  getEntryTime(sessionId: string, seq: number): Promise<EntryTime | null>;
}

/** A chain entry's seq and its params as stored (RFC 8785 text). */
export interface ProvenanceEntryRow {
  seq: number;
  paramsJcs: string;
}

/**
 * Which chain entries of a session carry Provenance objects (ACS §7: provenance_id is unique within the session;
 * src/acs/pipeline/provenance-ids.ts parses what comes back).
 */
export interface ProvenanceIdStore {
  /**
   * The session's entries with seq in (afterSeq, throughSeq] whose params hold a `provenance_id` member: any, or
   * one equal to one of `ids`, in chain order. A text match, so a caller parses each row to confirm.
   */
  readProvenanceEntries(
    sessionId: string,
    afterSeq: number,
    throughSeq: number,
    ids?: readonly string[],
  ): Promise<ProvenanceEntryRow[]>;
}
