// After the verdict: record it in the session state (deferral bound, skill approvals, src/policy recordDecision)
// and apply the session facts the step establishes. Intent is fixed at sessionStart / first agentTrigger; later
// attempts are ignored and audited (ACS §8.4). sessionEnd seals the session; an allowed subagentStart opens a
// separate chain for the subagent's session (§8.2).
//
// `nextSessionState` is pure (no store, no clock) so replay (src/replay) folds recorded steps with exactly the
// code the live pipeline runs; `sessionWrites` turns its outcome into the session changes the pipeline commits
// with the step's entry (GuardianStore.commitStep), so state and chain can never disagree.
import { recordDecision, type SessionState } from '../../policy/index.ts';
import type { Json } from '../../json.ts';
import type { SessionRecord, StepCommit } from '../../store/types.ts';
import type { AcsDecision } from '../decisions/index.ts';
import type { AcsRequest } from '../types.ts';
import type { GuardianConfig } from './config.ts';

export interface NextSessionState {
  /** The session state the next step starts from. */
  state: SessionState;
  /** Audit events the transition raises (a later attempt to change the Intent, ACS §8.4). */
  auditEvents: { code: string; detail: string }[];
  /** The Intent this step establishes for the session row, when the row had none before; else undefined. */
  intentEstablished: Json | undefined;
}

/**
 * The pure part of advancing a session: `advanced` is the state with the step folded in (evaluateStep's
 * `state`), `prior` the state before it, `decision` the verdict delivered. `rowIntent` is the session row's
 * intent (null when not yet fixed).
 */
export function nextSessionState(
  prior: SessionState,
  advanced: SessionState,
  request: AcsRequest,
  decision: AcsDecision['decision'],
  rowIntent: Json = null,
): NextSessionState {
  const state = recordDecision(
    advanced,
    { step_id: request.params.request_id, method: request.method, params: request.params as unknown as Json },
    decision,
  );
  const auditEvents =
    state.intent_change_attempts > prior.intent_change_attempts
      ? [{ code: 'intent_change_ignored', detail: `${request.method} tried to change the established Intent` }]
      : [];
  const intentEstablished = rowIntent === null && state.intent !== null ? (state.intent as unknown as Json) : undefined;
  return { state, auditEvents, intentEstablished };
}

/** What a step writes to its session (committed with its entry) and the row as it will read afterwards. */
export interface SessionWrites {
  patch: StepCommit['session'];
  /** The subagent session an allowed subagentStart opens (§8.2: a separate chain). */
  child?: StepCommit['childSession'];
  written: SessionRecord;
  auditEvents: { code: string; detail: string }[];
}

/**
 * The row as this step leaves it, without the head it was read at (the cache keeps the head it writes next to
 * the row). Copied, then assigned: members written after a leading spread take V8's slow path.
 */
function writtenRow(
  session: SessionRecord,
  state: Json,
  intent: SessionRecord['intent'],
  closedAt: SessionRecord['closedAt'],
): SessionRecord {
  const row: SessionRecord = Object.assign({}, session);
  // Only rows read from the store carry a head; the cache keeps rows without one, so this is the rare case.
  if (row.stateHead !== undefined) delete row.stateHead;
  row.state = state;
  row.intent = intent;
  row.closedAt = closedAt;
  return row;
}

/**
 * The store-facing half of advancing a session, still without I/O: `session` is the admitted row (key_id bound),
 * `bindsKey` whether this step binds it. sessionEnd seals the session.
 */
export function sessionWrites(
  config: GuardianConfig,
  request: AcsRequest,
  session: SessionRecord,
  bindsKey: boolean,
  prior: SessionState,
  advanced: SessionState,
  decision: AcsDecision,
): SessionWrites {
  const { method } = request;
  const payload = request.params.payload;
  const next = nextSessionState(prior, advanced, request, decision.decision, session.intent);
  const { state } = next;
  // stateBase: the row's state as the store holds it at the step's head, so the store can keep just the change.
  const patch: StepCommit['session'] = { state: state as unknown as Json, stateBase: session.state };
  if (next.intentEstablished !== undefined) patch.intent = next.intentEstablished;
  if (bindsKey && session.keyId !== null) patch.keyId = session.keyId;
  let child: StepCommit['childSession'];
  const allowed = decision.decision === 'allow' || decision.decision === 'modify';
  if (
    method === 'steps/subagentStart' &&
    allowed &&
    typeof payload.subagent_session_id === 'string' &&
    payload.subagent_session_id !== session.id
  ) {
    const inherit = payload.intent_derivation === 'inherit_full' || payload.subagent_intent === undefined;
    child = {
      id: payload.subagent_session_id,
      tenantId: session.tenantId,
      agentId: typeof payload.subagent_agent_id === 'string' ? payload.subagent_agent_id : session.agentId,
      // The child's key_id binds on its first step (its HMAC key derives from its own session_id).
      keyId: null,
      hello: session.hello,
      intent: inherit ? ((state.intent as unknown as Json) ?? null) : (payload.subagent_intent as Json),
      state: null,
      parentSessionId: session.id,
      createdAt: config.now(),
    };
  }
  if (method === 'steps/sessionEnd') patch.closedAt = config.now();
  return {
    patch,
    ...(child ? { child } : {}),
    written: writtenRow(
      session,
      state as unknown as Json,
      next.intentEstablished ?? session.intent,
      patch.closedAt ?? session.closedAt,
    ),
    auditEvents: next.auditEvents,
  };
}

/**
 * subagentStop is ALLOW-only; a reported final_chain_hash that is not the subagent chain's head is an integrity
 * event to audit. Omission means the framework keeps no chain, not a failure (hooks.md).
 */
export async function auditSubagentStop(
  config: GuardianConfig,
  request: AcsRequest,
  audit: (e: { code: string; detail: string }) => void,
): Promise<void> {
  const payload = request.params.payload;
  if (
    request.method !== 'steps/subagentStop' ||
    typeof payload.final_chain_hash !== 'string' ||
    typeof payload.subagent_session_id !== 'string'
  )
    return;
  const head = await config.store.getChainHead(payload.subagent_session_id);
  if (head?.entryHash !== payload.final_chain_hash) {
    audit({
      code: 'subagent_chain_mismatch',
      detail: `final_chain_hash ${payload.final_chain_hash} ≠ head ${head?.entryHash ?? '(no chain)'}`,
    });
  }
}
