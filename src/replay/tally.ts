// The report's running totals and its capped step list, built so the report does not depend on the order in
// which sessions finish (concurrent lanes, worker threads): counts are sums, tables are emitted with sorted
// keys, and the step list keeps the first `max` notable steps in (session, seq) order, not the first to arrive.
import type { ReplayStep, ReplaySummary } from './types.ts';

export type ReplayCounts = Omit<
  ReplaySummary,
  | 'against'
  | 'determinismCheck'
  | 'revisions'
  | 'selection'
  | 'startedAt'
  | 'finishedAt'
  | 'durationMs'
  | 'entriesPerSecond'
  | 'workers'
>;

export function emptyCounts(): ReplayCounts {
  return {
    sessions: 0,
    sessionsSkipped: 0,
    entriesScanned: 0,
    entriesEvaluated: 0,
    evaluationMs: 0,
    selected: 0,
    compared: 0,
    unchanged: 0,
    changed: 0,
    tampered: 0,
    unrecorded: 0,
    policyUnavailable: 0,
    unroutable: 0,
    nondeterministic: 0,
    transitions: {},
    reasonCodes: {},
    rules: {},
  };
}

function bump(
  table: Record<string, { added: number; removed: number }>,
  names: string[],
  which: 'added' | 'removed',
): void {
  for (const n of names) (table[n] ??= { added: 0, removed: 0 })[which]++;
}

/** Adds one step's outcome to the counts; true when the step belongs in the report's step list. */
export function countStep(s: ReplayCounts, step: ReplayStep, reportUnchanged: boolean): boolean {
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
    bump(s.reasonCodes, step.delta.reasonCodesAdded, 'added');
    bump(s.reasonCodes, step.delta.reasonCodesRemoved, 'removed');
    bump(s.rules, step.delta.rulesAdded, 'added');
    bump(s.rules, step.delta.rulesRemoved, 'removed');
  }
  return step.status !== 'compared' || step.delta?.changed === true || reportUnchanged;
}

/** Adds counts gathered elsewhere (a worker's page) into `into`. */
export function mergeCounts(into: ReplayCounts, from: ReplayCounts): void {
  for (const k of [
    'sessions',
    'sessionsSkipped',
    'entriesScanned',
    'entriesEvaluated',
    'evaluationMs',
    'selected',
    'compared',
    'unchanged',
    'changed',
    'tampered',
    'unrecorded',
    'policyUnavailable',
    'unroutable',
    'nondeterministic',
  ] as const)
    into[k] += from[k];
  for (const [k, n] of Object.entries(from.transitions)) into.transitions[k] = (into.transitions[k] ?? 0) + n;
  for (const table of ['reasonCodes', 'rules'] as const) {
    for (const [k, v] of Object.entries(from[table])) {
      const t = (into[table][k] ??= { added: 0, removed: 0 });
      t.added += v.added;
      t.removed += v.removed;
    }
  }
}

function sortedKeys<T>(table: Record<string, T>): Record<string, T> {
  return Object.fromEntries(
    Object.keys(table)
      .sort()
      .map((k) => [k, table[k]]),
  );
}

/** The counts with every table in key order (the report's JSON does not depend on arrival order). */
export function finishedCounts(s: ReplayCounts): ReplayCounts {
  return {
    ...s,
    evaluationMs: Math.round(s.evaluationMs),
    transitions: sortedKeys(s.transitions),
    reasonCodes: sortedKeys(s.reasonCodes),
    rules: sortedKeys(s.rules),
  };
}

export interface StepKey {
  sessionId: string;
  seq: number;
}

export function compareStepKeys(a: StepKey, b: StepKey): number {
  return a.sessionId < b.sessionId ? -1 : a.sessionId > b.sessionId ? 1 : a.seq - b.seq;
}

/** Keeps the `max` smallest steps by (session, seq); the rest are only counted. */
export class StepKeeper {
  private kept: ReplayStep[] = [];
  private dropped = 0;
  /** Once the list was full: the largest key still kept (a step above it can never make the list). */
  private bound: StepKey | null = null;

  constructor(readonly max: number) {}

  /** A step above this key would be dropped; null while every step can still make the list. */
  cutoff(): StepKey | null {
    return this.bound;
  }

  /** Steps another party already dropped against the cutoff. */
  countDropped(n: number): void {
    this.dropped += n;
  }

  offer(step: ReplayStep): void {
    if (this.max === 0 || (this.bound && compareStepKeys(step, this.bound) > 0)) {
      this.dropped++;
      return;
    }
    this.kept.push(step);
    // Sorting at twice the cap keeps the work amortised O(log n) per step and the memory at 2 × max.
    if (this.kept.length >= 2 * this.max) this.trim();
  }

  private trim(): void {
    this.kept.sort(compareStepKeys);
    if (this.kept.length > this.max) {
      this.dropped += this.kept.length - this.max;
      this.kept.length = this.max;
    }
    if (this.kept.length === this.max && this.max > 0) {
      const last = this.kept[this.max - 1];
      this.bound = { sessionId: last.sessionId, seq: last.seq };
    }
  }

  finish(): { steps: ReplayStep[]; omitted: number } {
    this.trim();
    return { steps: this.kept, omitted: this.dropped };
  }
}
