// The host builtins a policy module calls out to (the builtins our Wasm runtime does not implement natively):
// the table the engine links, and what the engine tells it about the evaluation in progress.
import type { Json } from '../json.ts';
import { createHostBuiltins, HostBuiltinContext } from '../rego/builtins/index.ts';

/** A host builtin as opa-wasm calls it: JSON-decoded arguments in, JSON value (or undefined) out. */
export type HostBuiltin = (...args: Json[]) => unknown;

/** What the engine tells host builtins about the evaluation in progress (time.now_ns and friends). */
export interface EvaluationClock {
  /** The evaluation's `now` (fixed for one evaluation, so `time.now_ns` is stable within it — OPA semantics). */
  now(): Date;
  /** True when the bundle in force was built with strict builtin errors (manifest `metadata.strict_builtin_errors`). */
  strictBuiltinErrors?(): boolean;
}

/** Builds the host builtin table of one engine: called once, the table then serves every bundle the engine loads. */
export type HostBuiltinFactory = (clock: EvaluationClock) => Record<string, HostBuiltin>;

/**
 * The project's builtin library, with `time.now_ns` pinned to the evaluation's `now` (OPA: one clock
 * reading per evaluation; replay passes the recorded time, so time-based rules decide identically).
 */
export const projectHostBuiltins: HostBuiltinFactory = (clock) => {
  const nowNs = (): bigint => BigInt(clock.now().getTime()) * 1_000_000n;
  const lenient = createHostBuiltins(new HostBuiltinContext({ clock: nowNs })) as Record<string, HostBuiltin>;
  const strict = createHostBuiltins(new HostBuiltinContext({ clock: nowNs, strict: true })) as Record<
    string,
    HostBuiltin
  >;
  // The table outlives bundle swaps, so strictness is read per call from the bundle in force: host builtins
  // then fail the same way as the Wasm-native ones that bundle was linked with.
  return Object.fromEntries(
    Object.keys(lenient).map((name) => [
      name,
      (...args: Json[]) => (clock.strictBuiltinErrors?.() ? strict : lenient)[name](...args),
    ]),
  );
};
