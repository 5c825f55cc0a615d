// The parent's side of a replay worker thread (worker.ts): one Worker, its policy routes, and its pages in
// flight. At most `maxInFlight` pages wait in a worker at a time (backpressure: the reader blocks instead of
// queueing the log in memory).
import type { SessionState } from '../policy/index.ts';
import { WorkerCrashedError, WorkerRemoteError, WorkerThread } from '../worker-thread/index.ts';
import { packedRevision } from './entries.ts';
import { ReplayError, type ReplayErrorCode } from './errors.ts';
import type { ReplayBundle, ReplayPolicy } from './policy.ts';
import type { StepKey } from './tally.ts';
import type { PageOutcome, ReplayWorkerInit, ReplayWorkerProtocol } from './worker.ts';
import type { AgbomReplayHistory } from '../agbom/replay.ts';

export type { PageOutcome } from './worker.ts';

const ENTRY = new URL('./worker.ts', import.meta.url);

const REPLAY_ERROR_CODES = new Set<string>([
  'invalid_selection',
  'policy_not_found',
  'policy_invalid',
  'policy_compile_error',
  'policy_path_refused',
  'builtins_invalid',
  'write_refused',
  'cancelled',
  'worker_failed',
]);

function replayError(err: unknown): Error {
  if (err instanceof ReplayError) return err;
  if (err instanceof WorkerRemoteError)
    return new ReplayError(
      err.code && REPLAY_ERROR_CODES.has(err.code) ? (err.code as ReplayErrorCode) : 'worker_failed',
      err.message,
    );
  if (err instanceof WorkerCrashedError) return new ReplayError('worker_failed', err.message);
  return err instanceof Error ? err : new Error(String(err));
}

export class ReplayWorker {
  private readonly thread: WorkerThread<ReplayWorkerProtocol>;
  private readonly routed = new Set<string>();
  private slotFreed: (() => void) | null = null;

  constructor(
    private readonly policy: ReplayPolicy,
    init: ReplayWorkerInit,
    private readonly maxInFlight = 2,
  ) {
    this.thread = new WorkerThread(ENTRY, { name: 'replay worker', onCrash: () => this.slotFreed?.() });
    this.thread.notify('init', init);
  }

  private get failure(): Error | null {
    const f = this.thread.failure;
    return f ? replayError(f) : null;
  }

  /** Starts a chain: later pages continue from `state`, with the session's AgBOM history for `input.agbom`. */
  startSession(sessionId: string, state: SessionState, agbom: AgbomReplayHistory | null): void {
    const f = this.failure;
    if (f) throw f;
    this.thread.notify('session', { sessionId, state, agbom });
  }

  /**
   * Queues a page (after sending the policies its entries need), waiting first while `maxInFlight` pages are
   * queued; resolves once queued, with the worker's outcome to come (a promise inside an object: awaiting
   * the call must not wait for the outcome).
   */
  async page(entries: string[], cutoff: StepKey | null): Promise<{ outcome: Promise<PageOutcome> }> {
    while (this.thread.pending >= this.maxInFlight && !this.thread.failure)
      await new Promise<void>((r) => (this.slotFreed = r));
    for (const revision of new Set(entries.map(packedRevision))) await this.route(revision);
    const f = this.failure;
    if (f) throw f;
    const outcome = this.thread.request('page', { entries, cutoff }).then(
      (o) => {
        this.slotFreed?.();
        return o;
      },
      (err: unknown) => {
        this.slotFreed?.();
        throw replayError(err);
      },
    );
    outcome.catch(() => undefined);
    return { outcome };
  }

  private async route(revision: string | null): Promise<void> {
    const key = revision ?? '';
    if (this.routed.has(key)) return;
    const bundle: ReplayBundle | null = this.policy.bundleFor ? await this.policy.bundleFor(revision) : null;
    this.routed.add(key);
    const f = this.failure;
    if (f) throw f;
    this.thread.notify('bundle', { recordedRevision: revision, bundle });
  }

  async close(): Promise<void> {
    await this.thread.terminate(new ReplayError('cancelled', 'replay worker closed'));
  }
}
