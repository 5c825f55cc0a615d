// OCSF event emission: each event is serialised once and queued for every sink; a worker per sink drains its
// bounded queue in batches. A full queue or a failed batch drops events and reports them (metric + warning log);
// the request that produced them has already been answered (ACS §Trace "Failure isolation").
import { BoundedQueue } from '../queue.ts';
import type { EventSink } from './sinks.ts';
import type { OcsfEvent } from './ocsf.ts';

export {
  ocsfEventsOf,
  classOf,
  SEVERITY_OF_DISPOSITION,
  type OcsfEvent,
  type OcsfProduct,
  type OcsfSubject,
} from './ocsf.ts';
export { fileSink, httpSink, sinkOf, stdoutSink, type EventSink, type SinkSettings } from './sinks.ts';

export interface OcsfEmitterOptions {
  sinks: EventSink[];
  /** Events held per sink at most. */
  queueSize: number;
  /** Events per batch (one HTTP POST, one file append). */
  batchSize: number;
  /** Wait at most this long for a batch to fill. */
  flushIntervalMs: number;
  onDropped(sink: string, count: number, why: string): void;
}

class SinkWorker {
  readonly sink: EventSink;
  readonly queue: BoundedQueue<string>;
  readonly #options: OcsfEmitterOptions;
  #running: Promise<void> | null = null;
  #timer: NodeJS.Timeout | null = null;
  /** Lines of the batch being written. */
  #writing = 0;
  /** Set once the shutdown deadline passed: what was held is counted then, and nothing after. */
  #abandoned = false;
  /**
   * Whether a batch short of batchSize goes out: once the flush interval has passed, or on flush(). Otherwise a
   * batch waits to fill, so a busy Guardian sends full batches (each POST or append costs about the same whatever
   * it carries) rather than whatever arrived while the last one was being written.
   */
  #partial = false;

  constructor(sink: EventSink, options: OcsfEmitterOptions) {
    this.sink = sink;
    this.#options = options;
    this.queue = new BoundedQueue(options.queueSize, (n) => options.onDropped(sink.kind, n, 'queue full'));
  }

  push(line: string): void {
    this.queue.push(line);
    this.#schedule();
  }

  /** Queues `line` past the queue's bound (the backlog handed over at shutdown, bounded by the caller already). */
  keep(line: string): void {
    this.queue.keep(line);
    this.#schedule();
  }

  /** Lines held: queued, and the batch being written (not delivered yet, so lost with the thread). */
  get held(): number {
    return this.queue.size + this.#writing;
  }

  /** Starts a full batch now, or waits for one to fill. */
  #schedule(): void {
    if (this.#running) return;
    if (this.queue.size >= this.#options.batchSize) this.#start();
    else this.#wait();
  }

  /** Sends what is queued once the flush interval has passed, unless a full batch goes first. */
  #wait(): void {
    if (this.#timer || this.queue.size === 0) return;
    this.#timer = setTimeout(() => {
      this.#timer = null;
      this.#partial = true;
      this.#start();
    }, this.#options.flushIntervalMs);
    this.#timer.unref();
  }

  #start(): void {
    if (this.#running) return;
    if (this.#timer) clearTimeout(this.#timer);
    this.#timer = null;
    this.#running = this.#drain().finally(() => {
      this.#running = null;
      this.#partial = false;
      if (this.queue.size >= this.#options.batchSize) this.#start();
      else this.#wait();
    });
  }

  async #drain(): Promise<void> {
    while (this.queue.size >= this.#options.batchSize || (this.#partial && this.queue.size > 0)) {
      const batch = this.queue.take(this.#options.batchSize);
      this.#writing = batch.length;
      try {
        await this.sink.write(batch);
      } catch (err) {
        if (!this.#abandoned)
          this.#options.onDropped(this.sink.kind, batch.length, err instanceof Error ? err.message : String(err));
      } finally {
        this.#writing = 0;
      }
    }
  }

  /** Everything queued now is written (or dropped). */
  async flush(): Promise<void> {
    this.#partial = true;
    this.#start();
    while (this.#running) await this.#running;
  }

  /** Gives up what is held (queued, and the batch being written): counted as dropped once, nothing after. */
  abandon(): void {
    if (this.#abandoned) return;
    const lost = this.held;
    this.#abandoned = true;
    this.queue.take(this.queue.size);
    if (lost > 0) this.#options.onDropped(this.sink.kind, lost, 'not written before the shutdown deadline');
  }
}

export interface OcsfEmitter {
  emit(events: OcsfEvent[]): void;
  /** Events held per sink kind: queued, and in the batch being written. */
  depths(): Record<string, number>;
  /** Writes everything queued, then `last` (queued past the bound: the caller's own bound limited it already). */
  flush(last?: readonly OcsfEvent[]): Promise<void>;
  /** Gives up what is still held (the shutdown deadline passed), counted as dropped. */
  abandon(): void;
}

export function createOcsfEmitter(options: OcsfEmitterOptions): OcsfEmitter {
  const workers = options.sinks.map((s) => new SinkWorker(s, options));
  return {
    emit(events) {
      for (const event of events) {
        const line = JSON.stringify(event);
        for (const w of workers) w.push(line);
      }
    },
    depths: () => Object.fromEntries(workers.map((w) => [w.sink.kind, w.held])),
    async flush(last = []) {
      for (const event of last) {
        const line = JSON.stringify(event);
        for (const w of workers) w.keep(line);
      }
      await Promise.all(workers.map((w) => w.flush()));
    },
    abandon() {
      for (const w of workers) w.abandon();
    },
  };
}
