// Stage 9 — evaluation: fold the step into the session state, build the ACS policy input (src/policy/input.ts),
// call the engine, finalise the decision. Any engine failure or invalid output becomes DENY `evaluation_failed`
// with reasoning (fail closed).
import { advanceSessionState, buildPolicyInput, type SessionState } from '../../policy/index.ts';
import type { Json } from '../../store/types.ts';
import { evaluationFailed, finalizeDecision, type FinalDecision } from '../decisions/index.ts';
import type { Disposition } from '../methods.ts';
import type { AcsRequest } from '../types.ts';
import type { GuardianConfig } from './config.ts';

export interface Evaluated extends FinalDecision {
  revision: string;
  durationMs: number;
  /** The engine's own share of `durationMs` (its Wasm evaluation); 0 when the engine failed. Replay reports it. */
  engineMs: number;
  /** The session state with this step folded in (before the decision is recorded). */
  state: SessionState;
}

/**
 * `paramsJcs`, when the caller already has it, is the JCS text of `request.params` (chain.ts `stepEntry`,
 * replay's stored entry): the engine splices it into the policy input instead of stringifying params again.
 */
export async function evaluateStep(
  config: GuardianConfig,
  request: AcsRequest,
  prior: SessionState,
  permitted: readonly Disposition[],
  wrappedMcp: boolean,
  paramsJcs?: string,
): Promise<Evaluated> {
  const now = config.now();
  const started = performance.now();
  const params = request.params as unknown as Json;
  const state = advanceSessionState(prior, request.method, params);
  const ctx = {
    permitted,
    method: request.method,
    wrappedMcp,
    client: config.client,
    deferralsSoFar: prior.counters.deferrals,
    maxDeferrals: config.maxDeferralsPerSession,
    revision: config.engine.revision,
    validator: config.validator,
  };
  try {
    const input = buildPolicyInput(request.method, params, state, { modify_capable: config.client.modifyCapable, ask_capable: config.client.askCapable }, {
      now: now.toISOString(),
      policy_version: config.engine.revision,
    }, paramsJcs);
    const evaluation = await config.engine.evaluate(input, { now });
    const final = finalizeDecision(evaluation.decision, { ...ctx, revision: evaluation.revision });
    return { ...final, state, revision: evaluation.revision, durationMs: performance.now() - started, engineMs: evaluation.durationMs };
  } catch (err) {
    const detail = err instanceof Error ? err.message : String(err);
    const final = finalizeDecision(evaluationFailed(detail), ctx);
    final.auditEvents.push({ code: 'evaluation_failed', detail });
    return { ...final, state, revision: config.engine.revision, durationMs: performance.now() - started, engineMs: 0 };
  }
}
