// How the Wasm engine fails. Every evaluation failure is a PolicyEvaluationError, which the request pipeline
// answers with DENY `evaluation_failed` (fail closed; ACS §6.4); a bundle that cannot serve is a PolicyLoadError
// and never replaces the one in force.

export type PolicyEvaluationErrorCode =
  | 'input_too_large'
  | 'input_not_serialisable'
  | 'unknown_entrypoint'
  | 'timeout'
  | 'policy_error'
  | 'module_aborted'
  | 'invalid_result';

/** Every evaluation failure rejects with this; the pipeline maps it to DENY `evaluation_failed`. */
export class PolicyEvaluationError extends Error {
  constructor(
    readonly code: PolicyEvaluationErrorCode,
    message: string,
  ) {
    super(message);
    this.name = 'PolicyEvaluationError';
  }
}

/** Loading a module failed (bad bundle, ABI mismatch, a host builtin the module needs is missing). */
export class PolicyLoadError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'PolicyLoadError';
  }
}

/** Thrown by a host builtin called after the evaluation's deadline: it unwinds the module's stack. */
export class DeadlineExceeded extends Error {
  constructor() {
    super('evaluation deadline exceeded');
    this.name = 'DeadlineExceeded';
  }
}

export function inputTooLarge(bytes: number, maxInputBytes: number): PolicyEvaluationError {
  return new PolicyEvaluationError('input_too_large', `input is ${bytes} bytes, limit ${maxInputBytes}`);
}

/** The message of whatever a module or opa-wasm threw (strings from opa_abort, `{ message }` objects, Errors). */
export function describeThrown(err: unknown): string {
  if (typeof err === 'string') return err;
  if (err instanceof Error) return err.message;
  if (err && typeof err === 'object' && 'message' in err && typeof (err as { message: unknown }).message === 'string') {
    return (err as { message: string }).message;
  }
  return String(err);
}
