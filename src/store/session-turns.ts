// Turns at a session's chain within this process (GuardianStore.withSessionTurn): one holder per session at a time,
// granted in arrival order, and at most `slots` holders at once when each holds a database connection while its
// step is evaluated (the rest of the pool stays free for the holders' reads and for group commit). A waiter gives up
// at its deadline. Other processes are kept out by the database (ChainWriter.holdHead).
import { StoreError } from './errors.ts';

/** At most `capacity` holders; waiters enter in arrival order or leave at their deadline (performance.now()). */
class Gate {
  #holders = 0;
  readonly #waiting: { admit(): void }[] = [];
  constructor(private readonly capacity: number) {}

  get idle(): boolean {
    return this.#holders === 0 && this.#waiting.length === 0;
  }

  enter(deadline: number, busy: () => StoreError): Promise<void> {
    if (this.#holders < this.capacity && this.#waiting.length === 0) {
      this.#holders++;
      return Promise.resolve();
    }
    return new Promise((resolve, reject) => {
      let timer: ReturnType<typeof setTimeout> | undefined;
      const waiter = {
        admit: () => {
          clearTimeout(timer);
          this.#holders++;
          resolve();
        },
      };
      if (Number.isFinite(deadline)) {
        timer = setTimeout(
          () => {
            this.#waiting.splice(this.#waiting.indexOf(waiter), 1);
            reject(busy());
          },
          Math.max(0, deadline - performance.now()),
        );
      }
      this.#waiting.push(waiter);
    });
  }

  leave(): void {
    this.#holders--;
    this.#waiting.shift()?.admit();
  }
}

export class SessionTurns {
  readonly #sessions = new Map<string, Gate>();
  readonly #slots: Gate | null;

  /** `slots`: holders at once across sessions (null: unbounded, nothing is held but this process's place). */
  constructor(slots: number | null) {
    this.#slots = slots === null ? null : new Gate(slots);
  }

  /** True while a turn of the session is held or waited for. */
  taken(sessionId: string): boolean {
    return this.#sessions.has(sessionId);
  }

  /** Runs `work` holding the session's turn here, waiting for it until `deadline` (performance.now()). */
  async run<T>(sessionId: string, deadline: number, work: () => Promise<T>): Promise<T> {
    let gate = this.#sessions.get(sessionId);
    if (!gate) this.#sessions.set(sessionId, (gate = new Gate(1)));
    const busy = () =>
      new StoreError('busy', `steps of session ${sessionId} held its turn for longer than this one could wait`);
    try {
      await gate.enter(deadline, busy);
    } catch (err) {
      if (gate.idle) this.#sessions.delete(sessionId);
      throw err;
    }
    try {
      await this.#slots?.enter(deadline, busy);
      try {
        return await work();
      } finally {
        this.#slots?.leave();
      }
    } finally {
      gate.leave();
      if (gate.idle) this.#sessions.delete(sessionId);
    }
  }
}
