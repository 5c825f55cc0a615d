// The embedded store's worker thread, and its early start: `guardian serve` starts opening the data directory
// before it loads the server's modules. This file imports only the worker-thread module, so the import that
// starts the worker does not first load drizzle (the driver's imports) on the way.
import { type WorkerCrashedError, WorkerThread } from '../../worker-thread/index.ts';
import type { PgliteProtocol } from './protocol.ts';

export type PgliteWorker = WorkerThread<PgliteProtocol>;

const WORKER_ENTRY = new URL('./worker.ts', import.meta.url);

/** A worker thread and the news of its death (never settled when it is terminated on purpose). */
export interface Started {
  worker: PgliteWorker;
  crashed: Promise<WorkerCrashedError>;
}

/** A worker of its own per store; `maxWorkerHeapMb` bounds its JavaScript heap (past it the worker dies). */
export function startPgliteWorker(maxWorkerHeapMb?: number): Started {
  let crash: (err: WorkerCrashedError) => void = () => {};
  const crashed = new Promise<WorkerCrashedError>((r) => (crash = r));
  // The worker holds the process open only while it has work, as the database did on the main thread.
  const worker = new WorkerThread<PgliteProtocol>(WORKER_ENTRY, {
    name: 'PGlite worker',
    unrefWhenIdle: true,
    onCrash: crash,
    ...(maxWorkerHeapMb ? { resourceLimits: { maxOldGenerationSizeMb: maxWorkerHeapMb } } : {}),
  });
  return { worker, crashed };
}

/** A worker opening (and migrating) an on-disk store ahead of the openPgliteDriver call that will use it. */
export interface EarlyPglite {
  dataDir: string;
  started: Started;
  opened: Promise<void>;
  migrated: Promise<void>;
}

let early: EarlyPglite | undefined;

/**
 * Starts opening and migrating the on-disk store under `dataDir` now, on its own thread, so that it overlaps what
 * this thread still has to load before it calls openPgliteDriver (or openStore) with the same data dir, which then
 * takes it over. Opening any other store closes it unused.
 */
export function openPgliteEarly(dataDir: string): void {
  if (early) return;
  const started = startPgliteWorker();
  const { worker } = started;
  const opened = worker.request('open', { dataDir, seed: true }).then(() => {});
  const migrated = opened.then(() => worker.request('migrate', null)).then(() => {});
  // Whoever takes it over sees a failure; until then it must not be an unhandled rejection.
  opened.catch(() => {});
  migrated.catch(() => {});
  early = { dataDir, started, opened, migrated };
}

/** The early worker, handed over once (to openPgliteDriver, which keeps it or closes it). */
export function takeEarlyPglite(): EarlyPglite | undefined {
  const ahead = early;
  early = undefined;
  return ahead;
}
