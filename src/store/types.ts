// The storage seam (agt-go style: one interface per concern). Implemented once over Drizzle, run on two
// drivers: PGlite (embedded default) and Postgres (DATABASE_URL). The request pipeline only sees this.
import type { ContextEntryContent } from '../chain/index.ts';
import type { Json } from '../json.ts';
import type { AgbomStore, AgbomVersionWrite, ProvenanceIdStore, ReplayReadStore } from './history-types.ts';
import type { PolicyBundleStore, ReplicaStore, ShadowStore } from './lifecycle-types.ts';

// The seam's other concerns live beside it; importers take every store type from here.
export type * from './history-types.ts';
export type * from './lifecycle-types.ts';

export interface SessionRecord {
  id: string;
  tenantId: string | null;
  agentId: string;
  /** key_id bound at handshake (ACS §4; docs/conformance.md, interop choices). */
  keyId: string | null;
  /** The negotiated ClientHello/ServerHello, as JSON. */
  hello: Json;
  /** Intent fixed at sessionStart / first agentTrigger. */
  intent: Json;
  /** Session state policies read (turn counters, budgets, provenance trust, …); rebuilt identically at replay. */
  state: Json;
  /** Parent session for subagent chains (subagentStart opens a child chain). */
  parentSessionId: string | null;
  createdAt: Date;
  closedAt: Date | null;
  /**
   * The chain head `state` is at, read together with it (null: no entry yet); absent when the store does not say.
   * A step evaluated on this state must be placed at this head.
   */
  stateHead?: ChainHead | null;
}

/** What the pipeline hands to the store on arrival of an evaluated step (ACS §8.2). */
export interface NewContextEntry {
  /** Hashed members: entry_id = step_id = params.request_id, step_type = method, request_hash, timestamp. */
  content: ContextEntryContent;
  /** The full request params as received (signature included), needed by replay and verify. */
  params: Json;
  /**
   * JCS text of `params` when the caller already computed it for request_hash (the pipeline does): stored as is
   * instead of canonicalising params again. The store still checks request_hash against it.
   */
  paramsJcs?: string;
  /**
   * JCS text of `content` (minus entry_hash and previous_hash) when the caller already hashed it for the answer's
   * chain_hash: stored and hashed as is instead of canonicalising the content again.
   */
  contentJcs?: string;
}

export interface ContextEntryRecord {
  sessionId: string;
  seq: number;
  content: ContextEntryContent;
  previousHash: string | null;
  entryHash: string;
  params: Json;
  /** The full signed result delivered to the agent; null until the decision is recorded. */
  result: Json;
  bundleRevision: string | null;
  evaluationDurationMs: number | null;
  createdAt: Date;
}

export interface AppendedEntry {
  seq: number;
  entryHash: string;
  previousHash: string | null;
}

export type ReplayKeyKind = 'request_id' | 'nonce';

export interface ChainHead {
  seq: number;
  entryHash: string;
}

/**
 * Everything one step writes, committed in ONE transaction (ACS §8.2 written before the verdict is delivered,
 * §10.3 replay keys, the session state the next step reads): either all of it is durable or none of it is, so
 * a lost connection can never leave an entry without its decision or a state that disagrees with the chain.
 */
export interface StepCommit {
  /**
   * The head the step was evaluated against (null: empty chain). The caller computed entry_hash (and signed it
   * as chain_hash) from it; if another writer moved the head since, nothing is written ('stale_head').
   */
  expectedHead: ChainHead | null;
  /** request_id and nonce (§10.3); a live duplicate of either writes nothing else ('replay'). */
  replayKeys: { kind: ReplayKeyKind; value: string }[];
  replayKeysExpireAt: Date;
  entry: NewContextEntry;
  /** The signed result delivered to the agent, stored with the entry. */
  decision: {
    result: Json;
    /** JCS text of `result` when the caller has it (the answer's signing canonicalised it): stored as is. */
    resultJcs?: string;
    bundleRevision: string | null;
    evaluationDurationMs: number;
  };
  /**
   * Session row changes; absent members are left as they are. `stateBase` is the state the step started from, as
   * the store holds it at `expectedHead` (getSession's state, or the state this process last committed): with it
   * the store may keep only the change from it to `state`.
   */
  session: { state?: Json; stateBase?: Json; intent?: Json; keyId?: string; closedAt?: Date };
  /** A subagent's session opened by this step (created unless it already exists). */
  childSession?: Omit<SessionRecord, 'createdAt' | 'closedAt'> & { createdAt?: Date };
  /** The AgBOM version an agbom/* step carries (src/store/agbom), written only with its entry. */
  agbom?: AgbomVersionWrite;
}

export type StepCommitOutcome =
  | { status: 'committed'; appended: AppendedEntry }
  /** A live duplicate key: the step was not written. */
  | { status: 'replay'; kind: ReplayKeyKind }
  /** Another writer appended first; `head` is the head now. Nothing was written. */
  | { status: 'stale_head'; head: ChainHead | null };

/** A session's turn at its chain, held while a step is evaluated and committed (GuardianStore.withSessionTurn). */
export interface SessionTurn {
  /** The chain head no other writer can move while the turn is held (null: empty chain). */
  readonly head: ChainHead | null;
  /** Commits the step within the turn (at most once); `expectedHead` should be `head`. */
  commitStep(step: StepCommit): Promise<StepCommitOutcome>;
}

/** A committed batch: which writer, how many items, the transaction's time in seconds. */
export type CommitObserver = (kind: 'step' | 'append' | 'decision', size: number, seconds: number) => void;

export interface GuardianStore {
  /** True on a DurableStore (openStore's), which the bundle lifecycle needs; absent or false on any other store. */
  readonly durable?: boolean;
  /** Applies pending migrations (idempotent). */
  migrate(): Promise<void>;
  close(): Promise<void>;

  createSession(session: Omit<SessionRecord, 'createdAt' | 'closedAt'> & { createdAt?: Date }): Promise<void>;
  getSession(id: string): Promise<SessionRecord | null>;
  updateSessionState(
    id: string,
    patch: Partial<Pick<SessionRecord, 'intent' | 'state' | 'keyId' | 'hello'>>,
  ): Promise<void>;
  closeSession(id: string, at: Date): Promise<void>;

  /**
   * Appends exactly once at the session's head: seq, previous_hash and entry_hash are computed inside one
   * serialised transaction, safe across processes and on a session's first entry.
   */
  appendContextEntry(sessionId: string, entry: NewContextEntry): Promise<AppendedEntry>;
  /** Stores the decision delivered for an entry (the signed result, the bundle revision, the duration). */
  recordDecision(
    sessionId: string,
    seq: number,
    decision: { result: Json; bundleRevision: string | null; evaluationDurationMs: number },
  ): Promise<void>;
  getChainHead(sessionId: string): Promise<ChainHead | null>;
  /** Entries in chain order, in pages (cursor = last seq seen). */
  listContextEntries(sessionId: string, options?: { afterSeq?: number; limit?: number }): Promise<ContextEntryRecord[]>;

  /** Commits a whole step atomically (see StepCommit); group-committed with other sessions' steps. */
  commitStep(sessionId: string, step: StepCommit): Promise<StepCommitOutcome>;
  /**
   * Hears every group-committed batch (the commit metrics), and each step committed in a session's turn (a batch of
   * one); a later call replaces the observer.
   */
  observeCommits?(observer: CommitObserver): void;

  /**
   * Runs `work` holding the session's turn: until it settles, no other writer (in this process, or another replica
   * on the same database) moves the session's chain head, so a step evaluated against `turn.head` cannot go stale.
   * Turns of one session are granted in arrival order. Waits at most `waitMs` for the turn, then rejects with
   * StoreError 'busy' having run nothing.
   */
  withSessionTurn<T>(sessionId: string, waitMs: number, work: (turn: SessionTurn) => Promise<T>): Promise<T>;

  /**
   * Records a request_id or nonce for replay protection (ACS §10.3). Returns false when it was already
   * recorded and has not expired. Durable: survives restarts.
   */
  rememberReplayKey(sessionId: string, kind: ReplayKeyKind, value: string, expiresAt: Date): Promise<boolean>;
}

/** A signed chain head (see src/store/checkpoints.ts for what is signed). */
export interface CheckpointRecord {
  /** The chain the checkpoint covers: its session id. */
  scope: string;
  seq: number;
  headHash: string;
  algorithm: string;
  keyId: string;
  /** Standard base64. */
  signature: string;
  createdAt: Date;
}

/** A chain's head row: seq -1 / headHash null before the first entry; prunedAt set once `audit prune` ran. */
export interface ChainInfo {
  sessionId: string;
  seq: number;
  headHash: string | null;
  prunedAt: Date | null;
}

/**
 * What `openStore()` returns: the pipeline's GuardianStore plus the audit, bundle, fleet and operator calls
 * (`guardian audit …`, `guardian db …`, bundle activation).
 */
export interface DurableStore
  extends GuardianStore,
    PolicyBundleStore,
    ReplicaStore,
    ShadowStore,
    ReplayReadStore,
    AgbomStore,
    ProvenanceIdStore {
  readonly durable: true;
  /** 'pglite' or 'postgres'. */
  readonly driver: 'pglite' | 'postgres';

  /** Chains in session-id order, in pages (cursor = last id seen). */
  listChains(options?: { afterSessionId?: string; limit?: number }): Promise<ChainInfo[]>;
  getChain(sessionId: string): Promise<ChainInfo | null>;
  listCheckpoints(scope: string): Promise<CheckpointRecord[]>;
  /** Signs and stores a checkpoint of the chain's current head now; null when no signer or empty chain. */
  checkpoint(sessionId: string): Promise<CheckpointRecord | null>;
  /** Waits for background checkpoint writes. */
  flush(): Promise<void>;
  /**
   * Deletes the entries, replay keys and session row of sessions closed before `before`; keeps each chain's
   * head row and a checkpoint of its head so `audit verify` still accounts for it.
   */
  pruneClosedSessions(before: Date): Promise<{ sessions: number; entries: number; skipped: string[] }>;
  /** Rows per table of the store, for `guardian db status`. */
  countRows(): Promise<Record<string, number>>;

  /**
   * Raw SQL, for tests only (tamper drills, schema checks): production code reaches the database through the
   * interfaces above (scripts/lint/store-query-for-tests.grit reports a call outside src/store). Rows as plain objects.
   */
  query(sqlText: string, params?: unknown[]): Promise<Record<string, unknown>[]>;
}
