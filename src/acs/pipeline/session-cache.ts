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

export class SessionCache {
  readonly #entries = new Map<string, CachedSession>();
  /** Sessions another writer appended to lately, with until when (performance.now()) they count as contended. */
  readonly #contended = new Map<string, number>();
  constructor(private readonly maxEntries = 10_000) {}

  /** Another writer appended to the session: its steps take the session's turn first for `forMs`. */
  contended(sessionId: string, forMs: number): void {
    this.#contended.delete(sessionId);
    this.#contended.set(sessionId, performance.now() + forMs);
    if (this.#contended.size > this.maxEntries) this.#contended.delete(this.#contended.keys().next().value as string);
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
    this.#entries.delete(session.id);
    this.#entries.set(session.id, { session, head });
    if (this.#entries.size > this.maxEntries) this.#entries.delete(this.#entries.keys().next().value as string);
  }

  forget(sessionId: string): void {
    this.#entries.delete(sessionId);
  }
}
