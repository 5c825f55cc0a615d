// Per-process cache of session rows and chain heads, so a session's steps on this replica need no reads. A
// session's row only changes through a step that also appends to its chain (state and intent after the verdict,
// key_id binding on the first admitted step, sealing on sessionEnd) — there is no renegotiation (ACS v0.1). The
// cached head is the step's expected head: when another replica appended in between, GuardianStore.commitStep
// refuses the step as stale and the pipeline evaluates it again in the session's turn, from fresh reads (docs/running-a-fleet.md: any
// replica answers any session). What the cache can say without a read is never wrong in a way that matters:
// sealing, key binding and the agent are final once set.
import { RecentMap, type RecentMapLimits } from '../../recent-map.ts';
import type { ChainHead, SessionRecord } from '../../store/types.ts';

export interface CachedSession {
  session: SessionRecord;
  /** The chain head right after this process's last write to the session (null: no entry yet). */
  head: ChainHead | null;
}

/** Per-session bounds (src/recent-map.ts): a cached row carries the session's whole policy state. */
export type SessionCacheLimits = Partial<RecentMapLimits>;

export class SessionCache {
  readonly #entries: RecentMap<CachedSession>;
  /** Sessions another writer appended to lately, with until when (performance.now()) they count as contended. */
  readonly #contended = new Map<string, number>();
  readonly #maxEntries: number;

  constructor(limits: SessionCacheLimits = {}) {
    this.#maxEntries = limits.maxEntries ?? 2_048;
    this.#entries = new RecentMap({ ...limits, maxEntries: this.#maxEntries, maxIdleMs: limits.maxIdleMs ?? 120_000 });
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
    return this.#entries.get(sessionId);
  }

  /** Remembers the row as just written, with the head it was written at. Least recently written goes first. */
  remember(session: SessionRecord, head: ChainHead | null): void {
    this.#entries.set(session.id, { session, head });
  }

  forget(sessionId: string): void {
    this.#entries.delete(sessionId);
  }
}
