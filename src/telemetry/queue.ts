// A bounded FIFO between the request path and an exporter: pushing never waits; past the capacity the item is
// dropped and the drop reported (ACS §Trace: a slow or dead sink MUST NOT block or change enforcement).
export class BoundedQueue<T> {
  readonly capacity: number;
  readonly #items: T[] = [];
  #head = 0;
  readonly #onDrop: (count: number) => void;

  constructor(capacity: number, onDrop: (count: number) => void) {
    this.capacity = capacity;
    this.#onDrop = onDrop;
  }

  get size(): number {
    return this.#items.length - this.#head;
  }

  /** False (and one drop reported) when the queue is full. */
  push(item: T): boolean {
    if (this.size >= this.capacity) {
      this.#onDrop(1);
      return false;
    }
    this.#items.push(item);
    return true;
  }

  /**
   * Appends `item` whatever the capacity: for what a bound upstream already limited (the backlog handed over at
   * shutdown, docs/telemetry.md), which must not be lost to this bound a second time.
   */
  keep(item: T): void {
    this.#items.push(item);
  }

  /** The oldest item, left in the queue. */
  peek(): T | undefined {
    return this.size > 0 ? this.#items[this.#head] : undefined;
  }

  /** Removes and returns up to `n` items, oldest first. */
  take(n: number): T[] {
    const out = this.#items.slice(this.#head, this.#head + n);
    this.#head += out.length;
    if (this.#head > 1024 && this.#head * 2 > this.#items.length) {
      this.#items.splice(0, this.#head);
      this.#head = 0;
    }
    return out;
  }
}
