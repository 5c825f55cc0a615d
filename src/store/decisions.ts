// Decisions recorded after their entry (recordDecision), group-committed: one UPDATE … FROM unnest(…) per
// batch, itself atomic. Decisions are write-once: what was delivered to the agent cannot be replaced.
import { sql } from 'drizzle-orm';
import { type StoreDriver, templateOf } from './driver.ts';
import { StoreError, toStoreError } from './errors.ts';
import { GroupCommitQueue, type QueuedItem } from './group-commit.ts';
import { contextEntries } from './schema.ts';
import { names, slot } from './sql.ts';
import type { Json } from '../json.ts';
import type { CommitObserver } from './types.ts';
import { jcsOf } from './values.ts';

interface PendingDecision {
  sessionId: string;
  seq: number;
  resultJcs: string;
  bundleRevision: string | null;
  evaluationDurationMs: number;
}

type DecisionOutcome = 'recorded' | 'exists' | 'missing';

const keyOf = (r: Record<string, unknown>) => `${String(r.session_id)}#${Number(r.seq)}`;

const e = contextEntries;

/** Writes each decision whose entry has none yet; returns the entries written. */
const RECORD = templateOf(sql`
  update ${e}
     set ${names(e.resultJcs)} = v.result_jcs, ${names(e.bundleRevision)} = v.bundle_revision,
         ${names(e.evaluationDurationMs)} = v.ms
    from unnest(${slot('sessionIds', 'text[]')}, ${slot('seqs', 'integer[]')}, ${slot('results', 'text[]')},
                ${slot('revisions', 'text[]')}, ${slot('durations', 'double precision[]')})
         as v(session_id, seq, result_jcs, bundle_revision, ms)
   where ${e.sessionId} = v.session_id and ${e.seq} = v.seq and ${e.resultJcs} is null
  returning ${e.sessionId}, ${e.seq}`);

/** Which of the entries exist. */
const PROBE = templateOf(sql`
  select ${e.sessionId}, ${e.seq} from ${e}
    join unnest(${slot('sessionIds', 'text[]')}, ${slot('seqs', 'integer[]')}) as v(session_id, seq)
      on ${e.sessionId} = v.session_id and ${e.seq} = v.seq`);

export class DecisionWriter {
  readonly #queue: GroupCommitQueue<PendingDecision, DecisionOutcome>;

  constructor(
    private readonly driver: StoreDriver,
    maxBatch: number,
  ) {
    this.#queue = new GroupCommitQueue((batch) => this.#commit(batch), maxBatch, driver.appendConcurrency);
  }

  observe(observer: CommitObserver): void {
    this.#queue.onBatch = (size, seconds) => observer('decision', size, seconds);
  }

  async record(
    sessionId: string,
    seq: number,
    decision: { result: Json; bundleRevision: string | null; evaluationDurationMs: number },
  ): Promise<void> {
    const resultJcs = jcsOf(decision.result, 'result');
    if (!Number.isFinite(decision.evaluationDurationMs))
      throw new StoreError('invalid_input', 'evaluationDurationMs must be a finite number');
    if (!Number.isInteger(seq) || seq < 0) throw new StoreError('invalid_input', 'seq must be a non-negative integer');
    const outcome = await this.#queue.enqueue(`${sessionId}#${seq}`, {
      sessionId,
      seq,
      resultJcs,
      bundleRevision: decision.bundleRevision ?? null,
      evaluationDurationMs: decision.evaluationDurationMs,
    });
    if (outcome === 'recorded') return;
    throw outcome === 'exists'
      ? new StoreError('conflict', `a decision is already recorded for ${sessionId}#${seq}`)
      : new StoreError('not_found', `no entry ${sessionId}#${seq}`);
  }

  idle(): Promise<void> {
    return this.#queue.idle();
  }

  async #commit(all: QueuedItem<PendingDecision, DecisionOutcome>[]): Promise<DecisionOutcome[]> {
    // The same entry twice in one batch: only the first may write (an UPDATE … FROM would pick either).
    const firstOf = new Map<string, number>();
    all.forEach((b, i) => firstOf.has(b.key) || firstOf.set(b.key, i));
    const batch = all.filter((b, i) => firstOf.get(b.key) === i);
    let updated: Set<string>;
    let existing = new Set<string>();
    try {
      const rows = await this.driver.execute(
        RECORD({
          sessionIds: batch.map((b) => b.value.sessionId),
          seqs: batch.map((b) => b.value.seq),
          results: batch.map((b) => b.value.resultJcs),
          revisions: batch.map((b) => b.value.bundleRevision),
          durations: batch.map((b) => b.value.evaluationDurationMs),
        }),
      );
      updated = new Set(rows.map(keyOf));
      const missing = batch.filter((b) => !updated.has(b.key));
      if (missing.length > 0) {
        const probe = await this.driver.execute(
          PROBE({ sessionIds: missing.map((b) => b.value.sessionId), seqs: missing.map((b) => b.value.seq) }),
        );
        existing = new Set(probe.map(keyOf));
      }
    } catch (err) {
      throw toStoreError(err, 'recordDecision');
    }
    return all.map((b, i) => {
      const outcome: DecisionOutcome = updated.has(b.key) ? 'recorded' : existing.has(b.key) ? 'exists' : 'missing';
      return outcome === 'recorded' && firstOf.get(b.key) !== i ? 'exists' : outcome;
    });
  }
}
