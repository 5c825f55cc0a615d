// The parent's side of a replay worker thread (worker.ts): one Worker, its policy routes, and its pages in
// flight. At most `maxInFlight` pages wait in a worker at a time (backpressure: the reader blocks instead of
// queueing the log in memory).
import { Worker } from 'node:worker_threads';
import type { SessionState } from '../policy/index.ts';
import { packedRevision } from './entries.ts';
import { ReplayError, type ReplayErrorCode } from './errors.ts';
import type { ReplayBundle, ReplayPolicy } from './policy.ts';
import type { StepKey } from './tally.ts';
import type { FromWorker, ToWorker } from './worker.ts';

const REPLAY_ERROR_CODES = new Set<string>([
  'invalid_selection',
  'policy_not_found',
  'policy_invalid',
  'policy_compile_error',
  'policy_path_refused',
  'write_refused',
  'cancelled',
  'worker_failed',
]);

export type PageOutcome = Extract<FromWorker, { type: 'done' }>;

export class ReplayWorker {
  private readonly worker: Worker;
  private readonly pending = new Map<number, { resolve(r: PageOutcome): void; reject(e: Error): void }>();
  private readonly routed = new Set<string>();
  private nextId = 1;
  private failure: Error | null = null;
  private slotFreed: (() => void) | null = null;

  /** `entry`: the worker's start file (worker-entry.ts). */
  constructor(
    entry: URL,
    private readonly policy: ReplayPolicy,
    init: Extract<ToWorker, { type: 'init' }>,
    private readonly maxInFlight = 2,
  ) {
    this.worker = new Worker(entry);
    this.worker.on('message', (msg: FromWorker) => {
      const p = this.pending.get(msg.id);
      if (!p) return;
      this.pending.delete(msg.id);
      this.slotFreed?.();
      if (msg.type === 'done') p.resolve(msg);
      else
        p.reject(
          new ReplayError(
            REPLAY_ERROR_CODES.has(msg.code) ? (msg.code as ReplayErrorCode) : 'worker_failed',
            msg.message,
          ),
        );
    });
    const fail = (err: Error): void => {
      this.failure ??= err;
      for (const p of this.pending.values()) p.reject(err);
      this.pending.clear();
      this.slotFreed?.();
    };
    this.worker.on('error', (err) => fail(new ReplayError('worker_failed', `replay worker failed: ${err.message}`)));
    this.worker.on('exit', (code) => fail(new ReplayError('worker_failed', `replay worker exited (${code})`)));
    this.post(init);
  }

  private post(msg: ToWorker): void {
    if (this.failure) throw this.failure;
    this.worker.postMessage(msg);
  }

  /** Starts a chain: later pages continue from `state`. */
  startSession(sessionId: string, state: SessionState): void {
    this.post({ type: 'session', sessionId, state });
  }

  /**
   * Queues a page (after sending the policies its entries need), waiting first while `maxInFlight` pages are
   * queued; resolves once queued, with the worker's outcome to come (a promise inside an object: awaiting
   * the call must not wait for the outcome).
   */
  async page(entries: string[], cutoff: StepKey | null): Promise<{ outcome: Promise<PageOutcome> }> {
    while (this.pending.size >= this.maxInFlight && !this.failure) await new Promise<void>((r) => (this.slotFreed = r));
    for (const revision of new Set(entries.map(packedRevision))) await this.route(revision);
    if (this.failure) throw this.failure;
    const id = this.nextId++;
    const outcome = new Promise<PageOutcome>((resolve, reject) => this.pending.set(id, { resolve, reject }));
    outcome.catch(() => undefined);
    this.post({ type: 'page', id, entries, cutoff });
    return { outcome };
  }

  private async route(revision: string | null): Promise<void> {
    const key = revision ?? '';
    if (this.routed.has(key)) return;
    const bundle: ReplayBundle | null = this.policy.bundleFor ? await this.policy.bundleFor(revision) : null;
    this.routed.add(key);
    this.post({ type: 'bundle', recordedRevision: revision, bundle });
  }

  async close(): Promise<void> {
    this.failure ??= new ReplayError('cancelled', 'replay worker closed');
    this.worker.removeAllListeners('exit');
    await this.worker.terminate();
  }
}
