// The replay engine: walks the stored chains in chain order with a cursor (pages of `pageSize` entries, one
// page prefetched; memory is bounded by the page size and the number of reported steps, not the log size),
// re-checks each entry's hashes (ACS §8.2), rebuilds session state step by step through the live evaluate
// stage (live-step.ts) and compares every selected step's replayed decision with the recorded one.
import { computeEntryHash, computeRequestHash } from '../chain/index.ts';
import type { ChainInfo, ContextEntryRecord, DurableStore, SessionRecord } from '../store/types.ts';
import { compareDecisions, decisionView, type DecisionDelta, type DecisionView } from './compare.ts';
import { ReplayError } from './errors.ts';
import { evaluateRecordedStep, foldRecordedStep, initialReplayState, replayConfig, requestOf, routeStep, type LiveSettings } from './live-step.ts';
import type { ReplayPolicy } from './policy.ts';

export interface ReplaySelection {
  /** Only these sessions. */
  sessionIds?: string[];
  /** Only sessions bound to this agent. */
  agentId?: string;
  /** Steps whose recorded timestamp is within [since, until]. */
  since?: Date;
  until?: Date;
  /** Steps of these methods (`steps/toolCallRequest`, …). */
  methods?: string[];
  /** Steps whose recorded decision is one of these. */
  decisions?: string[];
  /** Steps decided by this bundle revision. */
  decidedBy?: string;
}

export type StepStatus =
  /** Replayed and compared with the recorded decision. */
  | 'compared'
  /** The stored entry no longer matches its hashes: reported and skipped (its params are not trusted). */
  | 'tampered'
  /** No decision was recorded for the entry (the Guardian failed after the append): replayed, not compared. */
  | 'unrecorded'
  /** `recorded` mode and the step's revision is not in the registry: not replayed. */
  | 'policy_unavailable'
  /** The step type is not an evaluated method (only possible for an edited store). */
  | 'unroutable';

export interface ReplayStep {
  sessionId: string;
  seq: number;
  stepId: string;
  method: string;
  timestamp: string | null;
  status: StepStatus;
  /** For tampered entries: which hash no longer matches. */
  tamper?: 'request_hash_mismatch' | 'entry_hash_mismatch';
  detail?: string;
  recorded: DecisionView | null;
  recordedRevision: string | null;
  replayed: DecisionView | null;
  replayedRevision: string | null;
  delta: DecisionDelta | null;
  /** Replayed under the very revision that decided it, and the decision differs. */
  nondeterministic: boolean;
}

export interface ReplaySummary {
  against: string;
  determinismCheck: boolean;
  /** Revisions that decided the replay. */
  revisions: string[];
  selection: { [key: string]: string | string[] };
  startedAt: string;
  finishedAt: string;
  durationMs: number;
  /** Entries read per second of wall time (every scanned entry is hashed and, unless tampered, evaluated). */
  entriesPerSecond: number;
  sessions: number;
  sessionsSkipped: number;
  entriesScanned: number;
  entriesEvaluated: number;
  selected: number;
  compared: number;
  unchanged: number;
  changed: number;
  tampered: number;
  unrecorded: number;
  policyUnavailable: number;
  unroutable: number;
  nondeterministic: number;
  /** `from→to` counts over compared steps (`allow→allow` included). */
  transitions: Record<string, number>;
  reasonCodes: Record<string, { added: number; removed: number }>;
  rules: Record<string, { added: number; removed: number }>;
}

export interface ReplayReport {
  summary: ReplaySummary;
  /** Changed, non-compared and tampered steps, in (session, seq) order; at most `maxReportedSteps`. */
  steps: ReplayStep[];
  /** Notable steps left out of `steps` by the cap. */
  stepsOmitted: number;
}

export interface ReplayProgress {
  processed: number;
  /** Entries in the selected chains (an upper bound: agent/time filters are applied while walking). */
  total: number | null;
  elapsedMs: number;
  ratePerSecond: number;
  etaMs: number | null;
  sessions: number;
  changed: number;
}

export interface ReplayOptions extends LiveSettings {
  store: DurableStore;
  policy: ReplayPolicy;
  selection?: ReplaySelection;
  /** Entries per store read (default 500). */
  pageSize?: number;
  /** Sessions replayed at once (default 4; I/O of one overlaps evaluation of another). */
  concurrency?: number;
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

/** Steps with a client timestamp can be up to the skew window out of order; sessions are only cut past this margin. */
const TIME_MARGIN_MS = 60 * 60 * 1000;

function checkSelection(sel: ReplaySelection): void {
  for (const [name, d] of [['since', sel.since], ['until', sel.until]] as const) {
    if (d !== undefined && (!(d instanceof Date) || Number.isNaN(d.getTime()))) throw new ReplayError('invalid_selection', `${name} is not a valid date`);
  }
  if (sel.since && sel.until && sel.since > sel.until) throw new ReplayError('invalid_selection', 'since is after until');
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

function stepTime(entry: ContextEntryRecord): Date {
  const t = typeof entry.content.timestamp === 'string' ? Date.parse(entry.content.timestamp) : NaN;
  return Number.isFinite(t) ? new Date(t) : entry.createdAt;
}

/** Which hash a stored entry fails, if any (ACS §8.2). */
export function tamperOf(entry: ContextEntryRecord): 'request_hash_mismatch' | 'entry_hash_mismatch' | null {
  try {
    if (computeEntryHash(entry.content, entry.previousHash) !== entry.entryHash) return 'entry_hash_mismatch';
    if (typeof entry.content.request_hash !== 'string' || computeRequestHash(entry.params) !== entry.content.request_hash) return 'request_hash_mismatch';
  } catch {
    return 'entry_hash_mismatch';
  }
  return null;
}

class Tally {
  readonly s: Omit<ReplaySummary, 'against' | 'determinismCheck' | 'revisions' | 'selection' | 'startedAt' | 'finishedAt' | 'durationMs' | 'entriesPerSecond'> = {
    sessions: 0, sessionsSkipped: 0, entriesScanned: 0, entriesEvaluated: 0, selected: 0, compared: 0, unchanged: 0, changed: 0,
    tampered: 0, unrecorded: 0, policyUnavailable: 0, unroutable: 0, nondeterministic: 0, transitions: {}, reasonCodes: {}, rules: {},
  };
  readonly steps: ReplayStep[] = [];
  omitted = 0;

  constructor(private readonly max: number, private readonly reportUnchanged: boolean) {}

  add(step: ReplayStep): void {
    const s = this.s;
    if (step.status === 'tampered') s.tampered++;
    else if (step.status === 'unrecorded') s.unrecorded++;
    else if (step.status === 'policy_unavailable') s.policyUnavailable++;
    else if (step.status === 'unroutable') s.unroutable++;
    if (step.status === 'compared' && step.recorded && step.replayed && step.delta) {
      s.compared++;
      const key = `${step.recorded.decision}→${step.replayed.decision}`;
      s.transitions[key] = (s.transitions[key] ?? 0) + 1;
      if (step.delta.changed) s.changed++;
      else s.unchanged++;
      if (step.nondeterministic) s.nondeterministic++;
      const bump = (table: Record<string, { added: number; removed: number }>, names: string[], which: 'added' | 'removed'): void => {
        for (const n of names) (table[n] ??= { added: 0, removed: 0 })[which]++;
      };
      bump(s.reasonCodes, step.delta.reasonCodesAdded, 'added');
      bump(s.reasonCodes, step.delta.reasonCodesRemoved, 'removed');
      bump(s.rules, step.delta.rulesAdded, 'added');
      bump(s.rules, step.delta.rulesRemoved, 'removed');
    }
    const notable = step.status !== 'compared' || step.delta?.changed === true || this.reportUnchanged;
    if (!notable) return;
    if (this.steps.length < this.max) this.steps.push(step);
    else this.omitted++;
  }
}

/** Replays the selected history against `options.policy`. Never writes to the store. */
export async function runReplay(options: ReplayOptions): Promise<ReplayReport> {
  const { store, policy } = options;
  const sel = options.selection ?? {};
  checkSelection(sel);
  const pageSize = Math.min(Math.max(1, Math.floor(options.pageSize ?? 500)), 10_000);
  const concurrency = Math.min(Math.max(1, Math.floor(options.concurrency ?? 4)), 64);
  const tally = new Tally(Math.max(0, options.maxReportedSteps ?? 10_000), options.reportUnchanged === true);
  const started = Date.now();
  const startedPerf = performance.now();
  const methods = sel.methods ? new Set(sel.methods) : null;
  const decisions = sel.decisions ? new Set(sel.decisions) : null;

  let total: number | null = null;
  if (options.countTotal ?? options.onProgress !== undefined) {
    total = 0;
    for await (const c of selectedChains(store, sel)) if (!c.prunedAt) total += c.seq + 1;
  }
  const progress = (): void => {
    if (!options.onProgress) return;
    const elapsedMs = performance.now() - startedPerf;
    const rate = elapsedMs > 0 ? (tally.s.entriesScanned * 1000) / elapsedMs : 0;
    const remaining = total === null ? null : Math.max(0, total - tally.s.entriesScanned);
    options.onProgress({
      processed: tally.s.entriesScanned, total, elapsedMs, ratePerSecond: rate,
      etaMs: remaining === null || rate <= 0 ? null : (remaining / rate) * 1000, sessions: tally.s.sessions, changed: tally.s.changed,
    });
  };
  let failed = false;
  const cancelled = (): void => {
    if (options.signal?.aborted) throw new ReplayError('cancelled', 'replay cancelled');
    // Another worker failed: stop this one too rather than keep reading in the background.
    if (failed) throw new ReplayError('cancelled', 'replay stopped after an error');
  };

  const emit = (step: ReplayStep): void => {
    tally.add(step);
    options.onStep?.(step);
  };

  async function replaySession(chain: ChainInfo): Promise<void> {
    if (chain.prunedAt || chain.seq < 0) {
      tally.s.sessionsSkipped++;
      return;
    }
    const session: SessionRecord | null = await store.getSession(chain.sessionId);
    if (!session || (sel.agentId !== undefined && session.agentId !== sel.agentId)) {
      tally.s.sessionsSkipped++;
      return;
    }
    if (sel.until && session.createdAt.getTime() > sel.until.getTime() + TIME_MARGIN_MS) {
      tally.s.sessionsSkipped++;
      return;
    }
    if (sel.since && session.closedAt && session.closedAt.getTime() < sel.since.getTime() - TIME_MARGIN_MS) {
      tally.s.sessionsSkipped++;
      return;
    }
    tally.s.sessions++;
    let prior = initialReplayState(session);
    // A page read that is abandoned (cancel, early stop) must not become an unhandled rejection.
    const read = (afterSeq: number): Promise<ContextEntryRecord[]> => {
      const p = store.listContextEntries(session.id, { afterSeq, limit: pageSize });
      p.catch(() => undefined);
      return p;
    };
    let next: Promise<ContextEntryRecord[]> | null = read(-1);
    while (next) {
      const page: ContextEntryRecord[] = await next;
      // Prefetch the following page while this one is evaluated (the cursor is the last seq seen).
      next = page.length === pageSize ? read(page[page.length - 1].seq) : null;
      for (const entry of page) {
        cancelled();
        tally.s.entriesScanned++;
        const method = entry.content.step_type;
        const recorded = decisionView(entry.result);
        const at = stepTime(entry);
        const base: ReplayStep = {
          sessionId: session.id, seq: entry.seq, stepId: entry.content.step_id, method,
          timestamp: typeof entry.content.timestamp === 'string' ? entry.content.timestamp : null,
          status: 'compared', recorded, recordedRevision: entry.bundleRevision, replayed: null, replayedRevision: null, delta: null, nondeterministic: false,
        };
        const tamper = tamperOf(entry);
        if (tamper) {
          // Reported whatever the selection: the stored history itself is in question. Skipped: its params
          // are not what was evaluated, so they must not shape the state of later steps.
          emit({ ...base, status: 'tampered', tamper, detail: tamper === 'request_hash_mismatch' ? 'stored params do not hash to request_hash' : 'stored entry does not hash to entry_hash' });
          continue;
        }
        if (sel.until && at.getTime() > sel.until.getTime() + TIME_MARGIN_MS) {
          next = null;
          break;
        }
        const selected = (!methods || methods.has(method))
          && (!decisions || (recorded !== null && decisions.has(recorded.decision)))
          && (sel.decidedBy === undefined || entry.bundleRevision === sel.decidedBy)
          && (!sel.since || at >= sel.since)
          && (!sel.until || at <= sel.until);
        if (selected) tally.s.selected++;
        const request = requestOf(method, entry.params);
        const routed = routeStep(method);
        if (!routed.ok) {
          if (selected) emit({ ...base, status: 'unroutable', detail: routed.reason });
          continue;
        }
        const engine = await policy.engineFor(entry.bundleRevision);
        if (!engine) {
          prior = foldRecordedStep(prior, request, recorded?.decision ?? null);
          if (selected) emit({ ...base, status: 'policy_unavailable', detail: `revision ${entry.bundleRevision ?? '(none recorded)'} is not in the registry` });
          continue;
        }
        const { evaluated, next: state } = await evaluateRecordedStep(config(engine), engine, at, request, prior, routed);
        prior = state;
        tally.s.entriesEvaluated++;
        if (!selected) continue;
        const replayed = decisionView(evaluated.decision);
        if (!recorded || !replayed) {
          emit({ ...base, status: 'unrecorded', replayed, replayedRevision: evaluated.revision });
          continue;
        }
        const delta = compareDecisions(recorded, replayed);
        emit({ ...base, replayed, replayedRevision: evaluated.revision, delta, nondeterministic: delta.changed && evaluated.revision === entry.bundleRevision });
      }
      progress();
    }
  }

  const configs = new Map<object, ReturnType<typeof replayConfig>>();
  function config(engine: Parameters<typeof replayConfig>[0]): ReturnType<typeof replayConfig> {
    let c = configs.get(engine);
    if (!c) configs.set(engine, (c = replayConfig(engine, options)));
    return c;
  }

  // A fixed number of workers pull chains from one cursor, so memory stays bounded however many sessions exist.
  const chains = selectedChains(store, sel);
  let pulling: Promise<unknown> = Promise.resolve();
  const nextChain = (): Promise<IteratorResult<ChainInfo>> => {
    const p = pulling.then(() => chains.next());
    pulling = p.catch(() => undefined);
    return p;
  };
  const worker = async (): Promise<void> => {
    for (;;) {
      cancelled();
      const r = await nextChain();
      if (r.done) return;
      await replaySession(r.value);
    }
  };
  try {
    await Promise.all(Array.from({ length: concurrency }, worker));
  } catch (err) {
    failed = true;
    throw err;
  }
  progress();

  const durationMs = Date.now() - started;
  const steps = tally.steps.sort((a, b) => (a.sessionId < b.sessionId ? -1 : a.sessionId > b.sessionId ? 1 : a.seq - b.seq));
  return {
    summary: {
      against: policy.description,
      determinismCheck: policy.recorded,
      revisions: policy.revisions(),
      selection: describeSelection(sel),
      startedAt: new Date(started).toISOString(),
      finishedAt: new Date(started + durationMs).toISOString(),
      durationMs,
      entriesPerSecond: durationMs > 0 ? Math.round((tally.s.entriesScanned * 1000) / durationMs) : tally.s.entriesScanned,
      ...tally.s,
    },
    steps,
    stepsOmitted: tally.omitted,
  };
}
