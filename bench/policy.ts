// Full-library policy evaluation: the rego/ library compiled by our compiler, evaluated through the engine
// host (opa-wasm + host builtins) over realistic ACS steps with session state. Prints compile time, input
// sizes, the host-builtin calls each scenario makes, and p50/p99 per scenario for (a) advanceSessionState +
// buildPolicyInput and (b) engine.evaluate.
// Run: `npm run bench policy` (or `npx tsx bench/policy.ts`). BENCH_ITERATIONS scales the sample (default 2000).
// BENCH_WARMUP sets the untimed rounds per scenario first (default 1000).
// BENCH_SCENARIO=log,PII runs only the scenarios whose name contains one of the substrings.
// Profiling with Wasm function names: GUARDIAN_WASM_NAMES=1 node --cpu-prof --import tsx bench/policy.ts (named runtime, src/rego/wasm/runtime.ts).
// A/B: BENCH_BASELINE_BUNDLE=<bundle.tar.gz> also loads that bundle (e.g. the library built by an older
// compiler) and evaluates both alternately in rounds, so both see the same machine load; the pool part is skipped.
// A/B of the host-call path: BENCH_BUILTINS_AB=1 evaluates the same bundle on an engine with
// `directBuiltins: false` (opa-wasm's builtin imports) against the default engine, alternately in rounds.
// A/B of the input path: BENCH_INPUT_AB=1 evaluates the same bundle on an engine with `directInput: false` fed
// inputs without params text (stringify → encode → opa-wasm copy: the reference path) against the default
// engine fed inputs carrying the params' JCS text (direct write + splice), alternately in rounds.
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { loadavg, tmpdir } from 'node:os';
import type { Json } from '../src/json.ts';
import {
  advanceSessionState,
  buildPolicyInput,
  createPolicyEnginePool,
  createWasmPolicyEngine,
  projectHostBuiltins,
  type HostBuiltinFactory,
  type PolicyInput,
  type WasmPolicyEngine,
} from '../src/policy/index.ts';
import { canonicalJson } from '../src/chain/index.ts';
import { allScenarios, history } from './fixtures/policy-scenarios.ts';

const iterations = Number(process.env.BENCH_ITERATIONS ?? 2000);
// BENCH_SCENARIO=<substring>[,<substring>…]: only the scenarios whose name contains one of them (profiling, A/B)
const only = process.env.BENCH_SCENARIO?.split(',').filter(Boolean);
const scenarios = only ? allScenarios.filter((sc) => only.some((o) => sc.name.includes(o))) : allScenarios;
if (scenarios.length === 0) throw new Error(`BENCH_SCENARIO=${process.env.BENCH_SCENARIO} matches no scenario`);

function percentile(sorted: number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))];
}

// The library is compiled in a child process, as `guardian serve` loads a prebuilt bundle: the compiler's
// toolchain (binaryen alone holds ≈ 240 MB of JS heap) would otherwise stay in this heap and every major
// collection during the timed loops would mark it, which the server never does.
const t0 = performance.now();
const bundlePath = join(mkdtempSync(join(tmpdir(), 'bench-policy-')), 'acs.tar.gz');
execFileSync(
  process.execPath,
  [
    '--import',
    import.meta.resolve('binaryen'),
    '--import',
    'tsx',
    fileURLToPath(new URL('../scripts/build-bundle.ts', import.meta.url)),
    bundlePath,
  ],
  { stdio: ['ignore', 'ignore', 'inherit'] },
);
const built = { bundle: new Uint8Array(readFileSync(bundlePath)) };
const compileMs = performance.now() - t0;
const t1 = performance.now();
const engine = await createWasmPolicyEngine({ bundle: built.bundle, timeoutMs: 5_000 });
const loadMs = performance.now() - t1;
console.log(
  `policy: library compile (child process) ${compileMs.toFixed(0)} ms, bundle ${built.bundle.byteLength} bytes, engine load (incl. warm-up) ${loadMs.toFixed(1)} ms`,
);
const baselinePath = process.env.BENCH_BASELINE_BUNDLE;
const inputAB = process.env.BENCH_INPUT_AB === '1';
const builtinsAB = process.env.BENCH_BUILTINS_AB === '1';
const baseline = baselinePath
  ? await createWasmPolicyEngine({ bundle: new Uint8Array(readFileSync(baselinePath)), timeoutMs: 5_000 })
  : inputAB
    ? await createWasmPolicyEngine({ bundle: built.bundle, timeoutMs: 5_000, directInput: false })
    : builtinsAB
      ? await createWasmPolicyEngine({ bundle: built.bundle, timeoutMs: 5_000, directBuiltins: false })
      : undefined;
// The pipeline has the params' JCS anyway (request_hash, ACS §8.2); the reference engine gets none.
const paramsJcsOf = (eng: WasmPolicyEngine, sc: { params: Json }): string | undefined =>
  inputAB && eng === baseline ? undefined : canonicalJson(sc.params);

const base = history();
const client = { modify_capable: true, ask_capable: true };
const inputFor = (sc: (typeof scenarios)[number], revision: string): PolicyInput =>
  buildPolicyInput(
    sc.method,
    sc.params,
    advanceSessionState(base, sc.method, sc.params),
    client,
    { now: '2026-11-29T12:00:00.000Z', policy_version: revision },
    canonicalJson(sc.params),
  );

// Host-builtin calls per decision (each marshals its arguments out of Wasm as JSON and back), counted on
// separate engines so the timed ones run the plain host table.
async function hostCallsPerScenario(bundle: Uint8Array): Promise<string[]> {
  const calls = new Map<string, number>();
  const counting: HostBuiltinFactory = (clock) =>
    Object.fromEntries(
      Object.entries(projectHostBuiltins(clock)).map(([name, fn]) => [
        name,
        (...args: Json[]) => (calls.set(name, (calls.get(name) ?? 0) + 1), fn(...args)),
      ]),
    );
  const counter = await createWasmPolicyEngine({ bundle, timeoutMs: 5_000, hostBuiltins: counting });
  const out: string[] = [];
  for (const sc of scenarios) {
    calls.clear();
    await counter.evaluate(inputFor(sc, counter.revision));
    const total = [...calls.values()].reduce((a, b) => a + b, 0);
    out.push(`${total}${total ? ` (${[...calls].map(([n, c]) => `${n} ${c}`).join(', ')})` : ''}`);
  }
  return out;
}
const hostCalls = await hostCallsPerScenario(built.bundle);
const baselineHostCalls = baselinePath
  ? await hostCallsPerScenario(new Uint8Array(readFileSync(baselinePath)))
  : undefined;

interface Sample {
  prep: number[];
  evals: number[];
  decision: string;
  inputBytes: number;
}
async function measure(eng: WasmPolicyEngine, sc: (typeof scenarios)[number], n: number, into: Sample): Promise<void> {
  const paramsJcs = paramsJcsOf(eng, sc);
  for (let i = 0; i < n; i++) {
    const a = performance.now();
    const state = advanceSessionState(base, sc.method, sc.params);
    const input = buildPolicyInput(
      sc.method,
      sc.params,
      state,
      client,
      { now: '2026-11-29T12:00:00.000Z', policy_version: eng.revision },
      paramsJcs,
    );
    const b = performance.now();
    const res = await eng.evaluate(input);
    const c = performance.now();
    into.prep.push(b - a);
    into.evals.push(c - b);
    if (!into.decision) {
      into.decision = String(res.decision?.decision);
      into.inputBytes = JSON.stringify(input).length;
    }
  }
}
const fmt = (xs: number[]) => {
  const sorted = [...xs].sort((x, y) => x - y);
  return `p50 ${percentile(sorted, 50).toFixed(3)} ms p99 ${percentile(sorted, 99).toFixed(3)} ms`;
};
const ROUNDS = 4;
// Warm both engines on every scenario first: otherwise the first scenario pays the JIT and Wasm tier-up (with
// 200 warm-up rounds its p99 measured 100–500 µs, with 2000 70–75 µs), and in A/B mode whichever engine runs
// first looks slower. A serving Guardian is past that after its first seconds.
const WARMUP = Number(process.env.BENCH_WARMUP ?? 1000);
for (const eng of baseline ? [engine, baseline] : [engine]) {
  for (const sc of scenarios) await measure(eng, sc, WARMUP, { prep: [], evals: [], decision: '', inputBytes: 0 });
}
for (const [k, sc] of scenarios.entries()) {
  const current: Sample = { prep: [], evals: [], decision: '', inputBytes: 0 };
  const before: Sample = { prep: [], evals: [], decision: '', inputBytes: 0 };
  if (baseline) {
    // alternate in rounds, starting with a different engine each round
    for (let r = 0; r < ROUNDS; r++) {
      const order: [WasmPolicyEngine, Sample][] =
        r % 2
          ? [
              [engine, current],
              [baseline, before],
            ]
          : [
              [baseline, before],
              [engine, current],
            ];
      for (const [eng, into] of order) await measure(eng, sc, Math.ceil(iterations / ROUNDS), into);
    }
  } else await measure(engine, sc, iterations, current);
  console.log(
    `policy: ${sc.name.padEnd(52)} → ${current.decision.padEnd(6)} input ${String(current.inputBytes).padStart(5)} B | state+input ${fmt(current.prep)} | evaluate ${fmt(current.evals)} | host calls ${hostCalls[k]}`,
  );
  if (baseline && baselineHostCalls) {
    console.log(
      `policy:   baseline bundle${' '.repeat(36)} → ${before.decision.padEnd(6)}${' '.repeat(53)} | evaluate ${fmt(before.evals)} | host calls ${baselineHostCalls[k]}`,
    );
  } else if (baseline) {
    console.log(
      `policy:   reference ${builtinsAB ? 'host-call' : 'input'} path${' '.repeat(builtinsAB ? 27 : 31)} → ${before.decision.padEnd(6)}${' '.repeat(14)} | state+input ${fmt(before.prep)} | evaluate ${fmt(before.evals)}`,
    );
  }
}
console.log(
  `policy: ${iterations} iterations per scenario, instance recycles ${engine.instanceRecycles}, load average ${loadavg()
    .map((l) => l.toFixed(2))
    .join(' ')}`,
);
if (baseline) process.exit(0);

// The same decisions through the worker pool (hard pre-emption, off the event loop): latency of one
// decision at a time, and throughput with 32 decisions in flight, against the in-process engine.
const inputs: PolicyInput[] = scenarios.map((sc) => inputFor(sc, engine.revision));
const pool = await createPolicyEnginePool({ bundle: built.bundle, size: 2, timeoutMs: 5_000 });
for (let i = 0; i < 200; i++) await pool.evaluate(inputs[i % inputs.length]);
async function latency(run: (inp: PolicyInput) => Promise<unknown>): Promise<number[]> {
  const out: number[] = [];
  for (let i = 0; i < iterations; i++) {
    const t = performance.now();
    await run(inputs[i % inputs.length]);
    out.push(performance.now() - t);
  }
  return out.sort((a, b) => a - b);
}
async function throughput(run: (inp: PolicyInput) => Promise<unknown>): Promise<number> {
  const total = iterations * 2;
  let next = 0;
  const t = performance.now();
  await Promise.all(
    Array.from({ length: 32 }, async () => {
      while (next < total) await run(inputs[next++ % inputs.length]);
    }),
  );
  return total / ((performance.now() - t) / 1000);
}
const inProc = await latency((inp) => engine.evaluate(inp));
const pooled = await latency((inp) => pool.evaluate(inp));
console.log(
  `policy: mixed scenarios, one at a time: in-process p50 ${percentile(inProc, 50).toFixed(3)} ms p99 ${percentile(inProc, 99).toFixed(3)} ms | worker pool (2) p50 ${percentile(pooled, 50).toFixed(3)} ms p99 ${percentile(pooled, 99).toFixed(3)} ms`,
);
console.log(
  `policy: 32 in flight: in-process ${(await throughput((inp) => engine.evaluate(inp))).toFixed(0)} decisions/s | worker pool (2) ${(await throughput((inp) => pool.evaluate(inp))).toFixed(0)} decisions/s`,
);
await pool.close();
