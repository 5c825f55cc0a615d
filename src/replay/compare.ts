// Recorded vs replayed decision: the disposition transition, reason codes and rules (policy_references
// rule_id) added or removed, and whether any other decision member changed. policy_version is left out:
// it names the bundle that decided, which differs by construction when replaying another revision.
import { canonicalJson } from '../chain/index.ts';
import type { Json } from '../store/types.ts';

/** The decision members replay compares (ACS §6 AcsResult decision members). */
export interface DecisionView {
  decision: string;
  reasonCodes: string[];
  /** rule_id of every policy_reference (policy_id when a reference has no rule_id). */
  rules: string[];
  reasoning: string | null;
  /** JCS of the remaining decision members (reasoning, policy_data, modifications, ask/defer details, cited ids). */
  detailsJcs: string;
}

export interface DecisionDelta {
  /** `allow→deny`; null when the disposition did not change. */
  transition: string | null;
  reasonCodesAdded: string[];
  reasonCodesRemoved: string[];
  rulesAdded: string[];
  rulesRemoved: string[];
  /** Another decision member (reasoning, modifications, ask/defer details, policy_data, cited ids) differs. */
  detailsChanged: boolean;
  /** Any of the above. */
  changed: boolean;
}

const DETAIL_MEMBERS = ['reasoning', 'policy_data', 'modifications', 'ask_details', 'defer_details', 'cited_provenance_ids'] as const;

function isObject(v: unknown): v is Record<string, unknown> {
  return v !== null && typeof v === 'object' && !Array.isArray(v);
}

function strings(v: unknown): string[] {
  return Array.isArray(v) ? [...new Set(v.filter((x): x is string => typeof x === 'string'))].sort() : [];
}

/** Reads a decision from a recorded AcsResult or a replayed AcsDecision; null when it carries no disposition. */
export function decisionView(value: unknown): DecisionView | null {
  if (!isObject(value) || typeof value.decision !== 'string') return null;
  const refs = Array.isArray(value.policy_references) ? value.policy_references.filter(isObject) : [];
  const rules = strings(refs.map((r) => (typeof r.rule_id === 'string' ? r.rule_id : r.policy_id)));
  const details: Record<string, unknown> = {};
  for (const m of DETAIL_MEMBERS) if (value[m] !== undefined) details[m] = value[m];
  return {
    decision: value.decision,
    reasonCodes: strings(value.reason_codes),
    rules,
    reasoning: typeof value.reasoning === 'string' ? value.reasoning : null,
    detailsJcs: canonicalJson(details),
  };
}

function minus(a: string[], b: string[]): string[] {
  const set = new Set(b);
  return a.filter((x) => !set.has(x));
}

export function compareDecisions(recorded: DecisionView, replayed: DecisionView): DecisionDelta {
  const transition = recorded.decision === replayed.decision ? null : `${recorded.decision}→${replayed.decision}`;
  const delta = {
    transition,
    reasonCodesAdded: minus(replayed.reasonCodes, recorded.reasonCodes),
    reasonCodesRemoved: minus(recorded.reasonCodes, replayed.reasonCodes),
    rulesAdded: minus(replayed.rules, recorded.rules),
    rulesRemoved: minus(recorded.rules, replayed.rules),
    detailsChanged: recorded.detailsJcs !== replayed.detailsJcs,
  };
  const changed = transition !== null || delta.reasonCodesAdded.length > 0 || delta.reasonCodesRemoved.length > 0
    || delta.rulesAdded.length > 0 || delta.rulesRemoved.length > 0 || delta.detailsChanged;
  return { ...delta, changed };
}

/** A JSON-safe copy of a decision for reports (the view's fields, not the whole signed result). */
export function viewJson(view: DecisionView): { [key: string]: Json } {
  return { decision: view.decision, reason_codes: view.reasonCodes, rules: view.rules, reasoning: view.reasoning };
}
