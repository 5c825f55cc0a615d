// Group-committed writes to the audit chain (ACS §8.2): bare appends, and whole steps (replay keys, entry with
// its decision, head move, session rows) in one transaction. The queues batch concurrent sessions' writes;
// each batch is one transaction, retried as a whole on serialization failures and deadlocks.
import { sql } from 'drizzle-orm';
import { entryHashOfJcs } from '../chain/index.ts';
import { type Rows, type StoreDriver, type TransactionQuery, templateOf } from './driver.ts';
import {
  EntryColumns,
  type LockedHead,
  type StepItem,
  appendWrites,
  lockChainHeads,
  lockedStepWrites,
  stepWrites,
} from './entry-writes.ts';
import { StoreError, isRetryableConflict, sqlStateOf, toStoreError } from './errors.ts';
import { GroupCommitQueue, type QueuedItem } from './group-commit.ts';
import type { PreparedAppend, PreparedStep } from './prepare.ts';
import { agbomVersionInsert } from './agbom/versions.ts';
import { contextEntries } from './schema.ts';
import { slot } from './sql.ts';
import type { AppendedEntry, CommitObserver, StepCommitOutcome } from './types.ts';

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

const e = contextEntries;

/** Which of the given entries are stored, at their seq with their hash. */
const LANDED = templateOf(sql`
  select ${e.sessionId}, ${e.seq} from ${e}
    join unnest(${slot('sessionIds', 'text[]')}, ${slot('seqs', 'integer[]')}, ${slot('entryHashes', 'text[]')})
           as v(session_id, seq, entry_hash)
      on ${e.sessionId} = v.session_id and ${e.seq} = v.seq and ${e.entryHash} = v.entry_hash`);

/**
 * A held turn's limits, for this transaction only: how long it waits for the head lock, and how long Postgres lets
 * it sit idle (a replica that stops while holding a turn would otherwise hold up the session on every replica).
 */
const TURN_LIMITS = templateOf(sql`
  select set_config('lock_timeout', ${slot('lockTimeout', 'text')}, true),
         set_config('idle_in_transaction_session_timeout', ${slot('idleTimeout', 'text')}, true)`);

/** A held turn's longest pause between its statements (the step's evaluation and signing happen there). */
const TURN_IDLE_LIMIT_MS = 10_000;

/** A step's expected head, as the head its entry is placed at. */
function expectedHeadOf(p: PreparedStep): LockedHead {
  return { seq: p.expected.seq, headHash: p.expected.headHash, pruned: false, changed: false };
}

export class ChainWriter {
  readonly #appends: GroupCommitQueue<PreparedAppend, AppendedEntry>;
  readonly #steps: GroupCommitQueue<PreparedStep, StepCommitOutcome>;

  constructor(
    private readonly driver: StoreDriver,
    options: { maxBatch: number; maxRetries: number },
  ) {
    this.#appends = new GroupCommitQueue(
      (batch) => this.#commitAppends(batch),
      options.maxBatch,
      driver.appendConcurrency,
    );
    // One step per session per batch: each is placed at the head it was evaluated against, which a second step of
    // the same session in the batch would see moved (it goes in the next batch and comes back stale_head).
    this.#steps = new GroupCommitQueue(
      (batch) => this.#commitSteps(batch),
      options.maxBatch,
      driver.appendConcurrency,
      true,
    );
    this.#maxRetries = options.maxRetries;
  }

  readonly #maxRetries: number;
  /** The store's commit metrics (observeCommits), told of the steps committed in a held turn too. */
  #observer: CommitObserver | undefined;

  append(sessionId: string, prepared: PreparedAppend): Promise<AppendedEntry> {
    return this.#appends.enqueue(sessionId, prepared);
  }

  step(sessionId: string, prepared: PreparedStep): Promise<StepCommitOutcome> {
    return this.#steps.enqueue(sessionId, prepared);
  }

  /**
   * Runs `work` holding the session's head row lock in a transaction of its own (a session's turn on a database
   * other processes share): every other writer's transaction waits at that lock until this one ends. `work` gets
   * the head as locked, and may commit one step within the transaction, which ends it. Waiting longer than `waitMs`
   * for the lock rejects with StoreError 'busy'.
   */
  async holdHead<T>(
    sessionId: string,
    waitMs: number,
    work: (head: LockedHead, commit: (p: PreparedStep) => Promise<StepCommitOutcome>) => Promise<T>,
  ): Promise<T> {
    let settled: { value: T } | { error: unknown } | undefined;
    try {
      await this.driver.transaction(async (query) => {
        const [, heads] = await Promise.all([
          query(
            TURN_LIMITS({ lockTimeout: `${Math.max(1, Math.ceil(waitMs))}ms`, idleTimeout: `${TURN_IDLE_LIMIT_MS}ms` }),
          ),
          lockChainHeads(query, [sessionId]),
        ]);
        const head = heads.get(sessionId);
        if (!head) throw new StoreError('unavailable', `chain head for ${sessionId} was not returned`);
        let committed = false;
        const commit = async (p: PreparedStep): Promise<StepCommitOutcome> => {
          if (committed) throw new StoreError('conflict', `a turn of session ${sessionId} commits one step`);
          committed = true;
          const started = performance.now();
          const [outcome] = await this.#commitSteps([{ key: sessionId, value: p }], { sessionId, query, head }).then(
            (outcomes) => {
              // A batch of one, timed from its statements to its COMMIT (the turn's wait for the head lock and
              // the step's evaluation are not the commit's): counted like a group-committed batch.
              this.#observer?.('step', 1, (performance.now() - started) / 1000);
              return outcomes;
            },
            (err: unknown) => {
              // The database aborted the turn's transaction (deadlock, serialization): nothing was written, and
              // the step is evaluated again in a turn of its own.
              if (isRetryableConflict(err)) return [{ status: 'stale_head', head: null } as const];
              throw toStoreError(err, 'commitStep');
            },
          );
          if (outcome instanceof Error) throw outcome;
          return outcome;
        };
        // What `work` throws is its own (a refusal, an answer's error), not the transaction's: it ends normally.
        settled = await work(head, commit).then(
          (value) => ({ value }),
          (error: unknown) => ({ error }),
        );
      });
    } catch (err) {
      if (sqlStateOf(err) === '55P03')
        throw new StoreError('busy', `another writer held session ${sessionId} for longer than ${waitMs} ms`);
      // Once `work` has settled, only ending a transaction it wrote nothing in can fail here (a commit within the
      // turn reports its own outcome): the work's outcome stands.
      if (!settled) throw toStoreError(err, 'session turn');
    }
    if (!settled) throw new StoreError('unavailable', `the turn of session ${sessionId} ended without its work`);
    if ('error' in settled) throw settled.error;
    return settled.value;
  }

  observe(observer: CommitObserver): void {
    this.#observer = observer;
    this.#appends.onBatch = (size, seconds) => observer('append', size, seconds);
    this.#steps.onBatch = (size, seconds) => observer('step', size, seconds);
  }

  async idle(): Promise<void> {
    await this.#appends.idle();
    await this.#steps.idle();
  }

  /** Three statements whatever the batch size: lock the heads, write the entries and move the heads. */
  async #commitAppends(batch: QueuedItem<PreparedAppend, AppendedEntry>[]): Promise<(AppendedEntry | Error)[]> {
    const ids = [...new Set(batch.map((b) => b.key))].sort();
    return this.#retrying('appendContextEntry', () =>
      this.driver.transaction(async (query) => {
        const heads = await lockChainHeads(query, ids);
        const cols = new EntryColumns();
        const outcomes = batch.map((item): AppendedEntry | Error => {
          const head = heads.get(item.key);
          if (!head) return new StoreError('unavailable', `chain head for ${item.key} was not returned`);
          if (head.pruned) return new StoreError('conflict', `session ${item.key} was pruned; its chain is closed`);
          return cols.add(item.key, head, item.value);
        });
        if (cols.length > 0) await query(appendWrites(cols, heads), { last: true });
        return outcomes;
      }),
    );
  }

  async #retrying<T>(what: string, work: () => Promise<T>): Promise<T> {
    for (let attempt = 0; ; attempt++) {
      try {
        return await work();
      } catch (err) {
        if (isRetryableConflict(err) && attempt < this.#maxRetries) {
          await sleep(Math.random() * Math.min(50, 2 ** attempt));
          continue;
        }
        throw toStoreError(err, what);
      }
    }
  }

  /**
   * Whole steps. A step placed at an existing head (its session has a head row) goes in one statement of its own
   * transaction that locks the heads itself (the driver's autocommit); the others in a transaction that creates and
   * locks their heads first: two statements, sent in one round trip. A step whose head moved writes nothing; one
   * whose key is a live duplicate writes no entry (the keys it brought fresh stay recorded, §10.3); the others
   * commit. `within`: a held turn's transaction, whose head is locked already.
   */
  async #commitSteps(batch: StepItem[], within?: HeldHead): Promise<(StepCommitOutcome | Error)[]> {
    if (within || !this.driver.autocommit) return this.#settling(batch, within);
    const placed: StepItem[] = [];
    const first: StepItem[] = [];
    // AgBOM versions are written by the transactional path's statement behind the step writes (rare: a changed BOM).
    for (const item of batch) (item.value.expected.headHash !== null && !item.value.agbom ? placed : first).push(item);
    if (first.length === 0) return this.#settling(placed, undefined, true);
    if (placed.length === 0) return this.#settling(first);
    // Disjoint sessions (one step per session per batch), so the two cannot wait on each other's head locks.
    const [a, b] = await Promise.all([
      this.#settling(placed, undefined, true).catch((err: unknown) =>
        placed.map(() => toStoreError(err, 'commitStep')),
      ),
      this.#settling(first).catch((err: unknown) => first.map(() => toStoreError(err, 'commitStep'))),
    ]);
    const outcomes = new Map<StepItem, StepCommitOutcome | Error>();
    placed.forEach((item, i) => outcomes.set(item, a[i]));
    first.forEach((item, i) => outcomes.set(item, b[i]));
    return batch.map((item) => outcomes.get(item) as StepCommitOutcome | Error);
  }

  /** One commit of `batch` (autocommitted or not); a failure is settled against what landed. */
  async #settling(batch: StepItem[], within?: HeldHead, autocommit = false): Promise<(StepCommitOutcome | Error)[]> {
    try {
      return await (autocommit ? this.#autocommitSteps(batch) : this.#commitStepsOnce(batch, within));
    } catch (err) {
      const settled = await this.#settleInDoubt(batch).catch(() => null);
      if (!settled) throw err;
      return settled.map((outcome) => outcome ?? toStoreError(err, 'commitStep'));
    }
  }

  /**
   * A connection lost while COMMIT was under way leaves the outcome in doubt: the transaction may have committed.
   * Look before reporting a failure, so the agent is not told "denied, not recorded" about a step the chain holds
   * with another decision. Each step can only have landed at its expected head, with the hash it was signed with.
   * Null when nothing of the batch landed (then nothing did: the batch was one transaction).
   */
  async #settleInDoubt(batch: StepItem[]): Promise<(StepCommitOutcome | null)[] | null> {
    const placed = batch.map((item) => {
      const { seq, headHash } = item.value.expected;
      return {
        sessionId: item.key,
        seq: seq + 1,
        previousHash: headHash,
        entryHash: entryHashOfJcs(item.value.append.contentJcs, headHash),
      };
    });
    const rows = await this.driver.execute(
      LANDED({
        sessionIds: placed.map((p) => p.sessionId),
        seqs: placed.map((p) => p.seq),
        entryHashes: placed.map((p) => p.entryHash),
      }),
    );
    if (rows.length === 0) return null;
    const landed = new Set(rows.map((r) => `${String(r.session_id)}#${Number(r.seq)}`));
    return placed.map((p) =>
      landed.has(`${p.sessionId}#${p.seq}`)
        ? { status: 'committed', appended: { seq: p.seq, entryHash: p.entryHash, previousHash: p.previousHash } }
        : null,
    );
  }

  /** In a transaction of its own (retried on conflicts), or as the last statement of `within`. */
  async #commitStepsOnce(batch: StepItem[], within?: HeldHead): Promise<(StepCommitOutcome | Error)[]> {
    // The queue batches one step per session; sorted ids make every batch lock heads in the same order.
    const ids = batch.map((item) => item.key).sort();
    // Each step can only land at the head it expects, so its entry (and hash) is known before the transaction.
    const cols = new EntryColumns();
    const placed = batch.map((item) => cols.add(item.key, expectedHeadOf(item.value), item.value.append, item.value));
    const writes = stepWrites(batch, cols, new Date());
    // AgBOM versions (ACS Inspect) land in the same transaction, joined on the entries as they landed.
    const agbom = agbomVersionInsert(
      batch.map((item, i) => ({ sessionId: item.key, appended: placed[i], version: item.value.agbom })),
    );
    const body = async (query: TransactionQuery): Promise<(StepCommitOutcome | Error)[]> => {
      // In a held turn the head is locked already, and as the turn found it: the lock is not taken again.
      const [heads, rows] = await Promise.all([
        within ? new Map([[within.sessionId, { ...within.head }]]) : lockChainHeads(query, ids),
        query(writes, { last: agbom === null }),
        agbom && query(agbom, { last: true }),
      ]);
      return stepOutcomes(batch, placed, heads, rows);
    };
    return within ? body(within.query) : this.#retrying('commitStep', () => this.driver.transaction(body));
  }

  /** The batch as LOCKED_STEP_WRITES, one statement in a transaction of its own (retried on conflicts). */
  async #autocommitSteps(batch: StepItem[]): Promise<(StepCommitOutcome | Error)[]> {
    const autocommit = this.driver.autocommit as NonNullable<StoreDriver['autocommit']>;
    const ids = batch.map((item) => item.key).sort();
    const cols = new EntryColumns();
    const placed = batch.map((item) => cols.add(item.key, expectedHeadOf(item.value), item.value.append, item.value));
    const writes = lockedStepWrites(batch, cols, new Date(), ids);
    const rows = await this.#retrying('commitStep', () => autocommit(writes));
    const heads = new Map<string, LockedHead>();
    const written: Rows = [];
    for (const r of rows) {
      if (r.kind !== 'head') written.push(r);
      else
        heads.set(String(r.session_id), {
          seq: Number(r.seq),
          headHash: r.value === null ? null : String(r.value),
          pruned: r.pruned === true,
          changed: false,
        });
    }
    // A head row gone since the step was evaluated (nothing removes one but pruning): placed at a head that is not there.
    for (const item of batch)
      if (!heads.has(item.key)) heads.set(item.key, { seq: -1, headHash: null, pruned: false, changed: false });
    return stepOutcomes(batch, placed, heads, written);
  }
}

/** A held turn's transaction and the head it locked (ChainWriter.holdHead). */
interface HeldHead {
  sessionId: string;
  query: TransactionQuery;
  head: LockedHead;
}

/**
 * Each step's outcome from the heads as locked and the rows the step writes returned (the committed steps' sessions
 * with kind null, then the replay keys written).
 */
function stepOutcomes(
  batch: StepItem[],
  placed: AppendedEntry[],
  heads: Map<string, LockedHead>,
  rows: Rows,
): (StepCommitOutcome | Error)[] {
  const committed = new Set<string>();
  const fresh = new Set<string>();
  for (const r of rows) {
    if (r.kind === null) committed.add(String(r.session_id));
    else fresh.add(`${String(r.session_id)}\u0000${String(r.kind)}\u0000${String(r.value)}`);
  }
  return batch.map((item, i): StepCommitOutcome | Error => {
    if (committed.has(item.key)) return { status: 'committed', appended: placed[i] };
    const head = heads.get(item.key);
    const p = item.value;
    if (!head) return new StoreError('unavailable', `chain head for ${item.key} was not returned`);
    if (head.pruned) return new StoreError('conflict', `session ${item.key} was pruned; its chain is closed`);
    if (head.seq !== p.expected.seq || head.headHash !== p.expected.headHash) {
      return {
        status: 'stale_head',
        head: head.headHash === null ? null : { seq: head.seq, entryHash: head.headHash },
      };
    }
    const taken = p.keys.find((k) => !fresh.has(`${item.key}\u0000${k.kind}\u0000${k.value}`));
    // Placed at its head with every key fresh, the statement would have written it.
    return taken
      ? { status: 'replay', kind: taken.kind }
      : new StoreError('unavailable', `step for ${item.key} was not written`);
  });
}
