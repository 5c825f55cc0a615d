// A replay worker thread (see worker-pool.ts): replays the chains the parent hands it with its own engines,
// through the same SessionReplay as the in-process path. Messages are handled strictly in arrival order:
// notifications init, bundle (a recorded revision's policy) and session (a chain starts), then requests
// page, each answered with the page's counts, its steps and whether the chain stopped.
import { DECISION_DETAIL_SCHEMAS } from '../acs/decisions/index.ts';
import { AcsValidator, provideSharedValidator } from '../acs/validation/index.ts';
import type { GuardianConfig } from '../acs/pipeline/config.ts';
import type { PolicyEngine, SessionState } from '../policy/index.ts';
import type { ReplayStep } from './types.ts';
import { ReplayError } from './errors.ts';
import { replayConfig, type LiveSettings } from './live-step.ts';
import { engineFromBundle } from './bundle-engine.ts';
import type { ReplayBundle } from './policy.ts';
import { SessionReplay, type StepFilter } from './session-replay.ts';
import { serveRequests } from '../worker-thread/index.ts';
import { compareStepKeys, countStep, emptyCounts, type ReplayCounts, type StepKey } from './tally.ts';
import type { AgbomReplayHistory } from '../agbom/replay.ts';

export interface ReplayWorkerInit {
  settings: LiveSettings;
  filter: StepFilter;
  reportUnchanged: boolean;
  sendEveryStep: boolean;
  maxReportedSteps: number;
}

export interface PageOutcome {
  counts: ReplayCounts;
  steps: { step: ReplayStep; notable: boolean }[];
  dropped: number;
  stopped: boolean;
}

export type ReplayWorkerProtocol = {
  init: { request: ReplayWorkerInit; response: null };
  bundle: { request: { recordedRevision: string | null; bundle: ReplayBundle | null }; response: null };
  session: { request: { sessionId: string; state: SessionState; agbom: AgbomReplayHistory | null }; response: null };
  /** entries: packed rows (entries.ts readPackedPage). */
  page: { request: { entries: string[]; cutoff: StepKey | null }; response: PageOutcome };
};

// Replay only runs finalizeDecision's detail checks: compiling every schema (a long stretch of CPU per worker start) is
// the live server's job.
provideSharedValidator(new AcsValidator({ only: Object.values(DECISION_DETAIL_SCHEMAS) }));
let init: ReplayWorkerInit | null = null;
/** Recorded revision ('' for none) → engine key; key → engine. */
const routes = new Map<string, string | null>();
const engines = new Map<string, Promise<PolicyEngine>>();
const configs = new Map<PolicyEngine, GuardianConfig>();
let counts = emptyCounts();
let session: SessionReplay | null = null;
let out: { step: ReplayStep; notable: boolean }[] = [];
let dropped = 0;
let cutoff: StepKey | null = null;
/** Notable steps this worker shipped, and the largest of their keys: once there are `maxReportedSteps` of them, a
 * later step above that key has that many smaller ones in the parent's list and can never make it. */
let shipped = 0;
let shippedMax: StepKey | null = null;

function engineFor(recordedRevision: string | null): Promise<PolicyEngine | null> {
  const key = routes.get(recordedRevision ?? '');
  if (key === undefined)
    return Promise.reject(new ReplayError('cancelled', `no policy route for revision ${recordedRevision ?? '(none)'}`));
  if (key === null) return Promise.resolve(null);
  const engine = engines.get(key);
  return engine ?? Promise.reject(new ReplayError('cancelled', `policy ${key} was not sent to the worker`));
}

const context = {
  engineFor,
  config(engine: PolicyEngine): GuardianConfig {
    let c = configs.get(engine);
    if (!c) configs.set(engine, (c = replayConfig(engine, init?.settings ?? {})));
    return c;
  },
  counts: () => counts,
  emit(step: ReplayStep): void {
    const notable = countStep(counts, step, init?.reportUnchanged === true);
    // A notable step past the parent's cutoff, or past this worker's own, can never make the report's list:
    // count it, do not ship it (shipping costs a structured clone on both threads).
    const max = init?.maxReportedSteps ?? 0;
    const useless =
      notable &&
      (max === 0 ||
        (cutoff !== null && compareStepKeys(step, cutoff) > 0) ||
        (shipped >= max && shippedMax !== null && compareStepKeys(step, shippedMax) > 0));
    if (useless) dropped++;
    else if (notable) {
      shipped++;
      if (shippedMax === null || compareStepKeys(step, shippedMax) > 0)
        shippedMax = { sessionId: step.sessionId, seq: step.seq };
    }
    if (init?.sendEveryStep || (notable && !useless)) out.push({ step, notable: notable && !useless });
  },
  checkCancelled(): void {},
};

serveRequests<ReplayWorkerProtocol>(
  {
    init(settings) {
      init = settings;
      return null;
    },
    bundle({ recordedRevision, bundle: b }) {
      routes.set(recordedRevision ?? '', b ? b.key : null);
      if (b && !engines.has(b.key)) {
        const loaded = engineFromBundle(b.bytes, b.timeoutMs, b.revision, b.customBuiltinsModule);
        loaded.catch(() => undefined);
        engines.set(b.key, loaded);
      }
      return null;
    },
    session({ sessionId, state, agbom }) {
      session = new SessionReplay(sessionId, state, init?.filter ?? {}, context, agbom);
      return null;
    },
    async page({ entries, cutoff: pageCutoff }) {
      counts = emptyCounts();
      out = [];
      dropped = 0;
      cutoff = pageCutoff;
      if (!session) throw new ReplayError('cancelled', 'page before session');
      // Pages of a chain already cut at the selection's end are not scanned (as in-process).
      if (!session.stopped) await session.replay(entries);
      return { counts, steps: out, dropped, stopped: session.stopped };
    },
  },
  { ordered: true },
);
