// A map bounded the way per-session caches must be when agents come and go: at most `maxEntries` keys (the least
// recently written goes first) and none written longer than `maxIdleMs` ago, so a finished session's data is not
// kept until the entry cap is reached. A dropped key costs its owner one read from the store.

export interface RecentMapLimits {
  maxEntries: number;
  maxIdleMs: number;
  /** Clock in ms (tests). */
  now?: () => number;
}

export class RecentMap<V> {
  /** In order of last write: the least recently written first. */
  readonly #entries = new Map<string, { value: V; at: number }>();
  readonly #maxEntries: number;
  readonly #maxIdleMs: number;
  readonly #now: () => number;

  constructor(limits: RecentMapLimits) {
    this.#maxEntries = limits.maxEntries;
    this.#maxIdleMs = limits.maxIdleMs;
    this.#now = limits.now ?? Date.now;
  }

  get size(): number {
    return this.#entries.size;
  }

  /** The value last written under `key`, unless it has been idle for longer than maxIdleMs. */
  get(key: string): V | undefined {
    const hit = this.#entries.get(key);
    if (hit === undefined) return undefined;
    if (this.#now() - hit.at > this.#maxIdleMs) {
      this.#entries.delete(key);
      return undefined;
    }
    return hit.value;
  }

  set(key: string, value: V): void {
    const at = this.#now();
    this.#entries.delete(key);
    this.#entries.set(key, { value, at });
    if (this.#entries.size > this.#maxEntries) this.#entries.delete(this.#entries.keys().next().value as string);
    // The oldest writes are first: drop the idle ones from the front (amortised O(1) per write).
    for (const [k, entry] of this.#entries) {
      if (at - entry.at <= this.#maxIdleMs) break;
      this.#entries.delete(k);
    }
  }

  delete(key: string): void {
    this.#entries.delete(key);
  }
}
