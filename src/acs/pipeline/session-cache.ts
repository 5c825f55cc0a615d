// Per-process cache of session rows and chain heads, so a session's steps on this replica need no reads. A
// session's row only changes through a step that also appends to its chain (state and intent after the verdict,
// key_id binding on the first admitted step, sealing on sessionEnd) — there is no renegotiation (ACS v0.1). The
// cached head is the step's expected head: when another replica appended in between, GuardianStore.commitStep
// refuses the step as stale and the pipeline evaluates it again in the session's turn, from fresh reads (docs/running-a-fleet.md: any
// replica answers any session). What the cache can say without a read is never wrong in a way that matters:
// sealing, key binding and the agent are final once set.
import type { ChainHead, SessionRecord } from '../../store/types.ts';

export interface CachedSession {
  session: SessionRecord;
  /** The chain head right after this process's last write to the session (null: no entry yet). */
  head: ChainHead | null;
}

/**
 * Bounds: at most `maxEntries` sessions, and none idle for longer than `maxIdleMs`. A session's cached row carries
 * its whole policy state; agents come and go, so without the idle bound the cache keeps every finished session's
 * state until the entry cap is reached. A session dropped from the cache costs its next step one read.
 */
export interface SessionCacheLimits {
  maxEntries?: number;
  maxIdleMs?: number;
  /** Clock in ms (tests). */
  now?: () => number;
}

export class SessionCache {
  /** In order of last write: the least recently written first. */
  readonly #entries = new Map<string, CachedSession & { at: number }>();
  /** Sessions another writer appended to lately, with until when (performance.now()) they count as contended. */
  readonly #contended = new Map<string, number>();
  readonly #maxEntries: number;
  readonly #maxIdleMs: number;
  readonly #now: () => number;

  constructor(limits: SessionCacheLimits = {}) {
    this.#maxEntries = limits.maxEntries ?? 2_048;
    this.#maxIdleMs = limits.maxIdleMs ?? 120_000;
    this.#now = limits.now ?? Date.now;
  }

  get size(): number {
    return this.#entries.size;
  }

  /** Another writer appended to the session: its steps take the session's turn first for `forMs`. */
  contended(sessionId: string, forMs: number): void {
    this.#contended.delete(sessionId);
    this.#contended.set(sessionId, performance.now() + forMs);
    if (this.#contended.size > this.#maxEntries) this.#contended.delete(this.#contended.keys().next().value as string);
  }

  isContended(sessionId: string): boolean {
    const until = this.#contended.get(sessionId);
    if (until === undefined) return false;
    if (until > performance.now()) return true;
    this.#contended.delete(sessionId);
    return false;
  }

  get(sessionId: string): CachedSession | undefined {
    const hit = this.#entries.get(sessionId);
    if (hit && this.#now() - hit.at > this.#maxIdleMs) {
      this.#entries.delete(sessionId);
      return undefined;
    }
    return hit;
  }

  /** Remembers the row as just written, with the head it was written at. Least recently written goes first. */
  remember(session: SessionRecord, head: ChainHead | null): void {
    const at = this.#now();
    this.#entries.delete(session.id);
    this.#entries.set(session.id, { session, head, at });
    if (this.#entries.size > this.#maxEntries) this.#entries.delete(this.#entries.keys().next().value as string);
    // The oldest writes are first: drop the idle ones from the front (amortised O(1) per write).
    for (const [id, entry] of this.#entries) {
      if (at - entry.at <= this.#maxIdleMs) break;
      this.#entries.delete(id);
    }
  }

  forget(sessionId: string): void {
    this.#entries.delete(sessionId);
  }
}
