// Replay protection (§10.3): duplicate request_id / nonce within a session → -32005; timestamp further than the
// skew window from the Guardian clock, past or future → -32006 with data.skew_window_ms.
import type { GuardianStore } from '../../store/types.ts';
import { AcsError, AcsErrorCode } from '../errors.ts';
import type { AcsRequest } from '../types.ts';

/**
 * Records request_id (and nonce) durably on arrival, before the remaining checks, so a replay of a refused
 * request is still -32005. Keys are kept two skew windows past the later of arrival and the claimed timestamp.
 */
export async function rememberRequest(store: GuardianStore, request: AcsRequest, now: Date, skewWindowMs: number): Promise<void> {
  const { session_id } = request.params.metadata;
  const claimed = Date.parse(request.params.timestamp);
  // The store expires keys against the wall clock, so the wall clock joins the Guardian clock here.
  const base = Math.max(Date.now(), now.getTime(), Number.isFinite(claimed) ? claimed : 0);
  const expiresAt = new Date(base + 2 * Math.max(skewWindowMs, 1000));
  // Both keys are recorded together (one round trip on a pooled store); either one seen before is a replay.
  const [fresh, freshNonce] = await Promise.all([
    store.rememberReplayKey(session_id, 'request_id', request.params.request_id, expiresAt),
    request.params.nonce !== undefined ? store.rememberReplayKey(session_id, 'nonce', request.params.nonce, expiresAt) : Promise.resolve(true),
  ]);
  if (!fresh) {
    throw new AcsError(AcsErrorCode.ReplayDetected, 'duplicate_request_id', `request_id ${request.params.request_id} was already used in this session`);
  }
  if (!freshNonce) throw new AcsError(AcsErrorCode.ReplayDetected, 'duplicate_nonce', 'nonce was already used in this session');
}

export function checkTimestamp(request: AcsRequest, now: Date, skewWindowMs: number): void {
  const claimed = Date.parse(request.params.timestamp);
  if (!Number.isFinite(claimed) || Math.abs(now.getTime() - claimed) > skewWindowMs) {
    throw new AcsError(AcsErrorCode.TimestampOutOfWindow, 'timestamp_out_of_window', `timestamp ${request.params.timestamp} is more than ${skewWindowMs} ms from the Guardian clock`, {
      skew_window_ms: skewWindowMs,
    });
  }
}
