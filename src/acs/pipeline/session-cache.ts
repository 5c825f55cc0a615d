// Per-process cache of session rows, validated against the durable chain head on every step. A session's row
// only changes through a step that also appends to its chain (state and intent after the verdict, key_id binding
// on the first admitted step, sealing on sessionEnd) — there is no renegotiation (ACS v0.1) — so "the head is the
// one this process wrote last" means "the row is the one this process wrote last". Any replica's append moves the
// head and the next step here reads the row again (docs/running-a-fleet.md: any replica answers any session).
import type { SessionRecord } from '../../store/types.ts';

interface CachedSession {
  session: SessionRecord;
  /** The chain head right after this process's last write to the session (null: no entry yet). */
  headHash: string | null;
}

export class SessionCache {
  readonly #entries = new Map<string, CachedSession>();
  constructor(private readonly maxEntries = 10_000) {}

  /** The cached row when `currentHead` (read from the store now) is the head this process last wrote. */
  validated(sessionId: string, currentHead: string | null): SessionRecord | null {
    const hit = this.#entries.get(sessionId);
    if (!hit) return null;
    if (hit.headHash !== currentHead) {
      this.#entries.delete(sessionId);
      return null;
    }
    return hit.session;
  }

  has(sessionId: string): boolean {
    return this.#entries.has(sessionId);
  }

  /** Remembers the row as just written, with the head it was written at. Least recently written goes first. */
  remember(session: SessionRecord, headHash: string | null): void {
    this.#entries.delete(session.id);
    this.#entries.set(session.id, { session, headHash });
    if (this.#entries.size > this.maxEntries) this.#entries.delete(this.#entries.keys().next().value as string);
  }

  forget(sessionId: string): void {
    this.#entries.delete(sessionId);
  }
}
