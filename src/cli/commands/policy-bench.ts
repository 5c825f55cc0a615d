// `guardian policy bench`: like `opa bench`, times the evaluation of one entrypoint with an input. The module
// comes from a built bundle (-b) or is compiled from -d paths first; evaluation is opa-wasm's, with our host
// builtins, exactly as `policy eval` runs it. Each round runs for --benchtime (or a fixed `Nx` count) after a
// warm-up evaluation and reports runs, ns/op and the Wasm heap bytes one evaluation allocates (the heap
// pointer's advance past the input; OPA's ABI bump-allocates and resets the heap before the next evaluation).
import { readFileSync } from 'node:fs';
import type { Command } from 'commander';
import { RegoErrors } from '../../rego/errors.ts';
import { wasmJson } from '../../rego/json.ts';
import { CliError, ExitCode } from '../exit-codes.ts';
import { gatherInputs, ignoreOption, readDataFile } from './policy-inputs.ts';

interface BenchOptions {
  bundle?: string;
  data: string[];
  entrypoint: string;
  input?: string;
  benchtime: string;
  count: string;
  format: string;
  ignore: string[];
  v0Compatible?: boolean;
  quiet?: boolean;
}

/** One round's figures (`--format json` prints an array of these). */
export interface BenchRound {
  entrypoint: string;
  runs: number;
  total_ns: number;
  ns_per_op: number;
  /** Wasm heap bytes one evaluation allocated; undefined when the module does not expose its heap pointer. */
  heap_bytes_per_op?: number;
}

type Budget = { kind: 'time'; ns: bigint } | { kind: 'runs'; n: number };

/** Go's -benchtime: a duration (`1s`, `500ms`, `2m`) or a run count (`100x`). */
export function parseBenchtime(text: string): Budget {
  const runs = /^(\d+)x$/.exec(text);
  if (runs && Number(runs[1]) > 0) return { kind: 'runs', n: Number(runs[1]) };
  const m = /^(\d+(?:\.\d+)?)(ns|us|µs|ms|s|m)$/.exec(text);
  const scale: Record<string, number> = { ns: 1, us: 1e3, µs: 1e3, ms: 1e6, s: 1e9, m: 60e9 };
  if (!m || Number(m[1]) <= 0)
    throw new CliError(
      `--benchtime: expected a duration such as 1s or 500ms, or a run count such as 100x`,
      ExitCode.Usage,
    );
  return { kind: 'time', ns: BigInt(Math.round(Number(m[1]) * scale[m[2]])) };
}

interface HeapExports {
  opa_heap_ptr_get?: () => number;
}

async function loadModule(opts: BenchOptions): Promise<import('../../rego/index.ts').LoadedBundle> {
  const { compileBundle, loadBundle } = await import('../../rego/index.ts');
  let bytes: Uint8Array;
  if (opts.bundle) {
    try {
      bytes = new Uint8Array(readFileSync(opts.bundle));
    } catch (e) {
      throw new CliError(`cannot read bundle ${opts.bundle}: ${(e as Error).message}`, ExitCode.Usage);
    }
  } else {
    const { sources, data } = gatherInputs(opts.data, { ignore: opts.ignore, v0Compatible: opts.v0Compatible });
    if (sources.length === 0) throw new CliError('no .rego files found', ExitCode.Usage);
    try {
      bytes = (await compileBundle({ sources, entrypoints: [opts.entrypoint], data })).bundle;
    } catch (e) {
      if (e instanceof RegoErrors) {
        for (const err of e.errors) process.stderr.write(`${err.format()}\n`);
        throw new CliError(
          `${e.errors.length} error${e.errors.length === 1 ? '' : 's'} occurred`,
          ExitCode.CompileError,
        );
      }
      throw e;
    }
  }
  try {
    return await loadBundle(bytes);
  } catch (e) {
    throw new CliError(`${opts.bundle ?? 'bundle'}: does not load: ${(e as Error).message}`, ExitCode.Usage);
  }
}

function table(r: BenchRound): string {
  const rows: [string, string][] = [
    ['entrypoint', r.entrypoint],
    ['samples', String(r.runs)],
    ['ns/op', String(Math.round(r.ns_per_op))],
    ['heap B/op', r.heap_bytes_per_op === undefined ? 'n/a' : String(r.heap_bytes_per_op)],
  ];
  const w0 = Math.max(...rows.map(([k]) => k.length));
  const w1 = Math.max(...rows.map(([, v]) => v.length));
  const rule = `+-${'-'.repeat(w0)}-+-${'-'.repeat(w1)}-+`;
  return [rule, ...rows.map(([k, v]) => `| ${k.padEnd(w0)} | ${v.padStart(w1)} |`), rule].join('\n');
}

async function bench(opts: BenchOptions): Promise<void> {
  if (opts.format !== 'text' && opts.format !== 'json')
    throw new CliError(`--format must be text or json, not ${JSON.stringify(opts.format)}`, ExitCode.Usage);
  if (!opts.bundle && opts.data.length === 0) throw new CliError('give -b bundle.tar.gz or -d paths', ExitCode.Usage);
  const budget = parseBenchtime(opts.benchtime);
  const count = Number(opts.count);
  if (!Number.isInteger(count) || count < 1) throw new CliError('--count: expected a positive integer', ExitCode.Usage);
  const input = opts.input !== undefined ? wasmJson(readDataFile(opts.input)) : undefined;
  const loaded = await loadModule(opts);
  if (!(opts.entrypoint in loaded.entrypoints))
    throw new CliError(
      `entrypoint ${opts.entrypoint} not in bundle (has: ${Object.keys(loaded.entrypoints).join(', ') || 'none'})`,
      ExitCode.Usage,
    );
  const policy = loaded.policy;
  const exports = (policy.wasmInstance as unknown as { exports: HeapExports }).exports;
  const evaluate = (): void => {
    policy.evaluate(input, opts.entrypoint);
  };
  try {
    evaluate(); // warm-up: the first evaluation pays for lazy compilation in V8
  } catch (e) {
    throw new CliError(`evaluation failed: ${e instanceof Error ? e.message : String(e)}`, ExitCode.Failed);
  }
  const heapStart = exports.opa_heap_ptr_get?.();
  evaluate();
  const heapEnd = exports.opa_heap_ptr_get?.();
  const inputBytes =
    input === undefined
      ? 0
      : input instanceof ArrayBuffer
        ? input.byteLength
        : new TextEncoder().encode(JSON.stringify(input)).length;
  // After an evaluation the pointer sits past the input and what the evaluation allocated.
  const dataHeap = (policy as unknown as { dataHeapPtr?: number }).dataHeapPtr;
  const heapPerOp =
    heapEnd !== undefined && heapStart !== undefined && dataHeap !== undefined && heapEnd >= dataHeap + inputBytes
      ? heapEnd - dataHeap - inputBytes
      : undefined;

  const rounds: BenchRound[] = [];
  for (let round = 1; round <= count; round++) {
    if (!opts.quiet) process.stderr.write(`round ${round}/${count}: evaluating ${opts.entrypoint}…\n`);
    let runs = 0;
    const started = process.hrtime.bigint();
    let elapsed = 0n;
    try {
      if (budget.kind === 'runs') {
        for (; runs < budget.n; runs++) evaluate();
        elapsed = process.hrtime.bigint() - started;
      } else {
        // Batches between clock reads, so reading the clock does not dominate short evaluations.
        let batch = 1;
        while (elapsed < budget.ns) {
          for (let i = 0; i < batch; i++) evaluate();
          runs += batch;
          elapsed = process.hrtime.bigint() - started;
          if (batch < 1024) batch *= 2;
        }
      }
    } catch (e) {
      throw new CliError(`evaluation failed: ${e instanceof Error ? e.message : String(e)}`, ExitCode.Failed);
    }
    const total = Number(elapsed);
    rounds.push({
      entrypoint: opts.entrypoint,
      runs,
      total_ns: total,
      ns_per_op: total / runs,
      ...(heapPerOp !== undefined ? { heap_bytes_per_op: heapPerOp } : {}),
    });
    if (!opts.quiet) process.stderr.write(`round ${round}/${count}: ${runs} runs in ${(total / 1e6).toFixed(1)} ms\n`);
  }
  if (opts.format === 'json') process.stdout.write(`${JSON.stringify(rounds, null, 2)}\n`);
  else process.stdout.write(`${rounds.map(table).join('\n')}\n`);
}

/** Adds `guardian policy bench` (like `opa bench`). */
export function addPolicyBenchCommand(policy: Command): void {
  policy
    .command('bench')
    .description('time the evaluation of an entrypoint with an input through opa-wasm (like opa bench)')
    .requiredOption('-e, --entrypoint <pkg/rule>', 'entrypoint to evaluate')
    .option('-b, --bundle <file>', 'a built bundle .tar.gz')
    .option(
      '-d, --data <path>',
      'Rego and data files or directories to compile first (repeatable)',
      (v: string, p: string[]) => [...p, v],
      [],
    )
    .option('-i, --input <file>', "input JSON/YAML file, or '-' for stdin")
    .option('--benchtime <duration>', 'time per round (e.g. 1s, 500ms) or a run count (e.g. 1000x)', '1s')
    .option('--count <n>', 'number of rounds', '1')
    .option('--format <format>', 'text (a table per round) or json', 'text')
    .option('-q, --quiet', 'no progress lines on stderr')
    .addOption(ignoreOption())
    .option('--v0-compatible', "read modules as Rego v0 (OPA's --v0-compatible); a module importing rego.v1 stays v1")
    .addHelpText(
      'after',
      '\nPrints samples, ns/op and the Wasm heap bytes one evaluation allocates (heap B/op).\n' +
        'Exit codes: 0 measured, 1 the evaluation failed, 2 bad usage or unreadable files, 3 the modules do not compile.',
    )
    .action(async (opts: BenchOptions) => bench(opts));
}
