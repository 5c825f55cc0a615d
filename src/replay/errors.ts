// Replay failures the caller can act on (bad selection, a policy that cannot be found or loaded). Step-level
// problems (tampered entries, unknown revisions) are not errors: they are reported per step and replay continues.
export type ReplayErrorCode =
  | 'invalid_selection'
  | 'policy_not_found'
  | 'policy_invalid'
  | 'policy_compile_error'
  | 'policy_path_refused'
  | 'builtins_invalid'
  | 'write_refused'
  | 'cancelled'
  | 'worker_failed';

export class ReplayError extends Error {
  constructor(
    readonly code: ReplayErrorCode,
    message: string,
  ) {
    super(message);
    this.name = 'ReplayError';
  }
}
