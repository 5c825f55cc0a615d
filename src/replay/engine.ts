// The replay engine: walks the stored chains in chain order with a cursor (pages of `pageSize` entries, one
// page prefetched; memory is bounded by the page size and the number of reported steps, not the log size),
// re-checks each entry's hashes (ACS §8.2), rebuilds session state step by step through the live evaluate
// stage (live-step.ts) and compares every selected step's replayed decision with the recorded one. Sessions
// are independent chains: they are replayed in-process a few at a time, or spread over worker threads.
import { availableParallelism } from 'node:os';
import type { GuardianConfig } from '../acs/pipeline/config.ts';
import { computeEntryHash, computeRequestHash } from '../chain/index.ts';
import type { PolicyEngine, SessionState } from '../policy/index.ts';
import type { ChainInfo, ContextEntryRecord, DurableStore, SessionRecord } from '../store/types.ts';
import { packedSeq, readPackedPage } from './entries.ts';
import { ReplayError } from './errors.ts';
import { initialReplayState, replayConfig, type LiveSettings } from './live-step.ts';
import type { ReplayPolicy } from './policy.ts';
import { SessionReplay, stepFilterOf, TIME_MARGIN_MS } from './session-replay.ts';
import { countStep, emptyCounts, finishedCounts, mergeCounts, StepKeeper } from './tally.ts';
import type { ReplayProgress, ReplayReport, ReplaySelection, ReplayStep } from './types.ts';
import { ReplayWorker, type PageOutcome } from './worker-pool.ts';
import { type AgbomReplayHistory, readAgbomReplayHistory } from '../agbom/replay.ts';

export interface ReplayOptions extends LiveSettings {
  store: DurableStore;
  policy: ReplayPolicy;
  selection?: ReplaySelection;
  /** Entries per store read (default 2000). */
  pageSize?: number;
  /** In-process: sessions replayed at once (default 4; I/O of one overlaps evaluation of another). */
  concurrency?: number;
  /**
   * Worker threads, each replaying whole sessions with its own engine (sessions are independent chains).
   * 'auto' (default): one per available core when the policy can be loaded in a worker (a registry revision,
   * a file, a directory, `recorded`) and the selected chains hold at least 20 000 entries; 0: in-process.
   */
  workers?: number | 'auto';
  /** Notable steps kept in the report (default 10 000); every step still reaches `onStep`. */
  maxReportedSteps?: number;
  /** Also report unchanged compared steps (small replays, tests). */
  reportUnchanged?: boolean;
  /** Every selected or tampered step, as it is replayed (streaming consumers). */
  onStep?: (step: ReplayStep) => void;
  onProgress?: (progress: ReplayProgress) => void;
  /** Count the selected chains' entries first, for a progress total (default true when onProgress is set). */
  countTotal?: boolean;
  signal?: AbortSignal;
}

function checkSelection(sel: ReplaySelection): void {
  for (const [name, d] of [
    ['since', sel.since],
    ['until', sel.until],
  ] as const) {
    if (d !== undefined && (!(d instanceof Date) || Number.isNaN(d.getTime())))
      throw new ReplayError('invalid_selection', `${name} is not a valid date`);
  }
  if (sel.since && sel.until && sel.since > sel.until)
    throw new ReplayError('invalid_selection', 'since is after until');
  if (sel.sessionIds && sel.sessionIds.length === 0) throw new ReplayError('invalid_selection', 'sessionIds is empty');
}

export function describeSelection(sel: ReplaySelection): { [key: string]: string | string[] } {
  const out: { [key: string]: string | string[] } = {};
  if (sel.sessionIds) out.sessions = sel.sessionIds;
  if (sel.agentId !== undefined) out.agent = sel.agentId;
  if (sel.since) out.since = sel.since.toISOString();
  if (sel.until) out.until = sel.until.toISOString();
  if (sel.methods) out.methods = sel.methods;
  if (sel.decisions) out.decisions = sel.decisions;
  if (sel.decidedBy !== undefined) out.decided_by = sel.decidedBy;
  return out;
}

async function* selectedChains(store: DurableStore, sel: ReplaySelection): AsyncGenerator<ChainInfo> {
  if (sel.sessionIds) {
    for (const id of [...new Set(sel.sessionIds)].sort()) {
      const chain = await store.getChain(id);
      if (chain) yield chain;
    }
    return;
  }
  let after: string | undefined;
  for (;;) {
    const page = await store.listChains({ ...(after === undefined ? {} : { afterSessionId: after }), limit: 1000 });
    for (const c of page) yield c;
    if (page.length < 1000) return;
    after = page[page.length - 1].sessionId;
  }
}

/** Which hash a stored entry fails, if any (ACS §8.2). */
export function tamperOf(entry: ContextEntryRecord): 'request_hash_mismatch' | 'entry_hash_mismatch' | null {
  try {
    if (computeEntryHash(entry.content, entry.previousHash) !== entry.entryHash) return 'entry_hash_mismatch';
    if (
      typeof entry.content.request_hash !== 'string' ||
      computeRequestHash(entry.params) !== entry.content.request_hash
    )
      return 'request_hash_mismatch';
  } catch {
    return 'entry_hash_mismatch';
  }
  return null;
}

/** Below this many entries, starting worker threads (each loads its engines) costs more than it saves. */
const AUTO_WORKERS_MIN_ENTRIES = 20_000;
const MAX_WORKERS = 8;

function workerCount(requested: number | 'auto', policy: ReplayPolicy, total: number | null): number {
  if (!policy.bundleFor) return 0;
  if (requested === 'auto')
    return total !== null && total >= AUTO_WORKERS_MIN_ENTRIES ? Math.min(availableParallelism(), MAX_WORKERS) : 0;
  return Math.min(Math.max(0, Math.floor(requested)), MAX_WORKERS);
}

/** Replays the selected history against `options.policy`. Never writes to the store. */
export async function runReplay(options: ReplayOptions): Promise<ReplayReport> {
  const { store, policy } = options;
  const sel = options.selection ?? {};
  checkSelection(sel);
  // A store query has a fixed CPU cost whatever its size (PGlite's most of all), so pages are large.
  const pageSize = Math.min(Math.max(1, Math.floor(options.pageSize ?? 2000)), 10_000);
  const concurrency = Math.min(Math.max(1, Math.floor(options.concurrency ?? 4)), 64);
  const reportUnchanged = options.reportUnchanged === true;
  const counts = emptyCounts();
  const keeper = new StepKeeper(Math.max(0, options.maxReportedSteps ?? 10_000));
  const filter = stepFilterOf(sel);
  const started = Date.now();
  const startedPerf = performance.now();
  const requestedWorkers = options.workers ?? 'auto';

  let total: number | null = null;
  if ((options.countTotal ?? options.onProgress !== undefined) || (requestedWorkers === 'auto' && policy.bundleFor)) {
    total = 0;
    for await (const c of selectedChains(store, sel)) if (!c.prunedAt) total += c.seq + 1;
  }
  const workers = workerCount(requestedWorkers, policy, total);
  const progress = (): void => {
    if (!options.onProgress) return;
    const elapsedMs = performance.now() - startedPerf;
    const rate = elapsedMs > 0 ? (counts.entriesScanned * 1000) / elapsedMs : 0;
    const remaining = total === null ? null : Math.max(0, total - counts.entriesScanned);
    options.onProgress({
      processed: counts.entriesScanned,
      total,
      elapsedMs,
      ratePerSecond: rate,
      etaMs: remaining === null || rate <= 0 ? null : (remaining / rate) * 1000,
      sessions: counts.sessions,
      changed: counts.changed,
    });
  };
  let failed = false;
  const cancelled = (): void => {
    if (options.signal?.aborted) throw new ReplayError('cancelled', 'replay cancelled');
    // Another lane failed: stop this one too rather than keep reading in the background.
    if (failed) throw new ReplayError('cancelled', 'replay stopped after an error');
  };
  const emit = (step: ReplayStep, notable = countStep(counts, step, reportUnchanged)): void => {
    if (notable) keeper.offer(step);
    options.onStep?.(step);
  };

  /** The session row and the state its first step starts from; null when the selection skips the chain. */
  async function openSession(
    chain: ChainInfo,
  ): Promise<{ id: string; state: SessionState; agbom: AgbomReplayHistory } | null> {
    if (chain.prunedAt || chain.seq < 0) {
      counts.sessionsSkipped++;
      return null;
    }
    const session: SessionRecord | null = await store.getSession(chain.sessionId);
    const skip =
      !session ||
      (sel.agentId !== undefined && session.agentId !== sel.agentId) ||
      (sel.until && session.createdAt.getTime() > sel.until.getTime() + TIME_MARGIN_MS) ||
      (sel.since && session.closedAt && session.closedAt.getTime() < sel.since.getTime() - TIME_MARGIN_MS);
    if (skip || !session) {
      counts.sessionsSkipped++;
      return null;
    }
    counts.sessions++;
    return {
      id: session.id,
      state: initialReplayState(session),
      agbom: await readAgbomReplayHistory(store, session),
    };
  }

  /** A chain's pages in seq order, the next one read while the current one is replayed. */
  async function* pagesOf(sessionId: string): AsyncGenerator<string[]> {
    const read = (afterSeq: number): Promise<string[]> => {
      const p = readPackedPage(store, sessionId, afterSeq, pageSize);
      // A read abandoned by a cancel or an early stop must not become an unhandled rejection.
      p.catch(() => undefined);
      return p;
    };
    let next: Promise<string[]> | null = read(-1);
    while (next) {
      const page: string[] = await next;
      next = page.length === pageSize ? read(packedSeq(page[page.length - 1])) : null;
      if (page.length > 0) yield page;
    }
  }

  // A fixed number of lanes pull chains from one cursor, so memory stays bounded however many sessions exist.
  const chains = selectedChains(store, sel);
  let pulling: Promise<unknown> = Promise.resolve();
  const nextChain = (): Promise<IteratorResult<ChainInfo>> => {
    const p = pulling.then(() => chains.next());
    pulling = p.catch(() => undefined);
    return p;
  };

  const configs = new Map<PolicyEngine, GuardianConfig>();
  const local = {
    engineFor: (revision: string | null): Promise<PolicyEngine | null> => policy.engineFor(revision),
    config(engine: PolicyEngine): GuardianConfig {
      let c = configs.get(engine);
      if (!c) configs.set(engine, (c = replayConfig(engine, options)));
      return c;
    },
    counts: () => counts,
    emit: (step: ReplayStep) => emit(step),
    checkCancelled: cancelled,
  };

  const localLane = async (): Promise<void> => {
    for (;;) {
      cancelled();
      const r = await nextChain();
      if (r.done) return;
      const opened = await openSession(r.value);
      if (!opened) continue;
      const replay = new SessionReplay(opened.id, opened.state, filter, local, opened.agbom);
      for await (const page of pagesOf(opened.id)) {
        await replay.replay(page);
        progress();
        if (replay.stopped) break;
      }
    }
  };

  const apply = (o: PageOutcome): void => {
    mergeCounts(counts, o.counts);
    keeper.countDropped(o.dropped);
    for (const { step, notable } of o.steps) emit(step, notable);
    progress();
  };

  const workerLane = async (worker: ReplayWorker): Promise<void> => {
    const inFlight = new Set<Promise<void>>();
    let laneError: unknown = null;
    for (;;) {
      cancelled();
      if (laneError) throw laneError;
      const r = await nextChain();
      if (r.done) break;
      const opened = await openSession(r.value);
      if (!opened) continue;
      worker.startSession(opened.id, opened.state, opened.agbom);
      const chain = { stopped: false };
      for await (const page of pagesOf(opened.id)) {
        cancelled();
        if (laneError) throw laneError;
        if (chain.stopped) break;
        const { outcome } = await worker.page(page, keeper.cutoff());
        const applied = outcome.then(
          (o) => {
            apply(o);
            if (o.stopped) chain.stopped = true;
          },
          (err: unknown) => {
            laneError ??= err;
          },
        );
        inFlight.add(applied);
        void applied.then(() => inFlight.delete(applied));
      }
    }
    await Promise.all(inFlight);
    if (laneError) throw laneError;
    cancelled();
  };

  const pool: ReplayWorker[] = [];
  try {
    if (workers > 0) {
      const init = {
        settings: liveSettingsOf(options),
        filter,
        reportUnchanged,
        sendEveryStep: options.onStep !== undefined,
        maxReportedSteps: keeper.max,
      };
      for (let i = 0; i < workers; i++) pool.push(new ReplayWorker(policy, init));
      await Promise.all(pool.map(workerLane));
    } else {
      await Promise.all(Array.from({ length: concurrency }, localLane));
    }
  } catch (err) {
    failed = true;
    throw err;
  } finally {
    await Promise.all(pool.map((w) => w.close()));
  }
  progress();

  const durationMs = Date.now() - started;
  const { steps, omitted } = keeper.finish();
  return {
    summary: {
      against: policy.description,
      determinismCheck: policy.recorded,
      revisions: policy.revisions(),
      selection: describeSelection(sel),
      startedAt: new Date(started).toISOString(),
      finishedAt: new Date(started + durationMs).toISOString(),
      durationMs,
      entriesPerSecond:
        durationMs > 0 ? Math.round((counts.entriesScanned * 1000) / durationMs) : counts.entriesScanned,
      workers,
      ...finishedCounts(counts),
    },
    steps,
    stepsOmitted: omitted,
  };
}

/** The live settings alone (the options object also holds the store and callbacks, which cannot cross threads). */
function liveSettingsOf(options: LiveSettings): LiveSettings {
  return {
    ...(options.client ? { client: options.client } : {}),
    ...(options.maxDeferralsPerSession !== undefined ? { maxDeferralsPerSession: options.maxDeferralsPerSession } : {}),
    ...(options.evaluatorVersion !== undefined ? { evaluatorVersion: options.evaluatorVersion } : {}),
  };
}
