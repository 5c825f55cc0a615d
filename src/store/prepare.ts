// Appends and steps validated and serialised before they join a batch, so one bad item cannot fail its
// neighbours' transaction.
import { type PreparedAgbomVersion, prepareAgbomVersion } from './agbom/versions.ts';
import { isSha256Hex, sha256Hex, type ContextEntryContent } from '../chain/index.ts';
import { StoreError } from './errors.ts';
import type { sessions } from './schema.ts';
import { stateDiff } from './state-delta.ts';
import type { Json } from '../json.ts';
import type { NewContextEntry, ReplayKeyKind, SessionRecord, StepCommit } from './types.ts';
import { isValidDate, jcsOf, requireId, stateTextOf } from './values.ts';

export interface PreparedAppend {
  content: ContextEntryContent;
  contentJcs: string;
  paramsJcs: string;
  provenanceSummaryJcs: string | null;
}

export function prepareAppend(entry: NewContextEntry): PreparedAppend {
  if (!entry || typeof entry !== 'object' || !entry.content || typeof entry.content !== 'object') {
    throw new StoreError('invalid_input', 'entry.content must be an object');
  }
  const { entry_hash: _h, previous_hash: _p, ...content } = entry.content;
  requireId(content.entry_id, 'entry_id');
  requireId(content.step_id, 'step_id');
  requireId(content.step_type, 'step_type');
  if (content.timestamp !== undefined && typeof content.timestamp !== 'string') {
    throw new StoreError('invalid_input', 'timestamp must be a string when present');
  }
  const paramsJcs = typeof entry.paramsJcs === 'string' ? entry.paramsJcs : jcsOf(entry.params, 'params');
  if (content.request_hash !== undefined) {
    if (!isSha256Hex(content.request_hash)) {
      throw new StoreError('invalid_input', 'request_hash must be 64 lowercase hex digits');
    }
    // ACS §8.2: request_hash is over params as received; refuse a pair that `audit verify` would reject.
    // sha256Hex(JCS(params)) is computeRequestHash(params); the JCS text is already at hand.
    if (sha256Hex(paramsJcs) !== content.request_hash) {
      throw new StoreError('invalid_input', 'request_hash does not match SHA-256(JCS(params))');
    }
  }
  // The caller's text when it hashed the content itself (the pipeline signs the resulting chain_hash).
  const contentJcs = typeof entry.contentJcs === 'string' ? entry.contentJcs : jcsOf(content, 'entry content');
  return {
    content: content as ContextEntryContent,
    contentJcs,
    paramsJcs,
    provenanceSummaryJcs:
      content.provenance_summary === undefined ? null : jcsOf(content.provenance_summary, 'provenance_summary'),
  };
}

export type NewSession = Omit<SessionRecord, 'createdAt' | 'closedAt'> & { createdAt?: Date };

export function toSessionRow(session: NewSession): typeof sessions.$inferInsert {
  return {
    id: requireId(session.id, 'session id'),
    tenantId: session.tenantId ?? null,
    agentId: requireId(session.agentId, 'agent id'),
    keyId: session.keyId ?? null,
    helloJcs: jcsOf(session.hello ?? null, 'hello'),
    intentJcs: jcsOf(session.intent ?? null, 'intent'),
    stateJcs: stateTextOf(session.state ?? null),
    parentSessionId: session.parentSessionId ?? null,
    ...(session.createdAt ? { createdAt: session.createdAt } : {}),
  };
}

/** A StepCommit validated and serialised before it joins a batch. */
export interface PreparedStep {
  append: PreparedAppend;
  expected: { seq: number; headHash: string | null };
  keys: { kind: ReplayKeyKind; value: string }[];
  keysExpireAt: string;
  resultJcs: string;
  bundleRevision: string | null;
  evaluationDurationMs: number;
  /** The whole state for the session row (a state checkpoint), or null. */
  stateJcs: string | null;
  /** The state's change, stored with the entry, when the row does not get the whole state. */
  stateDeltaJcs: string | null;
  intentJcs: string | null;
  keyId: string | null;
  closedAt: string | null;
  child: typeof sessions.$inferInsert | null;
  agbom: PreparedAgbomVersion | null;
}

/** JSON text of a state patch (see stateTextOf for why not JCS); null when the step left the state as it was. */
function stateDeltaTextOf(base: Json, next: Json): string | null {
  const patch = stateDiff(base, next);
  return patch === undefined ? null : stateTextOf(patch);
}

export function requireReplayKey(kind: unknown, value: unknown): void {
  if (kind !== 'request_id' && kind !== 'nonce')
    throw new StoreError('invalid_input', `unknown replay key kind ${String(kind)}`);
  requireId(value, kind);
}

export function prepareStep(step: StepCommit, checkpointEvery: number): PreparedStep {
  for (const k of step.replayKeys) requireReplayKey(k.kind, k.value);
  if (new Set(step.replayKeys.map((k) => k.kind)).size !== step.replayKeys.length)
    throw new StoreError('invalid_input', 'one replay key per kind');
  if (!isValidDate(step.replayKeysExpireAt))
    throw new StoreError('invalid_input', 'replayKeysExpireAt must be a valid Date');
  if (step.session.closedAt !== undefined && !isValidDate(step.session.closedAt))
    throw new StoreError('invalid_input', 'closedAt must be a valid Date');
  if (!Number.isFinite(step.decision.evaluationDurationMs))
    throw new StoreError('invalid_input', 'evaluationDurationMs must be a finite number');
  const head = step.expectedHead;
  if (head !== null && (!Number.isInteger(head.seq) || head.seq < 0 || !isSha256Hex(head.entryHash))) {
    throw new StoreError('invalid_input', 'expectedHead must be null or { seq ≥ 0, entryHash: 64 hex digits }');
  }
  const { state, stateBase } = step.session;
  // The row is rewritten anyway when the step binds a key, fixes the intent or seals the session.
  const rowWritten =
    step.session.intent !== undefined || step.session.keyId !== undefined || step.session.closedAt !== undefined;
  const seq = (head?.seq ?? -1) + 1;
  const whole = state !== undefined && (stateBase === undefined || rowWritten || (seq + 1) % checkpointEvery === 0);
  return {
    append: prepareAppend(step.entry),
    expected: head === null ? { seq: -1, headHash: null } : { seq: head.seq, headHash: head.entryHash },
    keys: step.replayKeys,
    keysExpireAt: step.replayKeysExpireAt.toISOString(),
    resultJcs:
      typeof step.decision.resultJcs === 'string' ? step.decision.resultJcs : jcsOf(step.decision.result, 'result'),
    bundleRevision: step.decision.bundleRevision ?? null,
    evaluationDurationMs: step.decision.evaluationDurationMs,
    stateJcs: whole ? stateTextOf(state) : null,
    stateDeltaJcs: state === undefined || whole ? null : stateDeltaTextOf(stateBase ?? null, state),
    intentJcs: step.session.intent === undefined ? null : jcsOf(step.session.intent, 'intent'),
    keyId: step.session.keyId ?? null,
    closedAt: step.session.closedAt?.toISOString() ?? null,
    child: step.childSession ? toSessionRow(step.childSession) : null,
    agbom: step.agbom ? prepareAgbomVersion(step.agbom) : null,
  };
}
