// Per-evaluation state shared by host builtins: one clock reading (OPA: time.now_ns is constant
// within an evaluation), a seed for the deterministic "random" builtins, the request id for print.
import type { BuiltinError } from './values.ts';

export interface EvaluationInfo {
  /** Nanoseconds since the Unix epoch that time.now_ns returns throughout this evaluation. */
  nowNs: bigint;
  /** Seeds uuid.rfc4122 and rand.intn: the same seed + key gives the same value (replay). */
  seed: string;
  /** Correlates print/trace output with the Guardian request being decided. */
  requestId?: string;
}

export interface BeginEvaluationOptions {
  /** Pin the clock (replay): bigint/number nanoseconds, or a Date. Default: the context's clock. */
  now?: bigint | number | Date;
  /** Default: a fresh random UUID, i.e. non-replayable unless recorded. */
  seed?: string;
  requestId?: string;
}

export interface HostBuiltinOptions {
  /** OPA's strict builtin errors: builtin failures abort evaluation instead of being undefined. */
  strict?: boolean;
  /**
   * How a strict-mode failure reaches the module. 'throw' (default): a JS Error aborts evaluation
   * (no source location). 'marker': the builtin returns `{[BUILTIN_ERROR_MARKER]: "<code>: <name>: <msg>"}`
   * so a module that checks host results can abort with `opa_abort("<file>:<row>:<col>: " + message)`.
   */
  strictErrors?: 'throw' | 'marker';
  /** Where print output goes. Default: one JSON line on stderr. */
  print?: (line: string, evaluation: EvaluationInfo) => void;
  /**
   * Where trace() notes go. Default: the print sink. OPA records them as Note events of the evaluation's trace,
   * apart from print output (`opa test` keeps them out of a test's output).
   */
  trace?: (line: string, evaluation: EvaluationInfo) => void;
  /** Nanosecond wall clock. Default: Date.now() refined with process.hrtime (performance.now() without Node). */
  clock?: () => bigint;
  /** Called for builtin errors that non-strict mode turns into "undefined" (diagnostics). */
  onError?: (builtin: string, error: BuiltinError) => void;
}

// Node's process is read from globalThis: this module also runs in a browser page, which has none.
const nodeProcess = globalThis.process?.versions?.node ? globalThis.process : undefined;
const monotonicNs: () => bigint = nodeProcess
  ? () => nodeProcess.hrtime.bigint()
  : () => BigInt(Math.round(performance.now() * 1_000_000));
const hrBase = monotonicNs();
const wallBaseNs = BigInt(Date.now()) * 1_000_000n;
/** Wall clock with sub-millisecond resolution that never runs backwards within a process. */
export function defaultClock(): bigint {
  return wallBaseNs + (monotonicNs() - hrBase);
}

function defaultPrint(line: string, evaluation: EvaluationInfo): void {
  const record = JSON.stringify({ level: 'info', msg: 'policy print', requestId: evaluation.requestId, line });
  if (nodeProcess) nodeProcess.stderr.write(record + '\n');
  else console.info(record);
}

/** Web Crypto's randomUUID: a global in Node 19+ and in browsers (secure contexts, which include localhost). */
const randomUUID = (): string => globalThis.crypto.randomUUID();

function toNs(now: bigint | number | Date): bigint {
  if (typeof now === 'bigint') return now;
  if (typeof now === 'number') return BigInt(Math.trunc(now));
  return BigInt(now.getTime()) * 1_000_000n;
}

/**
 * Host-builtin context. Call `beginEvaluation()` before each `policy.evaluate()` to pin the clock,
 * seed and request id (replay passes the recorded values). Without it, state is created on the
 * first builtin call and dropped when the current synchronous job ends — opa-wasm evaluates
 * synchronously, so that is still exactly one clock reading per evaluation.
 */
export class HostBuiltinContext {
  readonly strict: boolean;
  readonly strictErrors: 'throw' | 'marker';
  private readonly printSink: (line: string, evaluation: EvaluationInfo) => void;
  private readonly traceSink: (line: string, evaluation: EvaluationInfo) => void;
  private readonly clock: () => bigint;
  private readonly errorSink?: (builtin: string, error: BuiltinError) => void;
  private current?: EvaluationInfo;
  private pinned = false;
  /** Per-evaluation memo (uuid.rfc4122, rand.intn return one value per key within an evaluation). */
  readonly memo = new Map<string, unknown>();

  constructor(options: HostBuiltinOptions = {}) {
    this.strict = options.strict ?? false;
    this.strictErrors = options.strictErrors ?? 'throw';
    this.printSink = options.print ?? defaultPrint;
    this.traceSink = options.trace ?? this.printSink;
    this.clock = options.clock ?? defaultClock;
    this.errorSink = options.onError;
  }

  beginEvaluation(options: BeginEvaluationOptions = {}): EvaluationInfo {
    this.current = {
      nowNs: options.now !== undefined ? toNs(options.now) : this.clock(),
      seed: options.seed ?? randomUUID(),
      requestId: options.requestId,
    };
    this.pinned = true;
    this.memo.clear();
    return this.current;
  }

  endEvaluation(): void {
    this.current = undefined;
    this.pinned = false;
    this.memo.clear();
  }

  /** The current evaluation's state (created lazily for callers that never call beginEvaluation). */
  evaluation(): EvaluationInfo {
    if (!this.current) {
      this.current = { nowNs: this.clock(), seed: randomUUID() };
      this.memo.clear();
      queueMicrotask(() => {
        if (!this.pinned) {
          this.current = undefined;
          this.memo.clear();
        }
      });
    }
    return this.current;
  }

  print(line: string): void {
    this.printSink(line, this.evaluation());
  }

  trace(line: string): void {
    this.traceSink(line, this.evaluation());
  }

  reportSuppressed(builtin: string, error: BuiltinError): void {
    this.errorSink?.(builtin, error);
  }
}
