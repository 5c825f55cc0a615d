// Errors of the Rego toolchain, in OPA's vocabulary so authors can look them up in OPA's docs.
import type { Location } from './ast/types.ts';

export type RegoErrorCode =
  | 'rego_parse_error'
  | 'rego_compile_error'
  | 'rego_unsafe_var_error'
  | 'rego_recursion_error'
  | 'rego_type_error'
  // Evaluation-time codes (raised while a policy runs):
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

/**
 * The run-time errors of OPA's Wasm backend (internal/compiler/wasm errorMessages), which compiled modules
 * abort with as `<file>:<row>:<col>: <message>` (wasm/src/error.c opa_runtime_error): a complete rule or
 * function with two different values, and an object (partial object rule, object comprehension) given two
 * values for one key.
 */
export const OPA_WASM_ERRORS = {
  varAssignConflict: 'var assignment conflict',
  objectInsertConflict: 'object insert conflict',
} as const;

const OPA_WASM_RUNTIME_ERROR = new RegExp(`^[^\\n]+:\\d+:\\d+: (${Object.values(OPA_WASM_ERRORS).join('|')})$`);

/** Whether an opa-wasm abort message is one of OPA's Wasm run-time errors (a policy error, not a crash). */
export function isOpaWasmRuntimeError(message: string): boolean {
  return OPA_WASM_RUNTIME_ERROR.test(message);
}
