// Every lifecycle refusal carries a machine-readable code and a precise reason; the old bundle stays in force.
export type LifecycleErrorCode =
  | 'invalid_bundle'
  | 'signature_required'
  | 'signature_unexpected'
  | 'signature_invalid'
  | 'unknown_key'
  | 'smoke_failed'
  | 'load_failed'
  | 'not_found'
  | 'ambiguous'
  | 'nothing_to_roll_back'
  | 'bundle_service';

export class LifecycleError extends Error {
  constructor(
    readonly code: LifecycleErrorCode,
    message: string,
  ) {
    super(message);
    this.name = 'LifecycleError';
  }
}
