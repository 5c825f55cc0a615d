// After the verdict: the session facts a step establishes. Intent is fixed at sessionStart / first agentTrigger
// (later attempts are ignored and audited, GUIDE §5 IBAC); sessionEnd seals the chain; an allowed subagentStart
// opens a separate chain for the subagent's session (§8.2); DEFERs count toward the per-session bound (§6).
import type { Json, SessionRecord } from '../../store/types.ts';
import type { AcsDecision } from '../decisions/index.ts';
import type { AcsRequest } from '../types.ts';
import type { AuditEvent, GuardianConfig } from './config.ts';
import { sessionState } from './session.ts';

const isObject = (v: unknown): v is Record<string, unknown> => v !== null && typeof v === 'object' && !Array.isArray(v);

export async function advanceSession(config: GuardianConfig, request: AcsRequest, session: SessionRecord, decision: AcsDecision, audit: (e: Omit<AuditEvent, 'sessionId' | 'requestId' | 'method'>) => void): Promise<void> {
  const { method } = request;
  const payload = request.params.payload;
  const state = sessionState(session);
  const allowed = decision.decision === 'allow' || decision.decision === 'modify';
  let intent: Json | undefined;
  state.steps = (state.steps ?? 0) + 1;
  if (decision.decision === 'defer') state.deferrals += 1;

  if ((method === 'steps/sessionStart' || method === 'steps/agentTrigger') && payload.intent !== undefined) {
    if (session.intent === null && allowed) intent = payload.intent as Json;
    else if (session.intent !== null) audit({ code: 'intent_change_ignored', detail: `${method} tried to change the established Intent` });
  }
  if (method === 'steps/turnStart' && allowed && typeof payload.turn_id === 'string') state.turn_id = payload.turn_id;
  if (method === 'steps/turnEnd') delete state.turn_id;
  if (method === 'steps/skillRegister' && allowed && typeof payload.skill_id === 'string') {
    const digest = (isObject(payload.definition) ? payload.definition.digest : undefined) as Json | undefined;
    state.approved_skills = [...(state.approved_skills ?? []), { skill_id: payload.skill_id, digest: digest ?? null }];
  }
  await config.store.updateSessionState(session.id, { state: state as unknown as Json, ...(intent !== undefined ? { intent } : {}) });

  if (method === 'steps/subagentStart' && allowed && typeof payload.subagent_session_id === 'string') {
    const childId = payload.subagent_session_id;
    if (childId !== session.id && !(await config.store.getSession(childId))) {
      const derivation = payload.intent_derivation;
      const childIntent = derivation === 'inherit_full' || payload.subagent_intent === undefined ? session.intent : (payload.subagent_intent as Json);
      await config.store.createSession({
        id: childId,
        tenantId: session.tenantId,
        agentId: typeof payload.subagent_agent_id === 'string' ? payload.subagent_agent_id : session.agentId,
        // The child's key_id binds on its first step: its HMAC key is derived from its own session_id.
        keyId: null,
        hello: session.hello,
        intent: childIntent,
        state: { deferrals: 0 },
        parentSessionId: session.id,
        createdAt: config.now(),
      });
    }
  }
  if (method === 'steps/sessionEnd') await config.store.closeSession(session.id, config.now());
}
