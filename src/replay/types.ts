// What a replay selects and what it reports, step by step and in sum: the data every stage of a replay shares
// (engine, per-session replay, workers, tallies, reports), kept apart so that none of them imports the engine.
import type { DecisionDelta, DecisionView } from './compare.ts';

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
  /** Worker threads that replayed (0: in-process). */
  workers: number;
  /** Time spent inside policy evaluation (Wasm), summed over all threads, in ms. */
  evaluationMs: number;
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
