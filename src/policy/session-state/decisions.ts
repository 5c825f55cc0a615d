// Folding what answered a step into the state: the decision delivered (§6) and an approver's grant (§9).
import { isObject, type Json } from '../../json.ts';
import { setOwn } from './copy-on-write.ts';
import { withDecision } from './recent-steps.ts';
import type { ApprovalGrant, SessionState, SkillRegistration } from './types.ts';

function clone<T>(v: T): T {
  return structuredClone(v);
}

/**
 * Folds the decision delivered for a step into the state: deferral/ask/deny counters (the §6 deferral bound),
 * the step's decision in recent_steps, and a denied skillRegister is no longer an approved registration.
 * Copy on write, like advanceSessionState.
 */
export function recordDecision(
  state: SessionState,
  step: { step_id: string; method: string; params?: Json },
  decision: string,
): SessionState {
  const next: SessionState = { ...state };
  if (decision === 'defer' || decision === 'ask' || decision === 'deny') {
    const counters = { ...state.counters };
    if (decision === 'defer') counters.deferrals = state.counters.deferrals + 1;
    else if (decision === 'ask') counters.asks = state.counters.asks + 1;
    else counters.denials = state.counters.denials + 1;
    next.counters = counters;
  }
  // The first match, as findIndex would give, without a closure per step.
  let at = -1;
  for (let i = 0; i < state.recent_steps.length; i++) {
    if (state.recent_steps[i].step_id === step.step_id) {
      at = i;
      break;
    }
  }
  if (at >= 0) {
    next.recent_steps = [...state.recent_steps];
    next.recent_steps[at] = withDecision(state.recent_steps[at], decision);
  }
  if (step.method === 'steps/skillRegister' && decision !== 'allow') {
    let registered: Record<string, SkillRegistration> | undefined;
    for (const [id, reg] of Object.entries(state.skills.registered)) {
      if (reg.step_id !== step.step_id) continue;
      registered ??= { ...state.skills.registered };
      setOwn(registered, id, { ...reg, approved: false });
    }
    if (registered) next.skills = { ...state.skills, registered };
  }
  if (step.method === 'steps/skillLoad' && decision !== 'allow') {
    const payload = isObject(step.params) && isObject(step.params.payload) ? step.params.payload : {};
    const skillId = payload.skill_id;
    if (typeof skillId === 'string')
      next.skills = { ...next.skills, loaded: next.skills.loaded.filter((s) => s !== skillId) };
  }
  return next;
}

/**
 * Records an approver's grant (§9). Scope `session` appends to the intent extensions (kept apart from
 * parser_provenance, §9.1); `this_request` grants stay in `approvals` for policies to match.
 */
export function recordApproval(state: SessionState, grant: ApprovalGrant): SessionState {
  const next: SessionState = { ...state, approvals: [...state.approvals, clone(grant)] };
  if (grant.scope === 'session' && grant.capabilities.length > 0) {
    const ext: SessionState['intent_extensions'][number] = {
      capabilities: [...grant.capabilities],
      approver: grant.approver,
      ask_step_id: grant.ask_step_id,
    };
    if (grant.provenance !== undefined) ext.provenance = grant.provenance;
    next.intent_extensions = [...state.intent_extensions, ext];
  }
  return next;
}
