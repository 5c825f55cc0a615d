// After the verdict: record it in the session state (deferral bound, skill approvals, src/policy recordDecision)
// and apply the session facts the step establishes. Intent is fixed at sessionStart / first agentTrigger; later
// attempts are ignored and audited (GUIDE §5). sessionEnd seals the session; an allowed subagentStart opens a
// separate chain for the subagent's session (§8.2).
//
// Split in two: `nextSessionState` is pure (no store, no clock) so replay (src/replay) folds recorded steps with
// exactly the code the live pipeline runs; `advanceSession` applies its outcome to the store.
import { recordDecision, type SessionState } from '../../policy/index.ts';
import type { Json, SessionRecord } from '../../store/types.ts';
import type { AcsDecision } from '../decisions/index.ts';
import type { AcsRequest } from '../types.ts';
import type { GuardianConfig } from './config.ts';

export interface NextSessionState {
  /** The session state the next step starts from. */
  state: SessionState;
  /** Audit events the transition raises (a later attempt to change the Intent, GUIDE §5). */
  auditEvents: { code: string; detail: string }[];
  /** The Intent this step establishes for the session row, when the row had none before; else undefined. */
  intentEstablished: Json | undefined;
}

/**
 * The pure part of advancing a session: `advanced` is the state with the step folded in (evaluateStep's
 * `state`), `prior` the state before it, `decision` the verdict delivered. `rowIntent` is the session row's
 * intent (null when not yet fixed).
 */
export function nextSessionState(prior: SessionState, advanced: SessionState, request: AcsRequest, decision: AcsDecision['decision'], rowIntent: Json = null): NextSessionState {
  const state = recordDecision(advanced, { step_id: request.params.request_id, method: request.method, params: request.params as unknown as Json }, decision);
  const auditEvents = state.intent_change_attempts > prior.intent_change_attempts
    ? [{ code: 'intent_change_ignored', detail: `${request.method} tried to change the established Intent` }]
    : [];
  const intentEstablished = rowIntent === null && state.intent !== null ? (state.intent as unknown as Json) : undefined;
  return { state, auditEvents, intentEstablished };
}

export async function advanceSession(
  config: GuardianConfig,
  request: AcsRequest,
  session: SessionRecord,
  prior: SessionState,
  advanced: SessionState,
  decision: AcsDecision,
  audit: (e: { code: string; detail: string }) => void,
): Promise<SessionRecord> {
  const { method } = request;
  const payload = request.params.payload;
  const next = nextSessionState(prior, advanced, request, decision.decision, session.intent);
  const { state } = next;
  for (const event of next.auditEvents) audit(event);
  const intentPatch = next.intentEstablished !== undefined ? { intent: next.intentEstablished } : {};
  await config.store.updateSessionState(session.id, { state: state as unknown as Json, ...intentPatch });

  const allowed = decision.decision === 'allow' || decision.decision === 'modify';
  if (method === 'steps/subagentStart' && allowed && typeof payload.subagent_session_id === 'string') {
    const childId = payload.subagent_session_id;
    if (childId !== session.id && !(await config.store.getSession(childId))) {
      const inherit = payload.intent_derivation === 'inherit_full' || payload.subagent_intent === undefined;
      await config.store.createSession({
        id: childId,
        tenantId: session.tenantId,
        agentId: typeof payload.subagent_agent_id === 'string' ? payload.subagent_agent_id : session.agentId,
        // The child's key_id binds on its first step (its HMAC key derives from its own session_id).
        keyId: null,
        hello: session.hello,
        intent: inherit ? ((state.intent as unknown as Json) ?? null) : (payload.subagent_intent as Json),
        state: null,
        parentSessionId: session.id,
        createdAt: config.now(),
      });
    }
  }
  // subagentStop is ALLOW-only; a reported final_chain_hash that is not the subagent chain's head is an integrity
  // event to audit. Omission means the framework keeps no chain, not a failure (hooks.md).
  if (method === 'steps/subagentStop' && typeof payload.final_chain_hash === 'string' && typeof payload.subagent_session_id === 'string') {
    const head = await config.store.getChainHead(payload.subagent_session_id);
    if (head?.entryHash !== payload.final_chain_hash) {
      audit({ code: 'subagent_chain_mismatch', detail: `final_chain_hash ${payload.final_chain_hash} ≠ head ${head?.entryHash ?? '(no chain)'}` });
    }
  }
  let closedAt = session.closedAt;
  if (method === 'steps/sessionEnd') {
    closedAt = config.now();
    await config.store.closeSession(session.id, closedAt);
  }
  // The row as written (src/acs/pipeline/session-cache.ts keeps it for the session's next step).
  return { ...session, state: state as unknown as Json, intent: next.intentEstablished ?? session.intent, closedAt };
}
