// The bounded history of recent steps, and the decision each one received.
import { appendBounded } from './copy-on-write.ts';
import type { RecentStep } from './types.ts';

/**
 * The RecentStep the last advanceSessionState appended: its own members are exactly those recentStep writes, in
 * that order, so recordDecision (which follows it) can copy it member by member: a spread of these objects (of
 * several shapes, tool and capability optional) takes the engine's generic clone path.
 */
let lastRecentStep: RecentStep | undefined;

export function recentStep(
  step_id: string,
  index: number,
  method: string,
  turn_index: number,
  turn_id: string | null,
  timestamp: string,
  provenance_ids: string[],
  untrusted: boolean,
  tool: string | undefined,
  capability: string | undefined,
  decision?: string,
): RecentStep {
  const recent: RecentStep = { step_id, index, method, turn_index, turn_id, timestamp, provenance_ids, untrusted };
  if (tool !== undefined) recent.tool = tool;
  if (capability !== undefined) recent.capability = capability;
  if (decision !== undefined) recent.decision = decision;
  return recent;
}

/** Appends the step advanceSessionState built to the bounded history, and remembers it for withDecision. */
export function appendRecentStep(steps: readonly RecentStep[], recent: RecentStep, keep: number): RecentStep[] {
  const next = appendBounded(steps, recent, keep);
  lastRecentStep = recent;
  return next;
}

/** `{ ...step, decision }`. */
export function withDecision(step: RecentStep, decision: string): RecentStep {
  if (step !== lastRecentStep) return { ...step, decision };
  return recentStep(
    step.step_id,
    step.index,
    step.method,
    step.turn_index,
    step.turn_id,
    step.timestamp,
    step.provenance_ids,
    step.untrusted,
    step.tool,
    step.capability,
    decision,
  );
}
