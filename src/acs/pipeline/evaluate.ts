// Stage 9 — evaluation: the policy input (ACS input contract), the engine call, and decision finalisation.
// Any engine failure or invalid output becomes DENY `evaluation_failed` with reasoning (fail closed).
import type { PolicyInput } from '../../policy/types.ts';
import type { Json, SessionRecord } from '../../store/types.ts';
import { evaluationFailed, finalizeDecision, type FinalDecision } from '../decisions/index.ts';
import type { Disposition } from '../methods.ts';
import type { AcsRequest } from '../types.ts';
import type { GuardianConfig } from './config.ts';
import { negotiatedHello, sessionState } from './session.ts';

export function buildPolicyInput(config: GuardianConfig, request: AcsRequest, session: SessionRecord, chainHead: string | null, now: Date): PolicyInput {
  const hello = negotiatedHello(session);
  return {
    method: request.method,
    params: request.params as unknown as Json,
    session: {
      id: session.id,
      agent_id: session.agentId,
      parent_session_id: session.parentSessionId,
      intent: session.intent,
      state: sessionState(session) as unknown as Json,
      chain_head: chainHead,
      negotiated_version: hello.server.negotiated_version,
      profiles_accepted: (hello.server.profiles_accepted ?? []) as Json,
    },
    client: { modify_capable: config.client.modifyCapable, ask_capable: config.client.askCapable },
    guardian: { now: now.toISOString(), policy_version: config.engine.revision },
  };
}

export interface Evaluated extends FinalDecision {
  revision: string;
  durationMs: number;
}

export async function evaluateStep(
  config: GuardianConfig,
  request: AcsRequest,
  session: SessionRecord,
  chainHead: string,
  permitted: readonly Disposition[],
  wrappedMcp: boolean,
): Promise<Evaluated> {
  const now = config.now();
  const started = performance.now();
  const state = sessionState(session);
  const ctx = {
    permitted,
    method: request.method,
    wrappedMcp,
    client: config.client,
    deferralsSoFar: state.deferrals,
    maxDeferrals: config.maxDeferralsPerSession,
    revision: config.engine.revision,
    validator: config.validator,
  };
  try {
    const evaluation = await config.engine.evaluate(buildPolicyInput(config, request, session, chainHead, now), { now });
    const final = finalizeDecision(evaluation.decision, { ...ctx, revision: evaluation.revision });
    return { ...final, revision: evaluation.revision, durationMs: performance.now() - started };
  } catch (err) {
    const detail = err instanceof Error ? err.message : String(err);
    const final = finalizeDecision(evaluationFailed(detail), ctx);
    final.auditEvents.push({ code: 'evaluation_failed', detail });
    return { ...final, revision: config.engine.revision, durationMs: performance.now() - started };
  }
}
