// OPA's compiler error limit (v1/ast/compile.go: CompileErrorLimitDefault, Compiler.err, errLimitReached).
import { RegoError } from '../errors.ts';

/** OPA's default number of errors a compile reports (`opa check --max-errors`). */
export const COMPILE_ERROR_LIMIT = 10;

/** The error OPA appends once the limit is reached: no location. */
export const errorLimitReached = (): RegoError => new RegoError('rego_compile_error', 'error limit reached');

/**
 * A module compile's errors as OPA's Compiler keeps them: with a limit, the first `limit` errors and, once that
 * many were reported, "error limit reached" after them (also when there are exactly `limit`). No limit when
 * `limit` is zero or negative.
 */
export function limitCompileErrors(errors: readonly RegoError[], limit: number): RegoError[] {
  if (limit <= 0 || errors.length < limit) return [...errors];
  return [...errors.slice(0, limit), errorLimitReached()];
}

/**
 * A query compile's errors as OPA's query compiler returns them (applyErrorLimit): cut to `limit` with "error
 * limit reached" only when there are more than `limit`.
 */
export function limitQueryErrors(errors: readonly RegoError[], limit: number): RegoError[] {
  if (limit <= 0 || errors.length <= limit) return [...errors];
  return [...errors.slice(0, limit), errorLimitReached()];
}
