// Host builtins that record each call's name in `calls`: tests of native (in-Wasm) builtins check that an
// answer came without a host call, and that what the runtime hands back to the host does reach it.
import { createHostBuiltins, HostBuiltinContext } from '../../../src/rego/builtins/index.ts';

export function countingHostBuiltins(
  strict: boolean,
  calls: string[],
): Record<string, (...args: unknown[]) => unknown> {
  const table = createHostBuiltins(new HostBuiltinContext({ strict }));
  return Object.fromEntries(
    Object.entries(table).map(([n, fn]) => [n, (...a: unknown[]) => (calls.push(n), fn(...a))]),
  );
}
