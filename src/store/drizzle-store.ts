// The DurableStore over Drizzle, written once for both drivers (src/store/pglite, src/store/postgres): this class
// wires the concerns (sessions, chain writes, decisions, checkpoints, reads, bundles, fleet, AgBOM versions) to
// one driver.
import type { Json } from '../json.ts';
import { AgbomVersions } from './agbom/versions.ts';
import { PolicyBundles } from './bundles.ts';
import { ChainWriter } from './chain-writes.ts';
import { Checkpointer } from './checkpointing.ts';
import { DecisionWriter } from './decisions.ts';
import type { StoreDatabase, StoreDriver } from './driver.ts';
import { StoreError, toStoreError } from './errors.ts';
import { Fleet } from './fleet.ts';
import type { StoreOptions } from './options.ts';
import { type NewSession, type PreparedStep, prepareAppend, prepareStep } from './prepare.ts';
import { ProvenanceIdReads } from './provenance-ids.ts';
import { pruneClosedSessions } from './prune.ts';
import { ChainReads } from './reads.ts';
import { SessionRows } from './sessions.ts';
import { SessionTurns } from './session-turns.ts';
import type {
  AgbomVersionRecord,
  AppendedEntry,
  ChainHead,
  ChainInfo,
  CheckpointRecord,
  CommitObserver,
  ContextEntryRecord,
  DurableStore,
  EntryTime,
  LifecycleAuditRecord,
  NewContextEntry,
  PolicyActivationEntry,
  PolicyActivationRecord,
  PolicyBundleInfo,
  PolicyBundleRecord,
  ProvenanceEntryRow,
  ReplayKeyKind,
  ReplicaHeartbeat,
  SessionRecord,
  SessionTurn,
  ShadowDifferenceRecord,
  StepCommit,
  StepCommitOutcome,
  StopListening,
  StoredEntryRow,
} from './types.ts';
import { requireId } from './values.ts';

export class DrizzleGuardianStore implements DurableStore {
  readonly durable = true;
  readonly driver: 'pglite' | 'postgres';
  readonly #d: StoreDriver;
  readonly #stateCheckpointEvery: number;
  readonly #sessions: SessionRows;
  readonly #chain: ChainWriter;
  readonly #decisions: DecisionWriter;
  readonly #checkpoints: Checkpointer;
  readonly #reads: ChainReads;
  readonly #bundles: PolicyBundles;
  readonly #fleet: Fleet;
  readonly #agbom: AgbomVersions;
  readonly #provenanceIds: ProvenanceIdReads;
  readonly #turns: SessionTurns;
  #lastReplayPurge = Date.now();
  #closed = false;

  constructor(driver: StoreDriver, options: StoreOptions = {}) {
    this.driver = driver.name;
    this.#d = driver;
    const every = Math.floor(options.stateCheckpointEvery ?? 32);
    this.#stateCheckpointEvery = Number.isFinite(every) && every > 1 ? every : 1;
    const maxBatch = options.maxBatch ?? 256;
    this.#sessions = new SessionRows(driver);
    this.#chain = new ChainWriter(driver, { maxBatch, maxRetries: options.maxRetries ?? 8 });
    this.#decisions = new DecisionWriter(driver, maxBatch);
    this.#checkpoints = new Checkpointer(driver.db, options.checkpoints, options.onBackgroundError);
    this.#reads = new ChainReads(driver);
    this.#bundles = new PolicyBundles(driver);
    this.#fleet = new Fleet(driver);
    this.#agbom = new AgbomVersions(driver);
    this.#provenanceIds = new ProvenanceIdReads(driver);
    this.#turns = new SessionTurns(driver.heldTransactions ?? null);
  }

  /** The Drizzle handle, for the operator read queries in src/store/admin/ (the only other user of it). */
  get database(): StoreDatabase {
    return this.#d.db;
  }

  async migrate(): Promise<void> {
    try {
      await this.#d.migrate();
    } catch (err) {
      throw toStoreError(err, 'migrate');
    }
  }

  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    this.#checkpoints.stop();
    await this.#chain.idle();
    await this.#decisions.idle();
    await this.#checkpoints.checkpointStale(0);
    await this.flush();
    await this.#d.close();
  }

  /** Runs `work` on an open store; a call on a closed one is refused. */
  #open<T>(work: () => Promise<T>): Promise<T> {
    if (this.#closed) return Promise.reject(new StoreError('unavailable', 'store is closed'));
    try {
      return work();
    } catch (err) {
      return Promise.reject(err);
    }
  }

  // ---------------------------------------------------------------- sessions

  createSession(session: NewSession): Promise<void> {
    return this.#open(() => this.#sessions.create(session));
  }

  getSession(id: string): Promise<SessionRecord | null> {
    return this.#open(() => this.#sessions.get(id));
  }

  updateSessionState(
    id: string,
    patch: Partial<Pick<SessionRecord, 'intent' | 'state' | 'keyId' | 'hello'>>,
  ): Promise<void> {
    return this.#open(() => this.#sessions.update(id, patch));
  }

  closeSession(id: string, at: Date): Promise<void> {
    return this.#open(async () => {
      await this.#sessions.close(id, at);
      // A closed chain gets a final signed head, so a later truncation or rewrite is detectable. The head is read
      // from the database: appends the caller awaited are committed (no global queue wait, which could starve).
      if (this.#checkpoints.enabled) await this.checkpoint(id);
    });
  }

  rememberReplayKey(sessionId: string, kind: ReplayKeyKind, value: string, expiresAt: Date): Promise<boolean> {
    return this.#open(async () => {
      const fresh = await this.#sessions.rememberReplayKey(sessionId, kind, value, expiresAt);
      this.#purgeExpiredReplayKeys();
      return fresh;
    });
  }

  /** At most once a minute, in the background. */
  #purgeExpiredReplayKeys(): void {
    const now = new Date();
    if (now.getTime() - this.#lastReplayPurge <= 60_000) return;
    this.#lastReplayPurge = now.getTime();
    this.#checkpoints.track(this.#sessions.purgeExpiredReplayKeys(now));
  }

  // ---------------------------------------------------------------- audit chain writes

  appendContextEntry(sessionId: string, entry: NewContextEntry): Promise<AppendedEntry> {
    return this.#open(async () => {
      requireId(sessionId, 'session id');
      const prepared = prepareAppend(entry);
      const appended = await this.#outsideTurns(sessionId, () => this.#chain.append(sessionId, prepared));
      this.#checkpoints.afterAppend(sessionId, appended);
      return appended;
    });
  }

  observeCommits(observer: CommitObserver): void {
    this.#chain.observe(observer);
    this.#decisions.observe(observer);
  }

  commitStep(sessionId: string, step: StepCommit): Promise<StepCommitOutcome> {
    return this.#open(async () => {
      requireId(sessionId, 'session id');
      const prepared = prepareStep(step, this.#stateCheckpointEvery);
      return this.#stepCommitted(
        sessionId,
        step,
        await this.#outsideTurns(sessionId, () => this.#chain.step(sessionId, prepared)),
      );
    });
  }

  withSessionTurn<T>(sessionId: string, waitMs: number, work: (turn: SessionTurn) => Promise<T>): Promise<T> {
    return this.#open(async () => {
      requireId(sessionId, 'session id');
      const deadline = performance.now() + Math.max(0, waitMs);
      return this.#turns.run(sessionId, deadline, async () => {
        const commitStep = (commit: (p: PreparedStep) => Promise<StepCommitOutcome>) => async (step: StepCommit) =>
          this.#stepCommitted(sessionId, step, await commit(prepareStep(step, this.#stateCheckpointEvery)));
        // Only this process writes to a database no other process shares: its place in the queue is the turn.
        if (this.#d.heldTransactions === undefined) {
          const chain = await this.#reads.getChain(sessionId);
          const head = chain?.headHash ? { seq: chain.seq, entryHash: chain.headHash } : null;
          return work({ head, commitStep: commitStep((p) => this.#chain.step(sessionId, p)) });
        }
        return this.#chain.holdHead(sessionId, deadline - performance.now(), (locked, commit) =>
          work({
            head: locked.headHash === null ? null : { seq: locked.seq, entryHash: locked.headHash },
            commitStep: commitStep(commit),
          }),
        );
      });
    });
  }

  /** Runs a write of the session's chain after any turn of it held in this process (none: at once). */
  #outsideTurns<T>(sessionId: string, write: () => Promise<T>): Promise<T> {
    return this.#turns.taken(sessionId) ? this.#turns.run(sessionId, Number.POSITIVE_INFINITY, write) : write();
  }

  /** What follows a step's commit, in a turn or not: replay-key purge, checkpoints. */
  async #stepCommitted(sessionId: string, step: StepCommit, outcome: StepCommitOutcome): Promise<StepCommitOutcome> {
    this.#purgeExpiredReplayKeys();
    if (outcome.status !== 'committed') return outcome;
    this.#checkpoints.afterAppend(sessionId, outcome.appended);
    // A sealed chain gets a final signed head at once, so a later truncation or rewrite is detectable.
    if (step.session.closedAt !== undefined && this.#checkpoints.enabled)
      await this.#checkpoints.write(sessionId, outcome.appended.seq, outcome.appended.entryHash);
    return outcome;
  }

  recordDecision(
    sessionId: string,
    seq: number,
    decision: { result: Json; bundleRevision: string | null; evaluationDurationMs: number },
  ): Promise<void> {
    return this.#open(() => this.#decisions.record(sessionId, seq, decision));
  }

  // ---------------------------------------------------------------- audit chain reads

  async getChainHead(sessionId: string): Promise<ChainHead | null> {
    const chain = await this.getChain(sessionId);
    return chain && chain.headHash !== null ? { seq: chain.seq, entryHash: chain.headHash } : null;
  }

  getChain(sessionId: string): Promise<ChainInfo | null> {
    return this.#open(() => this.#reads.getChain(sessionId));
  }

  listChains(options?: { afterSessionId?: string; limit?: number }): Promise<ChainInfo[]> {
    return this.#open(() => this.#reads.listChains(options));
  }

  listContextEntries(
    sessionId: string,
    options?: { afterSeq?: number; limit?: number },
  ): Promise<ContextEntryRecord[]> {
    return this.#open(() => this.#reads.listContextEntries(sessionId, options));
  }

  readStoredEntries(sessionId: string, afterSeq: number, limit: number): Promise<StoredEntryRow[]> {
    return this.#open(() => this.#reads.readStoredEntries(sessionId, afterSeq, limit));
  }

  readPackedEntries(sessionId: string, afterSeq: number, limit: number): Promise<string[]> {
    return this.#open(() => this.#reads.readPackedEntries(sessionId, afterSeq, limit));
  }

  countRows(): Promise<Record<string, number>> {
    return this.#open(() => this.#reads.countRows());
  }

  // ---------------------------------------------------------------- checkpoints and pruning

  listCheckpoints(scope: string): Promise<CheckpointRecord[]> {
    return this.#open(() => this.#checkpoints.list(scope));
  }

  checkpoint(sessionId: string): Promise<CheckpointRecord | null> {
    return this.#open(async () => {
      const head = await this.#reads.getChain(sessionId);
      if (!this.#checkpoints.enabled || !head || head.headHash === null) return null;
      return this.#checkpoints.write(sessionId, head.seq, head.headHash);
    });
  }

  async flush(): Promise<void> {
    await this.#chain.idle();
    await this.#decisions.idle();
    await this.#checkpoints.idle();
  }

  pruneClosedSessions(before: Date): Promise<{ sessions: number; entries: number; skipped: string[] }> {
    return this.#open(() => pruneClosedSessions(this.#d, this.#reads, this.#checkpoints, before));
  }

  // ---------------------------------------------------------------- bundle registry

  putPolicyBundle(bundle: Omit<PolicyBundleRecord, 'createdAt'>): Promise<void> {
    return this.#open(() => this.#bundles.putPolicyBundle(bundle));
  }

  getPolicyBundle(sha256: string): Promise<PolicyBundleRecord | null> {
    return this.#open(() => this.#bundles.getPolicyBundle(sha256));
  }

  getPolicyBundleInfo(sha256: string): Promise<PolicyBundleInfo | null> {
    return this.#open(() => this.#bundles.getPolicyBundleInfo(sha256));
  }

  listPolicyBundles(): Promise<PolicyBundleInfo[]> {
    return this.#open(() => this.#bundles.listPolicyBundles());
  }

  findPolicyBundleByRevision(revision: string): Promise<PolicyBundleInfo | null> {
    return this.#open(() => this.#bundles.findPolicyBundleByRevision(revision));
  }

  readPolicyBundleBytes(sha256: string): Promise<Uint8Array | null> {
    return this.#open(() => this.#bundles.readPolicyBundleBytes(sha256));
  }

  activatePolicyBundle(sha256: string, activatedBy: string | null = null): Promise<number> {
    return this.#open(() => this.#bundles.activatePolicyBundle(sha256, activatedBy));
  }

  getActivePolicyBundle(): Promise<PolicyActivationRecord | null> {
    return this.#open(() => this.#bundles.getActivePolicyBundle());
  }

  listPolicyActivations(limit: number): Promise<PolicyActivationEntry[]> {
    return this.#open(() => this.#bundles.listPolicyActivations(limit));
  }

  appendLifecycleAudit(record: Omit<LifecycleAuditRecord, 'at'>): Promise<void> {
    return this.#open(() => this.#bundles.appendLifecycleAudit(record));
  }

  listLifecycleAudit(limit: number): Promise<LifecycleAuditRecord[]> {
    return this.#open(() => this.#bundles.listLifecycleAudit(limit));
  }

  // ---------------------------------------------------------------- fleet

  heartbeatReplica(heartbeat: ReplicaHeartbeat): Promise<void> {
    return this.#open(() => this.#fleet.heartbeatReplica(heartbeat));
  }

  listReplicaHeartbeats(): Promise<{ replicas: (ReplicaHeartbeat & { heartbeatAt: Date })[]; now: Date }> {
    return this.#open(() => this.#fleet.listReplicaHeartbeats());
  }

  notifyReplicas(sender: string): Promise<void> {
    return this.#open(() => this.#fleet.notifyReplicas(sender));
  }

  listenReplicas(onNotify: () => void, onError: (err: Error) => void): Promise<StopListening | null> {
    return this.#open(() => this.#fleet.listenReplicas(onNotify, onError));
  }

  getShadowTarget(): Promise<string | null> {
    return this.#open(() => this.#fleet.getShadowTarget());
  }

  setShadowTarget(sha256: string | null, setBy: string): Promise<void> {
    return this.#open(() => this.#fleet.setShadowTarget(sha256, setBy));
  }

  recordShadowDifference(difference: ShadowDifferenceRecord): Promise<void> {
    return this.#open(() => this.#fleet.recordShadowDifference(difference));
  }

  countShadowDifferences(
    shadowSha256: string,
  ): Promise<{ method: string; enforcing: string | null; shadow: string | null; count: number }[]> {
    return this.#open(() => this.#fleet.countShadowDifferences(shadowSha256));
  }

  listShadowDifferences(shadowSha256: string, limit: number): Promise<ShadowDifferenceRecord[]> {
    return this.#open(() => this.#fleet.listShadowDifferences(shadowSha256, limit));
  }

  // ---------------------------------------------------------------- AgBOM versions

  listAgbomVersions(sessionId: string, atSeq?: number): Promise<AgbomVersionRecord[]> {
    return this.#open(() => this.#agbom.listAgbomVersions(sessionId, atSeq));
  }

  agbomVersionsInForce(sessionId: string, atSeq?: number): Promise<AgbomVersionRecord[]> {
    return this.#open(() => this.#agbom.agbomVersionsInForce(sessionId, atSeq));
  }

  readAgbomEntries(sessionId: string): Promise<StoredEntryRow[]> {
    return this.#open(() => this.#agbom.readAgbomEntries(sessionId));
  }

  getEntryTime(sessionId: string, seq: number): Promise<EntryTime | null> {
    return this.#open(() => this.#agbom.getEntryTime(sessionId, seq));
  }

  // ---------------------------------------------------------------- provenance ids

  readProvenanceEntries(
    sessionId: string,
    afterSeq: number,
    throughSeq: number,
    ids?: readonly string[],
  ): Promise<ProvenanceEntryRow[]> {
    return this.#open(() => this.#provenanceIds.readProvenanceEntries(sessionId, afterSeq, throughSeq, ids));
  }

  // ---------------------------------------------------------------- tests only

  query(sqlText: string, params: unknown[] = []): Promise<Record<string, unknown>[]> {
    return this.#open(() => this.#d.query(sqlText, params));
  }
}
