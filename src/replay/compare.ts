// Recorded vs replayed decision: the disposition transition, reason codes and rules (policy_references
// rule_id) added or removed, and whether any other decision member changed. policy_version is left out:
// it names the bundle that decided, which differs by construction when replaying another revision.
import { isObject, type Json } from '../json.ts';

/** The decision members replay compares (ACS §6 AcsResult decision members). */
export interface DecisionView {
  decision: string;
  reasonCodes: string[];
  /** rule_id of every policy_reference (policy_id when a reference has no rule_id). */
  rules: string[];
  reasoning: string | null;
  /** The remaining decision members (reasoning, policy_data, modifications, ask/defer details, cited ids). */
  details: { [member: string]: Json };
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

const DETAIL_MEMBERS = [
  'reasoning',
  'policy_data',
  'modifications',
  'ask_details',
  'defer_details',
  'cited_provenance_ids',
] as const;

function strings(v: unknown): string[] {
  if (!Array.isArray(v) || v.length === 0) return [];
  // Most decisions carry one code or rule: no Set, filter and sort for it (twice per step).
  if (v.length === 1) return typeof v[0] === 'string' ? [v[0]] : [];
  return [...new Set(v.filter((x): x is string => typeof x === 'string'))].sort();
}

/** Reads a decision from a recorded AcsResult or a replayed AcsDecision; null when it carries no disposition. */
export function decisionView(value: unknown): DecisionView | null {
  if (!isObject(value) || typeof value.decision !== 'string') return null;
  const refs = Array.isArray(value.policy_references) ? value.policy_references.filter(isObject) : [];
  const rules = strings(refs.map((r) => (typeof r.rule_id === 'string' ? r.rule_id : r.policy_id)));
  const details: { [member: string]: Json } = {};
  for (const m of DETAIL_MEMBERS) if (value[m] !== undefined) details[m] = value[m] as Json;
  return {
    decision: value.decision,
    reasonCodes: strings(value.reason_codes),
    rules,
    reasoning: typeof value.reasoning === 'string' ? value.reasoning : null,
    details,
  };
}

/**
 * Equality of two JSON values as their JCS texts would compare (key order ignored, members whose value is
 * undefined absent, -0 = 0), without building the texts: two canonicalisations per step were a visible share
 * of replay's own time.
 */
export function sameJson(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (a === null || b === null || typeof a !== 'object' || typeof b !== 'object') return false;
  if (Array.isArray(a)) {
    if (!Array.isArray(b) || a.length !== b.length) return false;
    for (let i = 0; i < a.length; i++) {
      // JCS writes an undefined array element as null.
      if (!sameJson(a[i] === undefined ? null : a[i], b[i] === undefined ? null : b[i])) return false;
    }
    return true;
  }
  if (Array.isArray(b)) return false;
  const x = a as Record<string, unknown>;
  const y = b as Record<string, unknown>;
  let defined = 0;
  for (const k of Object.keys(x)) {
    if (x[k] === undefined) continue;
    defined++;
    if (!Object.hasOwn(y, k) || !sameJson(x[k], y[k])) return false;
  }
  for (const k of Object.keys(y)) if (y[k] !== undefined) defined--;
  return defined === 0;
}

function minus(a: string[], b: string[]): string[] {
  const set = new Set(b);
  return a.filter((x) => !set.has(x));
}

export function compareDecisions(recorded: DecisionView, replayed: DecisionView): DecisionDelta {
  const transition = recorded.decision === replayed.decision ? null : `${recorded.decision}→${replayed.decision}`;
  const reasonCodesAdded = minus(replayed.reasonCodes, recorded.reasonCodes);
  const reasonCodesRemoved = minus(recorded.reasonCodes, replayed.reasonCodes);
  const rulesAdded = minus(replayed.rules, recorded.rules);
  const rulesRemoved = minus(recorded.rules, replayed.rules);
  const detailsChanged = !sameJson(recorded.details, replayed.details);
  const changed =
    transition !== null ||
    reasonCodesAdded.length > 0 ||
    reasonCodesRemoved.length > 0 ||
    rulesAdded.length > 0 ||
    rulesRemoved.length > 0 ||
    detailsChanged;
  // One literal with every member: an object that gains members later gets a hidden class of its own.
  return { transition, reasonCodesAdded, reasonCodesRemoved, rulesAdded, rulesRemoved, detailsChanged, changed };
}

/** A JSON-safe copy of a decision for reports (the view's fields, not the whole signed result). */
export function viewJson(view: DecisionView): { [key: string]: Json } {
  return { decision: view.decision, reason_codes: view.reasonCodes, rules: view.rules, reasoning: view.reasoning };
}
