// Errors of the Rego toolchain, in OPA's vocabulary so authors can look them up in OPA's docs.
import type { Location } from './ast/types.ts';

export type RegoErrorCode =
  | 'rego_parse_error'
  | 'rego_compile_error'
  | 'rego_unsafe_var_error'
  | 'rego_recursion_error'
  | 'rego_type_error'
  // Evaluation-time codes (raised while a policy runs):
  | 'eval_conflict_error'
  | 'eval_builtin_error'
  | 'eval_type_error'
  | 'eval_internal_error';

/** One diagnostic: `file:row:col: code: message`, as OPA prints it. */
export class RegoError extends Error {
  constructor(
    readonly code: RegoErrorCode,
    message: string,
    readonly location?: Location,
    /** Extra lines shown under the message (e.g. the offending source line). */
    readonly details?: string[],
  ) {
    super(message);
    this.name = 'RegoError';
  }

  /** `policy.rego:3:5: rego_unsafe_var_error: var x is unsafe` */
  format(): string {
    const where = this.location ? `${this.location.file}:${this.location.row}:${this.location.col}: ` : '';
    const extra = this.details?.length ? '\n' + this.details.map((d) => `\t${d}`).join('\n') : '';
    return `${where}${this.code}: ${this.message}${extra}`;
  }
}

/** Several diagnostics at once (OPA reports up to 10 errors per compile). */
export class RegoErrors extends Error {
  constructor(readonly errors: RegoError[]) {
    super(
      errors.length === 1
        ? errors[0].format()
        : `${errors.length} errors occurred:\n${errors.map((e) => e.format()).join('\n')}`,
    );
    this.name = 'RegoErrors';
  }
}
