// One chain replayed page by page: hash checks, selection, the live evaluate stage and the comparison. The same
// code runs in-process (engine.ts) and in worker threads (worker.ts), so both paths report identically.
import type { GuardianConfig } from '../acs/pipeline/config.ts';
import type { PolicyEngine, SessionState } from '../policy/index.ts';
import { compareDecisions, decisionView, type DecisionDelta, type DecisionView } from './compare.ts';
import type { ReplaySelection, ReplayStep, StepStatus } from './types.ts';
import { entryContent, entryTamper, parseJson, unpackEntry } from './entries.ts';
import { evaluateStep } from '../acs/pipeline/evaluate.ts';
import { foldDecision, foldRecordedStep, requestOf, routeStep } from './live-step.ts';
import type { ReplayCounts } from './tally.ts';
import { AgbomReplay, type AgbomReplayHistory } from '../agbom/replay.ts';

/** The step-level part of a selection, in a form that crosses to a worker thread. */
export interface StepFilter {
  methods?: string[];
  decisions?: string[];
  decidedBy?: string;
  sinceMs?: number;
  untilMs?: number;
}

export function stepFilterOf(sel: ReplaySelection): StepFilter {
  return {
    ...(sel.methods ? { methods: sel.methods } : {}),
    ...(sel.decisions ? { decisions: sel.decisions } : {}),
    ...(sel.decidedBy !== undefined ? { decidedBy: sel.decidedBy } : {}),
    ...(sel.since ? { sinceMs: sel.since.getTime() } : {}),
    ...(sel.until ? { untilMs: sel.until.getTime() } : {}),
  };
}

/** Steps with a client timestamp can be up to the skew window out of order; a chain is only cut past this margin. */
export const TIME_MARGIN_MS = 60 * 60 * 1000;

export interface SessionReplayContext {
  /** The engine for a step recorded under `recordedRevision`; null when that policy is unavailable. */
  engineFor(recordedRevision: string | null): Promise<PolicyEngine | null>;
  config(engine: PolicyEngine): GuardianConfig;
  /** Counts the walk itself updates (scanned, selected, evaluated); per-step outcomes go through `emit`. */
  counts(): ReplayCounts;
  /** Every selected or tampered step. */
  emit(step: ReplayStep): void;
  /** Throws when the replay was cancelled. */
  checkCancelled(): void;
}

export class SessionReplay {
  private prior: SessionState;
  private readonly methods: Set<string> | null;
  private readonly decisions: Set<string> | null;
  private readonly engines = new Map<string | null, PolicyEngine | null>();
  /** Per engine, the live config with a clock reading `stepAt`: one config per chain, not one spread per step. */
  private readonly configs = new Map<PolicyEngine, GuardianConfig>();
  private stepAt = new Date(0);
  /** `input.agbom` of each step, rebuilt from the session's stored AgBOM versions (src/agbom/replay.ts). */
  private readonly agbom: AgbomReplay | null;
  /** Past the selection's end (plus the margin): later entries of this chain are not read. */
  stopped = false;

  constructor(
    readonly sessionId: string,
    initial: SessionState,
    private readonly filter: StepFilter,
    private readonly ctx: SessionReplayContext,
    agbom: AgbomReplayHistory | null = null,
  ) {
    this.prior = initial;
    this.agbom = agbom ? new AgbomReplay(agbom) : null;
    this.methods = filter.methods ? new Set(filter.methods) : null;
    this.decisions = filter.decisions ? new Set(filter.decisions) : null;
  }

  /** The engine for a recorded revision: a session's steps name one or a few, so the lookup is kept (no await per step). */
  private engineFor(revision: string | null): PolicyEngine | null | Promise<PolicyEngine | null> {
    if (this.engines.has(revision)) return this.engines.get(revision)!;
    return this.ctx.engineFor(revision).then((engine) => {
      this.engines.set(revision, engine);
      return engine;
    });
  }

  private configFor(engine: PolicyEngine): GuardianConfig {
    let config = this.configs.get(engine);
    if (!config) this.configs.set(engine, (config = { ...this.ctx.config(engine), engine, now: () => this.stepAt }));
    return config;
  }

  /** One page of packed rows (entries.ts readPackedPage), unpacked one at a time. */
  async replay(page: readonly string[]): Promise<void> {
    const { ctx, filter } = this;
    for (const packed of page) {
      if (this.stopped) return;
      ctx.checkCancelled();
      const entry = unpackEntry(packed);
      ctx.counts().entriesScanned++;
      const content = entryContent(entry);
      const method = typeof content?.step_type === 'string' ? content.step_type : '(unreadable)';
      const timestamp = typeof content?.timestamp === 'string' ? content.timestamp : null;
      const parsedAt = timestamp === null ? NaN : Date.parse(timestamp);
      const atMs = Number.isFinite(parsedAt) ? parsedAt : entry.createdAtMs;
      const result = parseJson(entry.resultJcs);
      const recorded = decisionView(result);
      const stepId = typeof content?.step_id === 'string' ? content.step_id : '';
      const head: StepHead = {
        sessionId: this.sessionId,
        seq: entry.seq,
        stepId,
        method,
        timestamp,
        recorded,
        recordedRevision: entry.bundleRevision,
      };
      const tamper = content ? entryTamper(entry, content) : 'entry_hash_mismatch';
      if (tamper) {
        // Reported whatever the selection: the stored history itself is in question. Skipped: its params
        // are not what was evaluated, so they must not shape the state of later steps.
        const tampered = stepOf(head, 'tampered');
        tampered.tamper = tamper;
        tampered.detail =
          tamper === 'request_hash_mismatch'
            ? 'stored params do not hash to request_hash'
            : 'stored entry does not hash to entry_hash';
        ctx.emit(tampered);
        continue;
      }
      if (filter.untilMs !== undefined && atMs > filter.untilMs + TIME_MARGIN_MS) {
        this.stopped = true;
        return;
      }
      const selected =
        (!this.methods || this.methods.has(method)) &&
        (!this.decisions || (recorded !== null && this.decisions.has(recorded.decision))) &&
        (filter.decidedBy === undefined || entry.bundleRevision === filter.decidedBy) &&
        (filter.sinceMs === undefined || atMs >= filter.sinceMs) &&
        (filter.untilMs === undefined || atMs <= filter.untilMs);
      if (selected) ctx.counts().selected++;
      const request = requestOf(method, parseJson(entry.paramsJcs));
      const routed = routeStep(method);
      if (!routed.ok) {
        if (selected) ctx.emit(withDetail(stepOf(head, 'unroutable'), routed.reason));
        continue;
      }
      const known = this.engineFor(entry.bundleRevision);
      const engine = known instanceof Promise ? await known : known;
      if (!engine) {
        this.prior = foldRecordedStep(this.prior, request, recorded?.decision ?? null);
        if (selected)
          ctx.emit(
            withDetail(
              stepOf(head, 'policy_unavailable'),
              `revision ${entry.bundleRevision ?? '(none recorded)'} is not in the registry`,
            ),
          );
        continue;
      }
      // evaluateRecordedStep's two calls, with the chain's config (steps of a chain run one at a time, so the clock
      // holds this step's time while evaluateStep reads it).
      this.stepAt = new Date(atMs);
      const evaluated = await evaluateStep(
        this.configFor(engine),
        request,
        this.prior,
        routed.permitted,
        routed.wrappedMcp,
        entry.paramsJcs,
        this.agbom?.factsAt(entry.seq, entry.createdAtMs, method, request.params.payload),
      );
      this.prior = foldDecision(evaluated.state, request, evaluated.decision.decision, this.prior);
      const counts = ctx.counts();
      counts.entriesEvaluated++;
      // The report's evaluation share: read off the verdict rather than through a wrapping engine (one async layer less per step).
      counts.evaluationMs += evaluated.engineMs;
      if (!selected) continue;
      const replayed = decisionView(evaluated.decision);
      if (!recorded || !replayed) {
        ctx.emit(stepOf(head, 'unrecorded', replayed, evaluated.revision));
        continue;
      }
      const delta = compareDecisions(recorded, replayed);
      ctx.emit(
        stepOf(
          head,
          'compared',
          replayed,
          evaluated.revision,
          delta,
          delta.changed && evaluated.revision === entry.bundleRevision,
        ),
      );
    }
  }
}

/** What every step of an entry shares. */
type StepHead = Pick<
  ReplayStep,
  'sessionId' | 'seq' | 'stepId' | 'method' | 'timestamp' | 'recorded' | 'recordedRevision'
>;

/** A step as one object literal, members in the report's order (one allocation, no base step copied per status). */
function stepOf(
  h: StepHead,
  status: StepStatus,
  replayed: DecisionView | null = null,
  replayedRevision: string | null = null,
  delta: DecisionDelta | null = null,
  nondeterministic = false,
): ReplayStep {
  return {
    sessionId: h.sessionId,
    seq: h.seq,
    stepId: h.stepId,
    method: h.method,
    timestamp: h.timestamp,
    status,
    recorded: h.recorded,
    recordedRevision: h.recordedRevision,
    replayed,
    replayedRevision,
    delta,
    nondeterministic,
  };
}

function withDetail(step: ReplayStep, detail: string): ReplayStep {
  step.detail = detail;
  return step;
}
