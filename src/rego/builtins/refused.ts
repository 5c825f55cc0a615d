// Refused builtins in the authoring tools (`guardian policy test|eval|check`; docs/policy-authoring.md, "Refused
// builtins"). `guardian policy build` and the Guardian's bundle loading refuse them outright. The authoring tools
// compile a call to one against its OPA declaration into a host call, so a module that only needs to compile (a
// library whose tests never reach the call) compiles as under `opa test`, and a test can replace the builtin with
// `with http.send as <value or function>` as OPA's docs describe; a call that is reached unmocked halts the
// evaluation with the refusal.
import type { BuiltinTable } from './capabilities.ts';
import { refusedBuiltinDecls, refusedBuiltins } from './declarations.ts';
import type { HostImpls } from './host/registry.ts';
import { BuiltinHaltError } from './host/values.ts';

/** Refused builtins that stay compile errors in the authoring tools too: OPA's test runner calls it, no policy does. */
const NOT_FOR_POLICIES: ReadonlySet<string> = new Set(['internal.test_case']);

/** The refused builtins the authoring tools compile calls to. */
export const deferredRefusedBuiltins: readonly string[] = [...refusedBuiltinDecls.keys()].filter(
  (name) => !NOT_FOR_POLICIES.has(name),
);

/** What an unmocked call reports: the builtin, the Guardian's reason, and how a test replaces it. */
export function refusedCallMessage(name: string): string {
  return `${name}: ${refusedBuiltins.get(name) ?? 'refused by the Guardian'} (replace it in tests with \`with ${name} as ...\`)`;
}

/**
 * `table` plus the OPA declarations of the refused builtins the authoring tools compile (deferredRefusedBuiltins),
 * or of those of them in `only` (the ones a capabilities document lists).
 */
export function withRefusedDeclarations(table: BuiltinTable, only?: ReadonlySet<string>): BuiltinTable {
  const out = new Map(table);
  for (const name of deferredRefusedBuiltins)
    if (!out.has(name) && (!only || only.has(name))) out.set(name, refusedBuiltinDecls.get(name)!);
  return out;
}

/**
 * The authoring tools' implementations of the refused builtins: every call halts the evaluation (OPA's topdown
 * `Halt`, whatever the strict-builtin-errors setting) with `eval_builtin_error: <refusedCallMessage>`. Undefined
 * instead, as a non-strict builtin error is, would let `not allow` pass a test for the wrong reason.
 */
export const refusedBuiltinStandIns: Readonly<HostImpls> = Object.freeze(
  Object.fromEntries(
    deferredRefusedBuiltins.map((name) => [
      name,
      () => {
        throw new BuiltinHaltError('eval_builtin_error', refusedCallMessage(name));
      },
    ]),
  ),
);
