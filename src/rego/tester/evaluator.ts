// Evaluates the test rules of one compiled module through the toolchain's own API (instantiatePolicy +
// host builtins), with the same bound and failure classes as the Guardian's policy engine host:
// opa-wasm evaluates synchronously, so the deadline is checked on every host builtin call (the only point
// where the evaluation yields to the host) and a result that arrives late is rejected; after any abort
// the instance is re-created, so a module that trapped never runs another test.
import type { LoadedPolicy } from '@open-policy-agent/opa-wasm';
import { createAuthoringHostBuiltins, HostBuiltinContext, type JsonValue } from '../builtins/index.ts';
import { isOpaWasmRuntimeError } from '../errors.ts';
import { wasmJson } from '../json.ts';
import { instantiatePolicy, withCustomBuiltins, type CustomBuiltins } from '../portable.ts';

/** Host builtins by OPA name, as opa-wasm `customBuiltins` take them. */
export type HostBuiltinTable = CustomBuiltins;

export type TestEvaluationErrorCode = 'timeout' | 'policy_error' | 'module_aborted' | 'invalid_result';

/** A test rule could not be evaluated; the report shows `<code>: <message>`. */
export class TestEvaluationError extends Error {
  constructor(
    readonly code: TestEvaluationErrorCode,
    message: string,
  ) {
    super(message);
    this.name = 'TestEvaluationError';
  }
}

export interface TestEvaluatorOptions {
  wasm: Uint8Array;
  /** The data document; numbers kept as DecimalText (the loader's) reach the module with their text. */
  data: JsonValue;
  timeoutMs: number;
  /**
   * Default: the toolchain's builtin library with `time.now_ns` pinned to each evaluation's `now`, and the refused
   * builtins' stand-ins (createAuthoringHostBuiltins).
   */
  hostBuiltins?: HostBuiltinTable;
  /** Custom builtins added to the host builtins (withCustomBuiltins: a toolchain name is refused). */
  customBuiltins?: Readonly<Record<string, unknown>>;
  /** Where print lines of the default builtins go (default: the builtin library's stderr JSON lines). */
  print?: (line: string) => void;
  /** Where trace() notes of the default builtins go (default: with the print lines). */
  trace?: (line: string) => void;
}

export interface TestEvaluator {
  /** The entrypoint's value; undefined when the rule is undefined. */
  evaluate(entrypoint: string, now: Date): Promise<JsonValue | undefined>;
}

/** The policy engine's linear-memory cap (128 MiB), so a test runs out of memory where the service would. */
const MAX_MEMORY_PAGES = 2048;

class DeadlineExceeded extends Error {}

function describeThrown(err: unknown): string {
  if (typeof err === 'string') return err;
  if (err instanceof Error) return err.message;
  if (err && typeof err === 'object' && 'message' in err && typeof (err as { message: unknown }).message === 'string')
    return (err as { message: string }).message;
  return String(err);
}

export async function createTestEvaluator(options: TestEvaluatorOptions): Promise<TestEvaluator> {
  let deadline = Infinity;
  let evaluationNow = new Date(0);
  const { print, trace } = options;
  const context = new HostBuiltinContext({
    clock: () => BigInt(evaluationNow.getTime()) * 1_000_000n,
    ...(print ? { print: (line: string) => print(line) } : {}),
    ...(trace ? { trace: (line: string) => trace(line) } : {}),
  });
  const host = options.hostBuiltins ?? (createAuthoringHostBuiltins(context) as CustomBuiltins);
  const raw = options.customBuiltins ? withCustomBuiltins(host, options.customBuiltins) : host;
  const builtins: CustomBuiltins = {};
  for (const [name, fn] of Object.entries(raw)) {
    builtins[name] = (...args: unknown[]) => {
      if (performance.now() > deadline) throw new DeadlineExceeded();
      return fn(...args);
    };
  }
  const instantiate = async (): Promise<LoadedPolicy> => {
    const policy = await instantiatePolicy(options.wasm, builtins, MAX_MEMORY_PAGES);
    policy.setData(wasmJson(options.data) as object);
    return policy;
  };
  let instance: LoadedPolicy | undefined = await instantiate();

  return {
    async evaluate(entrypoint, now) {
      const policy = instance ?? (instance = await instantiate());
      evaluationNow = now;
      context.beginEvaluation({ now });
      const started = performance.now();
      deadline = started + options.timeoutMs;
      let resultSet: unknown;
      try {
        resultSet = policy.evaluate(undefined, entrypoint);
      } catch (err) {
        const durationMs = performance.now() - started;
        instance = undefined;
        if (err instanceof DeadlineExceeded)
          throw new TestEvaluationError(
            'timeout',
            `evaluation of ${entrypoint} exceeded ${options.timeoutMs} ms (stopped at ${durationMs.toFixed(1)} ms)`,
          );
        const msg = describeThrown(err);
        // opa_abort messages from compiled Rego read `<file>:<row>:<col>: <code>: <message>`, or are OPA's Wasm
        // run-time errors (`<file>:<row>:<col>: var assignment conflict`), as the policy engine classes them.
        if (/(^|: )(eval_[a-z_]+|rego_[a-z_]+): /.test(msg) || isOpaWasmRuntimeError(msg))
          throw new TestEvaluationError('policy_error', msg);
        throw new TestEvaluationError('module_aborted', `policy module aborted: ${msg}`);
      } finally {
        deadline = Infinity;
        context.endEvaluation();
      }
      const durationMs = performance.now() - started;
      if (durationMs > options.timeoutMs)
        throw new TestEvaluationError(
          'timeout',
          `evaluation of ${entrypoint} took ${durationMs.toFixed(1)} ms, limit ${options.timeoutMs} ms`,
        );
      if (!Array.isArray(resultSet))
        throw new TestEvaluationError('invalid_result', 'policy module returned a non-array result set');
      if (resultSet.length === 0) return undefined;
      if (resultSet.length > 1)
        throw new TestEvaluationError(
          'invalid_result',
          `entrypoint ${entrypoint} produced ${resultSet.length} results`,
        );
      const row = resultSet[0] as { result?: JsonValue } | null;
      if (row === null || typeof row !== 'object' || !('result' in row))
        throw new TestEvaluationError('invalid_result', 'policy module result row has no `result` binding');
      return row.result;
    },
  };
}
