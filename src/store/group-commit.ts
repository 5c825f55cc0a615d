// Group commit: appends that arrive while a transaction is in flight are committed together in the next one,
// so one commit (one fsync) carries many sessions' entries. With a transaction per append, throughput would be
// bounded by commit latency rather than by CPU. No timer: a lone append goes out immediately, so batching only
// happens under load and never delays a request.

export interface QueuedItem<T, R> {
  key: string;
  value: T;
  resolve(result: R): void;
  reject(err: unknown): void;
}

/**
 * Runs `commit` on batches of queued items. Items with the same key keep their arrival order: a key in
 * flight in one batch is held back from concurrent batches, and a held-back item holds back its
 * successors. With `onePerKey`, a batch also holds at most one item per key (for items placed against a head
 * they expect, which a same-key neighbour in the batch would move). `commit` returns one outcome per item (a
 * result or an Error) or throws for the whole batch.
 */
export class GroupCommitQueue<T, R> {
  readonly #queue: QueuedItem<T, R>[] = [];
  readonly #inFlight = new Set<string>();
  #running = 0;
  #idleWaiters: (() => void)[] = [];
  /** Told each committed batch's size and transaction time in seconds (the store's commit metrics). */
  onBatch: ((size: number, seconds: number) => void) | undefined;

  constructor(
    private readonly commit: (batch: QueuedItem<T, R>[]) => Promise<(R | Error)[]>,
    private readonly maxBatch: number,
    private readonly maxConcurrent: number,
    private readonly onePerKey = false,
  ) {}

  enqueue(key: string, value: T): Promise<R> {
    return new Promise<R>((resolve, reject) => {
      this.#queue.push({ key, value, resolve, reject });
      this.#pump();
    });
  }

  get pending(): number {
    return this.#queue.length + this.#running;
  }

  /** Resolves once nothing is queued or in flight. */
  idle(): Promise<void> {
    if (this.pending === 0) return Promise.resolve();
    return new Promise((resolve) => this.#idleWaiters.push(resolve));
  }

  #pump(): void {
    while (this.#running < this.maxConcurrent && this.#queue.length > 0) {
      const batch: QueuedItem<T, R>[] = [];
      const held = new Set<string>();
      let kept = 0;
      for (const item of this.#queue) {
        if (batch.length < this.maxBatch && !this.#inFlight.has(item.key) && !held.has(item.key)) {
          batch.push(item);
          if (this.onePerKey) held.add(item.key);
        } else {
          held.add(item.key);
          this.#queue[kept++] = item;
        }
      }
      this.#queue.length = kept;
      if (batch.length === 0) break;
      for (const item of batch) this.#inFlight.add(item.key);
      this.#running++;
      void this.#run(batch);
    }
    if (this.pending === 0) {
      const waiters = this.#idleWaiters;
      this.#idleWaiters = [];
      for (const w of waiters) w();
    }
  }

  async #run(batch: QueuedItem<T, R>[]): Promise<void> {
    try {
      const started = performance.now();
      const outcomes = await this.commit(batch);
      this.onBatch?.(batch.length, (performance.now() - started) / 1000);
      batch.forEach((item, i) => {
        const outcome = outcomes[i];
        if (outcome instanceof Error) item.reject(outcome);
        else item.resolve(outcome);
      });
    } catch (err) {
      for (const item of batch) item.reject(err);
    } finally {
      for (const item of batch) this.#inFlight.delete(item.key);
      this.#running--;
      this.#pump();
    }
  }
}
