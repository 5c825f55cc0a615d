// A session's steps, one at a time in this process (ACS §8.2, §10.3), and how long a step may wait for its turn.
import { StoreError } from '../../store/errors.ts';
import type { GuardianConfig } from './config.ts';

/**
 * When a step stops waiting for its session (this replica's queue of its steps, then its turn): the decision
 * deadline its client was given (the handshake's timeout_config for the method, ACS §4) counted from the
 * request's arrival, less a tenth kept for evaluating, committing and answering. Then it is denied `session_busy`.
 */
export function waitDeadline(config: GuardianConfig, method: string, arrivedAt: number): number {
  const { default_ms, per_method_ms } = config.timeoutConfig;
  return arrivedAt + 0.9 * (per_method_ms?.[method] ?? default_ms);
}

/**
 * Serialises one session's steps in this process (replay check + append + decision are atomic per session, ACS
 * §8.2, §10.3). A step still waiting at its deadline (performance.now()) is refused StoreError 'busy' and never runs.
 */
export class SessionLocks {
  readonly #tails = new Map<string, Promise<unknown>>();
  async run<T>(sessionId: string, work: () => Promise<T>, deadline = Number.POSITIVE_INFINITY): Promise<T> {
    const previous = this.#tails.get(sessionId);
    // Nothing ahead of this step: it runs at once and cannot miss its deadline waiting, so no timer is set.
    if (previous === undefined) {
      const next = work();
      const tail: Promise<unknown> = next
        .catch(() => undefined)
        .then(() => {
          if (this.#tails.get(sessionId) === tail) this.#tails.delete(sessionId);
        });
      this.#tails.set(sessionId, tail);
      return next;
    }
    let state: 'waiting' | 'running' | 'gave_up' = 'waiting';
    const turn = () => {
      if (state === 'gave_up') return Promise.reject(busyError(sessionId));
      state = 'running';
      return work();
    };
    let next = previous.then(turn, turn);
    // The queue moves on when this step's work is over (a step that gave up is over once its turn comes).
    const tail: Promise<unknown> = next
      .catch(() => undefined)
      .then(() => {
        if (this.#tails.get(sessionId) === tail) this.#tails.delete(sessionId);
      });
    this.#tails.set(sessionId, tail);
    if (Number.isFinite(deadline)) {
      let timer: ReturnType<typeof setTimeout> | undefined;
      const gaveUp = new Promise<never>((_, reject) => {
        timer = setTimeout(
          () => {
            if (state !== 'waiting') return;
            state = 'gave_up';
            reject(busyError(sessionId));
          },
          Math.max(0, deadline - performance.now()),
        );
      });
      next = Promise.race([next, gaveUp]).finally(() => clearTimeout(timer));
    }
    return next;
  }
}

function busyError(sessionId: string): StoreError {
  return new StoreError('busy', `earlier steps of session ${sessionId} held it past this step's deadline`);
}
