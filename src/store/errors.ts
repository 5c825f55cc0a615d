// Store failures the pipeline can map to a decision (docs/conformance.md, interop choices: a store failure on a valid step is a signed
// DENY `store_unavailable`, never a silent allow).

export type StoreErrorCode =
  /** The input cannot be stored as given (bad hash, non-JSON value, bad id). */
  | 'invalid_input'
  /** The row the call refers to does not exist. */
  | 'not_found'
  /** The call conflicts with stored state (decision already recorded, chain pruned). */
  | 'conflict'
  /** The database is unreachable or failed; nothing was written by this call. */
  | 'unavailable'
  /** Other writers held the session's turn (withSessionTurn) for longer than the call could wait; nothing was written. */
  | 'busy';

export class StoreError extends Error {
  constructor(
    readonly code: StoreErrorCode,
    message: string,
    options?: { cause?: unknown },
  ) {
    super(message, options);
    this.name = 'StoreError';
  }
}

/** The SQLSTATE of a driver error, looking through drizzle's DrizzleQueryError wrapper. */
export function sqlStateOf(err: unknown): string | undefined {
  for (let e: unknown = err, depth = 0; e && depth < 5; e = (e as { cause?: unknown }).cause, depth++) {
    const code = (e as { code?: unknown }).code;
    if (typeof code === 'string' && /^[0-9A-Z]{5}$/.test(code)) return code;
  }
  return undefined;
}

/**
 * Transient conflicts a retry resolves: serialization failure and deadlock (serializable databases such as
 * CockroachDB, or lock-order races), and a unique violation on the entry key (a racing writer took the seq).
 */
export function isRetryableConflict(err: unknown): boolean {
  const state = sqlStateOf(err);
  return state === '40001' || state === '40P01' || state === '23505';
}

/** Wraps a driver failure without leaking the connection string or query parameters into the message. */
export function toStoreError(err: unknown, what: string): StoreError {
  if (err instanceof StoreError) return err;
  const state = sqlStateOf(err);
  const detail = state
    ? `SQLSTATE ${state}`
    : err instanceof Error
      ? ((err as { code?: string }).code ?? err.name)
      : 'error';
  const cause = (err as { cause?: unknown })?.cause;
  const reason = cause instanceof Error ? cause.message : err instanceof Error ? err.message : String(err);
  return new StoreError('unavailable', `${what} failed (${detail}): ${reason.split('\n')[0].slice(0, 300)}`, {
    cause: err,
  });
}
