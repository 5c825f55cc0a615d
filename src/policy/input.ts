// The ACS policy input contract (docs/policy-authoring.md): what every Rego policy sees as `input`.
// Built from the request, the session state after this step, the client's capabilities and the Guardian's
// clock and bundle revision. Only the provenance the current step references (and its lineage) is
// projected, so the input stays small however long the session runs (input is serialised per evaluation).
import { isObject, type Json, type JsonObject } from '../json.ts';
import { POLICY_PARAMS_JSON, type PolicyInput } from './types.ts';
import {
  lineageOf,
  provenanceRecord,
  referencedProvenanceIds,
  setOwn,
  timestampMs,
  toolCallColumns,
  type SessionState,
  type Trust,
} from './session-state/index.ts';

export interface ClientCapabilities {
  /** §6.5: false ⇒ the Guardian must not answer MODIFY. */
  modify_capable: boolean;
  /** §9.2: false ⇒ the Guardian must not answer ASK. */
  ask_capable: boolean;
}

export interface GuardianFacts {
  /** RFC 3339 time of this evaluation (replay passes the recorded one). */
  now: string;
  /** Revision of the bundle in force. */
  policy_version: string;
}

/** Ancestors projected per referenced provenance id (nearest first). */
export const MAX_PROJECTED_ANCESTORS = 32;

/** Request params as policies see them: everything but the signature (§10: not a policy fact). */
export function policyParams(params: Json): Json {
  if (!isObject(params)) return params;
  const { signature: _signature, ...rest } = params;
  return rest;
}

const SIGNATURE_KEY = '"signature":';

/**
 * Index where the value starting at `from` ends (the `,` or `}` that follows it at depth 1), provided the text
 * from there closes the top-level object exactly at its last character; undefined otherwise (the member at
 * `from` is nested, or the text is not one object). Strings are skipped, escapes included.
 */
function topLevelValueEnd(text: string, from: number): number | undefined {
  let depth = 1;
  let valueEnd = -1;
  for (let i = from; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c === 0x22) {
      // Skip the string: `\` consumes the next code unit, an unescaped `"` closes it.
      for (i++; i < text.length; i++) {
        const s = text.charCodeAt(i);
        if (s === 0x5c) i++;
        else if (s === 0x22) break;
      }
    } else if (c === 0x7b || c === 0x5b) depth++;
    else if (c === 0x7d || c === 0x5d) {
      if (--depth === 0) return i === text.length - 1 ? (valueEnd < 0 ? i : valueEnd) : undefined;
    } else if (c === 0x2c && depth === 1 && valueEnd < 0) valueEnd = i;
  }
  return undefined;
}

/**
 * `policyParams` as JSON text, cut out of the RFC 8785 (JCS) text of the params as received — the text the
 * pipeline hashes for request_hash (ACS §8.2) and the store keeps — so the engine need not stringify params
 * again. Inside JCS strings every `"` is escaped, so `,"signature":` / `{"signature":` can only be a member
 * key; the last one is the top-level member when the rest of the text closes the object (JCS sorts keys, so
 * only `timestamp` and later keys follow it). Undefined when the text is not a JSON object or the signature
 * member cannot be located exactly: the caller then serialises the params object.
 */
export function policyParamsJson(paramsJcs: string): string | undefined {
  if (paramsJcs.charCodeAt(0) !== 0x7b || paramsJcs.charCodeAt(paramsJcs.length - 1) !== 0x7d) return undefined;
  const at = paramsJcs.lastIndexOf(SIGNATURE_KEY);
  // No `"signature"` token at all (as a key or a string value): nothing to remove.
  if (at < 0) return paramsJcs.includes('"signature"') ? undefined : paramsJcs;
  const before = paramsJcs.charCodeAt(at - 1);
  if (before !== 0x2c && before !== 0x7b) return undefined;
  const end = topLevelValueEnd(paramsJcs, at + SIGNATURE_KEY.length);
  if (end === undefined) return undefined;
  // `…,"signature":v,…` / `…,"signature":v}` drop `,"signature":v`; `{"signature":v,…` drops `"signature":v,`.
  if (before === 0x2c) return paramsJcs.slice(0, at - 1) + paramsJcs.slice(end);
  return paramsJcs.slice(0, at) + paramsJcs.slice(paramsJcs.charCodeAt(end) === 0x2c ? end + 1 : end);
}

interface WindowCount {
  total: number;
  by_tool: Record<string, number>;
}

/** `by_tool` in first-seen order within the window (`order`: indexes into `tools`), as counted one by one. */
function windowCount(tools: readonly string[], counts: readonly number[], order: readonly number[]): WindowCount {
  const by_tool: Record<string, number> = {};
  let total = 0;
  for (const k of order) {
    setOwn(by_tool, tools[k], counts[k]);
    total += counts[k];
  }
  return { total, by_tool };
}

/**
 * Tool calls in the minute and the hour ending at `nowMs`: both windows in one pass over the history's columns,
 * tallied per tool by its position in the columns' names. Each window lists its tools in order of first call.
 */
function windowCounts(state: SessionState, nowMs: number): { minute: WindowCount; hour: WindowCount } {
  const { names, nameAt, atMs, start, end } = toolCallColumns(state.recent_tool_calls);
  const minute = new Array<number>(names.length).fill(0);
  const hour = new Array<number>(names.length).fill(0);
  const minuteOrder: number[] = [];
  const hourOrder: number[] = [];
  const hourFloor = nowMs - 3_600_000;
  const minuteFloor = nowMs - 60_000;
  for (let i = start; i < end; i++) {
    const at = atMs[i];
    if (at > nowMs || at <= hourFloor) continue;
    const k = nameAt[i];
    if (hour[k]++ === 0) hourOrder.push(k);
    if (at > minuteFloor && minute[k]++ === 0) minuteOrder.push(k);
  }
  return { minute: windowCount(names, minute, minuteOrder), hour: windowCount(names, hour, hourOrder) };
}

/** The members of the state's counters, in the order the state writes them (initialSessionState). */
const STATE_COUNTERS = [
  'steps_total',
  'steps_by_method',
  'tool_calls_total',
  'tool_calls_by_tool',
  'turns_total',
  'deferrals',
  'asks',
  'denials',
  'subagents_started',
];

/** True when `obj`'s own enumerable keys are exactly `keys`, in that order. */
function hasExactKeys(obj: object, keys: readonly string[]): boolean {
  const own = Object.keys(obj);
  if (own.length !== keys.length) return false;
  for (let i = 0; i < own.length; i++) if (own[i] !== keys[i]) return false;
  return true;
}

/**
 * `{ ...counters, tool_calls_last_minute, …_by_tool, tool_calls_last_hour, …_by_tool }`. Written out as one
 * literal when the counters have the state's own members in its order: adding four members to a copy would grow
 * it past its copied shape, off the engine's fast path.
 */
function countersProjection(counters: JsonObject, minute: WindowCount, hour: WindowCount): JsonObject {
  if (hasExactKeys(counters, STATE_COUNTERS)) {
    return {
      steps_total: counters.steps_total,
      steps_by_method: counters.steps_by_method,
      tool_calls_total: counters.tool_calls_total,
      tool_calls_by_tool: counters.tool_calls_by_tool,
      turns_total: counters.turns_total,
      deferrals: counters.deferrals,
      asks: counters.asks,
      denials: counters.denials,
      subagents_started: counters.subagents_started,
      tool_calls_last_minute: minute.total,
      tool_calls_last_minute_by_tool: minute.by_tool as unknown as Json,
      tool_calls_last_hour: hour.total,
      tool_calls_last_hour_by_tool: hour.by_tool as unknown as Json,
    };
  }
  const out: JsonObject = { ...counters };
  out.tool_calls_last_minute = minute.total;
  out.tool_calls_last_minute_by_tool = minute.by_tool as unknown as Json;
  out.tool_calls_last_hour = hour.total;
  out.tool_calls_last_hour_by_tool = hour.by_tool as unknown as Json;
  return out;
}

/** One provenance id's trust and record into the projection's maps. */
function projectProvenance(state: SessionState, id: string, trust: Record<string, Trust>, records: JsonObject): void {
  const rec = provenanceRecord(state, id);
  setOwn(trust, id, rec ? rec.trust : 'unknown');
  if (rec) {
    const r: JsonObject = {
      origin: rec.origin,
      trust: rec.trust,
      step_id: rec.step_id,
      step_index: rec.step_index,
      turn_index: rec.turn_index,
      path: rec.path,
      derived_from: rec.derived_from,
    };
    if (rec.source_id !== undefined) r.source_id = rec.source_id;
    setOwn(records, id, r);
  }
}

/** The `input.session` projection of the state for one step. */
export function sessionProjection(state: SessionState, params: Json): JsonObject {
  const payload = isObject(params) && isObject(params.payload) ? params.payload : {};
  const referenced = referencedProvenanceIds(state, payload);
  const trust: Record<string, Trust> = {};
  const lineage: Record<string, string[]> = {};
  const records: JsonObject = {};
  for (const id of referenced) {
    projectProvenance(state, id, trust, records);
    // Bounded: trust already folds the whole lineage in (minimum at record time); the projection only
    // names the nearest ancestors for citation, so a long derivation chain cannot blow the input up.
    const ancestors = lineageOf(state, id, MAX_PROJECTED_ANCESTORS);
    setOwn(lineage, id, ancestors);
    for (const a of ancestors) projectProvenance(state, a, trust, records);
  }
  const currentStepId = isObject(params) && typeof params.request_id === 'string' ? params.request_id : undefined;
  // The fold parsed the same timestamp a moment ago (timestampMs keeps the last one).
  const nowMs = isObject(params) && typeof params.timestamp === 'string' ? timestampMs(params.timestamp) : 0;
  const { minute, hour } = windowCounts(state, nowMs);
  const effective = new Set<string>(state.intent?.parsed ?? []);
  for (const ext of state.intent_extensions) for (const c of ext.capabilities) effective.add(c);

  // Members assigned one by one: a member written after a spread inside the same literal leaves the fast path.
  let intent: JsonObject | null = null;
  if (state.intent) {
    intent = {};
    if (state.intent.raw !== undefined) intent.raw = state.intent.raw;
    intent.parsed = state.intent.parsed;
    intent.scope_mode = state.intent.scope_mode;
    intent.established_step_id = state.intent.established_step_id;
    intent.effective_capabilities = [...effective].sort();
  }
  const counters = countersProjection(state.counters as unknown as JsonObject, minute, hour);

  return {
    id: state.session_id,
    agent_id: state.agent_id,
    parent_session_id: state.parent_session_id,
    policy_mode: state.policy_mode,
    closed: state.closed,
    step_index: state.step_index,
    intent,
    intent_extensions: state.intent_extensions as unknown as Json,
    intent_change_attempts: state.intent_change_attempts,
    turn: {
      id: state.turn.id,
      index: state.turn.index,
      step_count: state.turn.step_count,
      tool_call_count: state.turn.tool_call_count,
    },
    counters,
    provenance: { summary: state.provenance.summary as unknown as Json, trust, lineage, records },
    taint: state.taint as unknown as Json,
    recent_steps: state.recent_steps as unknown as Json,
    // Session-scoped grants, pending ones, and this_request grants consumed by this very step.
    approvals: state.approvals.filter(
      (g) => g.scope === 'session' || g.consumed_by === undefined || g.consumed_by === currentStepId,
    ) as unknown as Json,
    skills: state.skills as unknown as Json,
  };
}

/**
 * Builds the policy input for one step. `state` is the session state *after* `advanceSessionState` folded
 * this step in (so counters include it and the step's own provenance ids resolve). `paramsJcs`, when the
 * caller has it, is the JCS text of exactly `params` (chain.ts `stepEntry`, replay's stored `params_jcs`):
 * the input then carries the policy's view of it as text for the engine to splice in.
 */
export function buildPolicyInput(
  method: string,
  params: Json,
  state: SessionState,
  client: ClientCapabilities,
  guardian: GuardianFacts,
  paramsJcs?: string,
  agbom?: Json,
): PolicyInput {
  const input: PolicyInput = {
    method,
    params: policyParams(params),
    session: sessionProjection(state, params),
    client: { modify_capable: client.modify_capable === true, ask_capable: client.ask_capable === true },
    guardian: { now: guardian.now, policy_version: guardian.policy_version },
  };
  // input.agbom: the session's AgBOM and what an agbom/* step proposes (src/agbom/tracker.ts, docs/agbom.md).
  if (agbom !== undefined) input.agbom = agbom;
  const paramsJson = paramsJcs !== undefined && isObject(params) ? policyParamsJson(paramsJcs) : undefined;
  if (paramsJson !== undefined) input[POLICY_PARAMS_JSON] = paramsJson;
  return input;
}
