// Stage 6/7 — session admission for steps, in dispatch order: session lookup (-32003) → [replay (-32005), see
// freshness.ts] → agent/key binding, closed session and acs_version major (signed DENY, not errors: an error would fall to the
// client's fail-open posture, ACS §6.4) → method negotiated (-32003) → timestamp (-32006).
import { initialSessionState, isSessionState, type SessionState } from '../../policy/index.ts';
import { upgradeSessionState } from '../../policy/session-state/index.ts';
import type { SessionRecord } from '../../store/types.ts';
import type { AcsDecision } from '../decisions/index.ts';
import { AcsError, AcsErrorCode } from '../errors.ts';
import type { AcsRequest, ServerHello } from '../types.ts';
import type { Authenticated } from './authenticate.ts';
import type { GuardianConfig } from './config.ts';
import { checkTimestamp } from './freshness.ts';
import type { NegotiatedHello } from './handshake.ts';

export type Admission =
  | { admitted: true; session: SessionRecord; hello: NegotiatedHello }
  | { admitted: false; refusal: AcsDecision };

export function negotiatedHello(session: SessionRecord): NegotiatedHello {
  return session.hello as unknown as NegotiatedHello;
}

/**
 * The policy session state (src/policy/session-state/) held in SessionRecord.state; created on first use.
 * `cached`: the record is the session cache's, whose state this process wrote in the current form; the upgrade
 * check of a stored state reads the whole tool-call history.
 */
export function sessionState(session: SessionRecord, cached = false): SessionState {
  if (isSessionState(session.state)) return cached ? session.state : upgradeSessionState(session.state);
  return initialSessionState({
    session_id: session.id,
    agent_id: session.agentId,
    parent_session_id: session.parentSessionId,
    intent: session.intent,
  });
}

export async function lookupSession(config: GuardianConfig, request: AcsRequest): Promise<SessionRecord> {
  const session = await config.store.getSession(request.params.metadata.session_id);
  if (!session) {
    // ACS §4 (handshake before any hook traffic): a step for a session that never completed a handshake is an error, not a decision.
    throw new AcsError(
      AcsErrorCode.CapabilityNotNegotiated,
      'no_session',
      'no negotiated session: send handshake/hello first',
      { method: request.method },
    );
  }
  return session;
}

/**
 * Runs under the session lock, without the replay check: an admitted step records its keys in the same
 * transaction as its entry, and the caller records them before answering a refusal (so -32005 still wins over
 * every check below, docs/conformance.md). Writes nothing: the key_id binding of a session's first step is returned in
 * the session and committed with the step.
 */
export function admitStep(
  config: GuardianConfig,
  request: AcsRequest,
  auth: Authenticated,
  session: SessionRecord,
  now: Date = config.now(),
): Admission {
  if (request.params.metadata.agent_id !== session.agentId) {
    return {
      admitted: false,
      refusal: {
        decision: 'deny',
        reasoning: `agent_id ${request.params.metadata.agent_id} is not the agent bound to this session at handshake.`,
        reason_codes: ['agent_id_not_bound'],
      },
    };
  }
  if (session.keyId !== null && session.keyId !== auth.keyId) {
    return {
      admitted: false,
      refusal: {
        decision: 'deny',
        reasoning: 'The request is signed with a key_id other than the one bound to this session.',
        reason_codes: ['key_not_bound'],
      },
    };
  }
  if (session.closedAt !== null) {
    return {
      admitted: false,
      refusal: {
        decision: 'deny',
        reasoning: 'The session was sealed by sessionEnd; no further steps are accepted.',
        reason_codes: ['session_closed'],
      },
    };
  }
  const hello = negotiatedHello(session);
  const server: ServerHello = hello.server;
  // §3 forward compatibility: a version is accepted only on the negotiated major. The §17 registry fixes no code
  // for a mismatch after the handshake, so it is a signed DENY (vector vae2037ee96435463).
  if (request.params.acs_version.split('.')[0] !== server.negotiated_version.split('.')[0]) {
    return {
      admitted: false,
      refusal: {
        decision: 'deny',
        reasoning: `acs_version ${request.params.acs_version} does not share the negotiated major version ${server.negotiated_version}.`,
        reason_codes: ['acs_version_mismatch'],
      },
    };
  }
  if (!server.methods_evaluated.includes(request.method)) {
    throw new AcsError(
      AcsErrorCode.CapabilityNotNegotiated,
      'method_not_negotiated',
      `${request.method} is not in this session's methods_evaluated`,
      { method: request.method },
    );
  }
  checkTimestamp(request, now, config.skewWindowMs);
  return { admitted: true, session: session.keyId === null ? { ...session, keyId: auth.keyId } : session, hello };
}
