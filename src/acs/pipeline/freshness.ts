// Replay protection (§10.3): duplicate request_id / nonce within a session → -32005; timestamp further than the
// skew window from the Guardian clock, past or future → -32006 with data.skew_window_ms.
import type { GuardianStore, ReplayKeyKind } from '../../store/types.ts';
import { AcsError, AcsErrorCode } from '../errors.ts';
import type { AcsRequest } from '../types.ts';

/** The §10.3 keys a request burns (request_id, and nonce when present) and until when they are kept. */
export function replayKeysOf(
  request: AcsRequest,
  now: Date,
  skewWindowMs: number,
): { keys: { kind: ReplayKeyKind; value: string }[]; expiresAt: Date } {
  const claimed = Date.parse(request.params.timestamp);
  // Kept two skew windows past the later of arrival and the claimed timestamp; the store expires keys against
  // the wall clock, so the wall clock joins the Guardian clock here.
  const base = Math.max(Date.now(), now.getTime(), Number.isFinite(claimed) ? claimed : 0);
  const keys: { kind: ReplayKeyKind; value: string }[] = [{ kind: 'request_id', value: request.params.request_id }];
  if (request.params.nonce !== undefined) keys.push({ kind: 'nonce', value: request.params.nonce });
  return { keys, expiresAt: new Date(base + 2 * Math.max(skewWindowMs, 1000)) };
}

/** -32005 for a key seen before (§10.3). */
export function replayDetected(kind: ReplayKeyKind, request: AcsRequest): AcsError {
  return kind === 'request_id'
    ? new AcsError(
        AcsErrorCode.ReplayDetected,
        'duplicate_request_id',
        `request_id ${request.params.request_id} was already used in this session`,
      )
    : new AcsError(AcsErrorCode.ReplayDetected, 'duplicate_nonce', 'nonce was already used in this session');
}

/**
 * Records the keys of a request that is refused before its step is committed, so a replay of a refused request
 * is still -32005 (and a replayed refused request gets -32005 rather than its refusal). Admitted steps record
 * their keys in the same transaction as their entry (GuardianStore.commitStep).
 */
export async function rememberRequest(
  store: GuardianStore,
  request: AcsRequest,
  now: Date,
  skewWindowMs: number,
): Promise<void> {
  const { session_id } = request.params.metadata;
  const { keys, expiresAt } = replayKeysOf(request, now, skewWindowMs);
  // Both keys are recorded together (one round trip on a pooled store); either one seen before is a replay.
  const fresh = await Promise.all(keys.map((k) => store.rememberReplayKey(session_id, k.kind, k.value, expiresAt)));
  const seen = keys.find((_, i) => !fresh[i]);
  if (seen) throw replayDetected(seen.kind, request);
}

export function checkTimestamp(request: AcsRequest, now: Date, skewWindowMs: number): void {
  const claimed = Date.parse(request.params.timestamp);
  if (!Number.isFinite(claimed) || Math.abs(now.getTime() - claimed) > skewWindowMs) {
    throw new AcsError(
      AcsErrorCode.TimestampOutOfWindow,
      'timestamp_out_of_window',
      `timestamp ${request.params.timestamp} is more than ${skewWindowMs} ms from the Guardian clock`,
      {
        skew_window_ms: skewWindowMs,
      },
    );
  }
}
