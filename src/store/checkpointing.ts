// When signed checkpoints of chain heads are written: every `everyEntries` entries, after `everyMs` without
// one, when a chain is sealed, and before a chain is pruned. Writes outside a caller's path run in the
// background and report failures instead of throwing.
import { asc, eq } from 'drizzle-orm';
import type { CheckpointPolicy } from './checkpoints.ts';
import { signCheckpoint } from './checkpoints.ts';
import type { StoreDatabase } from './driver.ts';
import { type StoreError, toStoreError } from './errors.ts';
import { checkpoints } from './schema.ts';
import type { AppendedEntry, CheckpointRecord } from './types.ts';

export class Checkpointer {
  /** Heads appended by this process and not yet checkpointed (for the time-based checkpoint). */
  readonly #uncheckpointed = new Map<string, { seq: number; headHash: string; since: number }>();
  readonly #background = new Set<Promise<unknown>>();
  #timer: NodeJS.Timeout | undefined;

  constructor(
    private readonly db: StoreDatabase,
    private readonly policy: CheckpointPolicy | undefined,
    private readonly onBackgroundError: ((err: StoreError) => void) | undefined,
  ) {
    const everyMs = policy?.everyMs ?? 10_000;
    if (policy && everyMs > 0) {
      this.#timer = setInterval(() => this.checkpointStale(everyMs), Math.max(50, Math.floor(everyMs / 2)));
      this.#timer.unref();
    }
  }

  get enabled(): boolean {
    return this.policy !== undefined;
  }

  /** After an entry landed: checkpoint now when its seq is due, else remember the head for the timer. */
  afterAppend(sessionId: string, appended: AppendedEntry): void {
    const policy = this.policy;
    if (!policy) return;
    const every = policy.everyEntries ?? 64;
    if (every > 0 && (appended.seq + 1) % every === 0) {
      this.#uncheckpointed.delete(sessionId);
      this.track(this.write(sessionId, appended.seq, appended.entryHash));
    } else if ((policy.everyMs ?? 10_000) <= 0) {
      // No time-based checkpoints: nothing to remember (the map would otherwise grow with every session).
    } else {
      const known = this.#uncheckpointed.get(sessionId);
      if (!known)
        this.#uncheckpointed.set(sessionId, { seq: appended.seq, headHash: appended.entryHash, since: Date.now() });
      else Object.assign(known, { seq: appended.seq, headHash: appended.entryHash });
    }
  }

  /** Signs and stores a checkpoint of `scope` at (seq, headHash) now; null without a signer. */
  async write(scope: string, seq: number, headHash: string): Promise<CheckpointRecord | null> {
    const policy = this.policy;
    if (!policy) return null;
    this.#uncheckpointed.delete(scope);
    try {
      const signed = await signCheckpoint(policy.signer, policy.keyId, scope, seq, headHash);
      const rows = await this.db
        .insert(checkpoints)
        .values(signed)
        .onConflictDoNothing()
        .returning({ createdAt: checkpoints.createdAt });
      return { ...signed, createdAt: rows[0]?.createdAt ?? new Date() };
    } catch (err) {
      throw toStoreError(err, 'checkpoint');
    }
  }

  async list(scope: string): Promise<CheckpointRecord[]> {
    try {
      return await this.db
        .select({
          scope: checkpoints.scope,
          seq: checkpoints.seq,
          headHash: checkpoints.headHash,
          algorithm: checkpoints.algorithm,
          keyId: checkpoints.keyId,
          signature: checkpoints.signature,
          createdAt: checkpoints.createdAt,
        })
        .from(checkpoints)
        .where(eq(checkpoints.scope, scope))
        .orderBy(asc(checkpoints.seq), asc(checkpoints.id));
    } catch (err) {
      throw toStoreError(err, 'listCheckpoints');
    }
  }

  /** Checkpoints every remembered head older than `maxAgeMs`, then waits for the background writes. */
  async checkpointStale(maxAgeMs: number): Promise<void> {
    const now = Date.now();
    const due = [...this.#uncheckpointed].filter(([, u]) => now - u.since >= maxAgeMs);
    for (const [scope, u] of due) this.track(this.write(scope, u.seq, u.headHash));
    await this.idle();
  }

  /** Runs `work` in the background; a failure goes to onBackgroundError (default: one line on stderr). */
  track(work: Promise<unknown>): void {
    const p = work.catch((err: unknown) => this.#report(toStoreError(err, 'background work')));
    this.#background.add(p);
    void p.finally(() => this.#background.delete(p));
  }

  async idle(): Promise<void> {
    while (this.#background.size > 0) await Promise.all([...this.#background]);
  }

  stop(): void {
    if (this.#timer) clearInterval(this.#timer);
  }

  #report(err: StoreError): void {
    if (this.onBackgroundError) this.onBackgroundError(err);
    else process.stderr.write(`guardian store: ${err.message}\n`);
  }
}
