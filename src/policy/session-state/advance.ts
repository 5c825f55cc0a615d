// The fold of one step into the session state. Pure and deterministic — it depends only on the steps (and
// decisions) fed in, never on the clock — so replaying a chain rebuilds it byte for byte.
import { isObject, type Json } from '../../json.ts';
import { ownValue, withMember } from './copy-on-write.ts';
import { parseIntent } from './initial.ts';
import { normaliseDigest, str, stringList } from './payload-fields.ts';
import { collectProvenance, distinctProvenanceIds, foldProvenance, rememberFold } from './provenance.ts';
import { appendRecentStep, recentStep } from './recent-steps.ts';
import { appendToolCall, timestampMs, toolOf } from './tool-calls.ts';
import type { ApprovalGrant, SessionState, SessionStateOptions, SkillRegistration } from './types.ts';

const DEFAULT_RECENT_STEPS = 20;
const DEFAULT_RECENT_TOOL_CALLS = 200;

/** §9.1 scope this_request: a pending grant applies to the next tool call only. */
function isPendingGrant(g: ApprovalGrant): boolean {
  return g.scope === 'this_request' && g.consumed_by === undefined;
}

/**
 * Folds one evaluated step (the request params as received) into the state and returns the new state;
 * the input state is not mutated. Call it before building the policy input so counts include this step.
 *
 * Copy on write: the new state shares every member this step does not change with `state` (states are
 * never mutated once returned), so a step costs what it changes, not the size of the session — the
 * provenance records map is copied only by a step that records new provenance.
 */
export function advanceSessionState(
  state: SessionState,
  method: string,
  params: Json,
  options: SessionStateOptions = {},
): SessionState {
  const p = isObject(params) ? params : {};
  const payload = isObject(p.payload) ? p.payload : {};
  const metadata = isObject(p.metadata) ? p.metadata : {};
  const stepId = str(p.request_id) ?? `step-${state.step_index}`;
  const timestamp = str(p.timestamp) ?? '';
  const metaTurnId = str(metadata.turn_id) ?? null;
  // Copies then assignments throughout, never `{ ...x, member }` (see withMember); same members, same order.
  const counters = { ...state.counters };
  counters.steps_by_method = withMember(
    state.counters.steps_by_method,
    method,
    (ownValue(state.counters.steps_by_method, method) ?? 0) + 1,
  );
  const next: SessionState = { ...state };
  next.counters = counters;

  // Turn bookkeeping (turnStart opens; a step naming an unseen turn opens one implicitly).
  if (method === 'steps/turnStart') {
    next.turn = {
      id: str(payload.turn_id) ?? metaTurnId,
      index: state.turn.index + 1,
      step_count: 0,
      tool_call_count: 0,
      open: true,
    };
    counters.turns_total += 1;
  } else if (metaTurnId !== null && metaTurnId !== state.turn.id) {
    next.turn = { id: metaTurnId, index: state.turn.index + 1, step_count: 0, tool_call_count: 0, open: true };
    counters.turns_total += 1;
  } else {
    next.turn = { ...state.turn };
  }
  next.turn.step_count += 1;

  next.step_index += 1;
  counters.steps_total += 1;

  const { tool, capability, isToolCall } = toolOf(method, payload);
  if (isToolCall) {
    next.turn.tool_call_count += 1;
    counters.tool_calls_total += 1;
    const key = tool ?? '';
    counters.tool_calls_by_tool = withMember(
      state.counters.tool_calls_by_tool,
      key,
      (ownValue(state.counters.tool_calls_by_tool, key) ?? 0) + 1,
    );
    next.recent_tool_calls = appendToolCall(
      state.recent_tool_calls,
      [key, timestampMs(timestamp)],
      options.recentToolCalls ?? DEFAULT_RECENT_TOOL_CALLS,
    );
    // §9.1 scope this_request: pending grants apply to this call only, never to later ones.
    if (state.approvals.some(isPendingGrant))
      next.approvals = state.approvals.map((g) => (isPendingGrant(g) ? { ...g, consumed_by: stepId } : g));
  }

  // Intent is fixed at sessionStart or the first agentTrigger (§8.4); later attempts are counted, not applied.
  if ((method === 'steps/sessionStart' || method === 'steps/agentTrigger') && payload.intent !== undefined) {
    if (next.intent === null) next.intent = parseIntent(payload.intent, stepId);
    else next.intent_change_attempts += 1;
  }
  if (method === 'steps/sessionStart' && typeof payload.policy_mode === 'string')
    next.policy_mode = payload.policy_mode;
  if (method === 'steps/subagentStart') counters.subagents_started += 1;
  if (method === 'steps/sessionEnd') next.closed = true;

  if (method === 'steps/skillRegister' && typeof payload.skill_id === 'string') {
    const def = isObject(payload.definition) ? payload.definition : {};
    const comp = isObject(payload.composition) ? payload.composition : {};
    next.skills = {
      ...state.skills,
      registered: withMember<SkillRegistration>(state.skills.registered, payload.skill_id, {
        digest: normaliseDigest(def.digest),
        step_id: stepId,
        declared_capabilities: stringList(payload.declared_capabilities),
        composed_skills: stringList(comp.composed_skills),
        approved: true,
      }),
    };
  }
  if (
    method === 'steps/skillLoad' &&
    typeof payload.skill_id === 'string' &&
    !state.skills.loaded.includes(payload.skill_id)
  ) {
    next.skills = { ...next.skills, loaded: [...state.skills.loaded, payload.skill_id] };
  }
  if (method === 'steps/skillUnload' && typeof payload.skill_id === 'string') {
    const skillId = payload.skill_id;
    next.skills = { ...next.skills, loaded: state.skills.loaded.filter((s) => s !== skillId) };
  }

  const found = collectProvenance(payload);
  const stepUntrusted = foldProvenance(state, next, found, stepId, options);

  const provenanceIds = distinctProvenanceIds(found);
  const recent = recentStep(
    stepId,
    next.step_index,
    method,
    next.turn.index,
    next.turn.id,
    timestamp,
    provenanceIds,
    stepUntrusted !== null,
    tool,
    capability,
  );
  next.recent_steps = appendRecentStep(state.recent_steps, recent, options.recentSteps ?? DEFAULT_RECENT_STEPS);
  rememberFold(next, payload, provenanceIds);

  if (method === 'steps/turnEnd') next.turn.open = false;
  return next;
}
