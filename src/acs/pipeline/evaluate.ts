// Stage 9 — evaluation: fold the step into the session state, build the ACS policy input (src/policy/input.ts),
// call the engine, finalise the decision. Any engine failure or invalid output becomes DENY `evaluation_failed`
// with reasoning (fail closed).
import { advanceSessionState, buildPolicyInput, type SessionState } from '../../policy/index.ts';
import type { Json } from '../../json.ts';
import { evaluationFailed, finalizeDecision, type DecisionContext, type FinalDecision } from '../decisions/index.ts';
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
  agbom?: Json,
): Promise<Evaluated> {
  const now = config.now();
  const started = performance.now();
  const params = request.params as unknown as Json;
  const deferralsSoFar = prior.counters.deferrals;
  const state = advanceSessionState(prior, request.method, params);
  try {
    const input = buildPolicyInput(
      request.method,
      params,
      state,
      { modify_capable: config.client.modifyCapable, ask_capable: config.client.askCapable },
      {
        now: now.toISOString(),
        policy_version: config.engine.revision,
      },
      paramsJcs,
      agbom,
    );
    const evaluation = await config.engine.evaluate(input, { now });
    const final = finalizeDecision(
      evaluation.decision,
      decisionContext(config, request.method, deferralsSoFar, permitted, wrappedMcp, evaluation.revision),
    );
    return evaluated(final, state, evaluation.revision, performance.now() - started, evaluation.durationMs);
  } catch (err) {
    const detail = err instanceof Error ? err.message : String(err);
    const final = finalizeDecision(
      evaluationFailed(detail),
      decisionContext(config, request.method, deferralsSoFar, permitted, wrappedMcp, config.engine.revision),
    );
    final.auditEvents.push({ code: 'evaluation_failed', detail });
    return evaluated(final, state, config.engine.revision, performance.now() - started, 0);
  }
}

// Object literals, not `{ ...final, state, … }`: on Node 20 (V8 11.3), in optimised code, each member a spread
// object lacks takes the slow path and gives every result its own hidden class.
function decisionContext(
  config: GuardianConfig,
  method: string,
  deferralsSoFar: number,
  permitted: readonly Disposition[],
  wrappedMcp: boolean,
  revision: string,
): DecisionContext {
  return {
    permitted,
    method,
    wrappedMcp,
    client: config.client,
    deferralsSoFar,
    maxDeferrals: config.maxDeferralsPerSession,
    revision,
    validator: config.validator,
  };
}

/** `{ ...final, state, revision, durationMs, engineMs }`, member for member. */
function evaluated(
  final: FinalDecision,
  state: SessionState,
  revision: string,
  durationMs: number,
  engineMs: number,
): Evaluated {
  return {
    decision: final.decision,
    auditEvents: final.auditEvents,
    deferred: final.deferred,
    state,
    revision,
    durationMs,
    engineMs,
  };
}
