// Storing what the shadow candidate decided differently from the enforcing version (docs/bundle-lifecycle.md,
// shadow mode): off the request path, bounded per shadow target and replica (counting continues beyond the bound).
import type { ShadowStore } from '../../store/types.ts';
import type { ShadowDifference } from '../slot.ts';
import { jsonOf } from './json-column.ts';
import type { LifecycleNodeOptions } from './types.ts';

export class ShadowDifferenceWriter {
  readonly #store: ShadowStore;
  readonly #replicaId: string;
  readonly #options: Pick<LifecycleNodeOptions, 'maxStoredDifferences'>;
  readonly #log: (line: string) => void;
  #pending = new Set<Promise<unknown>>();
  #stored = { sha256: '', count: 0 };

  constructor(
    store: ShadowStore,
    replicaId: string,
    options: Pick<LifecycleNodeOptions, 'maxStoredDifferences'>,
    log: (line: string) => void,
  ) {
    this.#store = store;
    this.#replicaId = replicaId;
    this.#options = options;
    this.#log = log;
  }

  /** Starts writing a difference of the shadow candidate `shadowSha256`; a failed write is logged. */
  write(d: ShadowDifference, shadowSha256: string): void {
    if (this.#stored.sha256 !== shadowSha256) this.#stored = { sha256: shadowSha256, count: 0 };
    if (this.#stored.count >= (this.#options.maxStoredDifferences ?? 10_000)) return;
    this.#stored.count++;
    const p = this.#store
      .recordShadowDifference({
        replicaId: this.#replicaId,
        method: d.method,
        enforcingRevision: d.enforcingRevision,
        shadowRevision: d.shadowRevision,
        shadowSha256,
        enforcing: jsonOf(d.enforcing),
        shadow: jsonOf(d.shadow),
        shadowError: d.shadowError ?? null,
        at: d.at,
      })
      .catch((e: unknown) => this.#log(`could not store a shadow difference: ${(e as Error).message}`))
      .finally(() => this.#pending.delete(p));
    this.#pending.add(p);
  }

  /** Waits for the writes started so far. */
  async settled(): Promise<void> {
    await Promise.allSettled([...this.#pending]);
  }
}
