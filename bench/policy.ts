// Full-library policy evaluation: the rego/ library compiled by our compiler, evaluated through the engine
// host (opa-wasm + host builtins) over realistic ACS steps with session state. Prints compile time, input
// sizes, the host-builtin calls each scenario makes, and p50/p99 per scenario for (a) advanceSessionState +
// buildPolicyInput and (b) engine.evaluate.
// Run: `npm run bench policy` (or `npx tsx bench/policy.ts`). BENCH_ITERATIONS scales the sample (default 2000).
// BENCH_WARMUP sets the untimed rounds per scenario first (default 1000).
// BENCH_SCENARIO=log,PII runs only the scenarios whose name contains one of the substrings.
// Profiling with Wasm function names: GUARDIAN_WASM_NAMES=1 node --cpu-prof --import tsx bench/policy.ts (named runtime, src/rego/compiler/wasm/runtime.ts).
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
import type { Json } from '../src/store/types.ts';
import {
  advanceSessionState,
  buildPolicyInput,
  createPolicyEnginePool,
  createWasmPolicyEngine,
  initialSessionState,
  projectHostBuiltins,
  type HostBuiltinFactory,
  type PolicyInput,
  type SessionState,
  type WasmPolicyEngine,
} from '../src/policy/index.ts';
import { canonicalJson } from '../src/chain/index.ts';

const iterations = Number(process.env.BENCH_ITERATIONS ?? 2000);
const SESSION = '5c3f1b8e-9a0d-4c2e-8f4b-2d6a7e9c1b30';
let seq = 0;
const params = (payload: Json, turn = 't3'): Json => ({
  acs_version: '0.1.0',
  request_id: `0b6e8f0e-2f7c-4f43-9d6f-${String(++seq).padStart(12, '0')}`,
  timestamp: '2026-11-29T12:00:00.000Z',
  metadata: { agent_id: 'agent-7', session_id: SESSION, turn_id: turn },
  payload,
  signature: { algorithm: 'HMAC-SHA256', value: 'x'.repeat(44), key_id: 'k1' },
});
const prov = (id: string, origin: string, derived_from?: string[]): Json => ({ provenance_id: id, origin, ...(derived_from ? { derived_from } : {}) });

// A session with history: intent, 3 turns, retrieved content, several tool calls.
function history(): SessionState {
  let s = initialSessionState({ session_id: SESSION, agent_id: 'agent-7' });
  const steps: [string, Json][] = [
    ['steps/sessionStart', params({ intent: { raw: 'triage the inbox', parsed: ['email.send', 'filesystem.read', 'network.egress'], scope_mode: 'moderate' } }, 't0')],
  ];
  for (let t = 1; t <= 3; t++) {
    const turn = `t${t}`;
    steps.push(['steps/turnStart', params({ turn_id: turn }, turn)]);
    steps.push(['steps/userMessage', params({ content: [{ type: 'text', value: `please handle item ${t}`, provenance: prov(`u${t}`, 'user_input') }] }, turn)]);
    steps.push(['steps/knowledgeRetrieval', params({ query: { value: 'policy', provenance: prov(`q${t}`, 'user_input') }, results: [{ value: 'doc text '.repeat(20), provenance: prov(`r${t}`, 'retrieved') }] }, turn)]);
    steps.push(['steps/toolCallRequest', params({ tool: { name: 'read_file' }, arguments: { path: { value: `/workspace/f${t}.txt`, provenance: prov(`p${t}`, 'user_input') } } }, turn)]);
  }
  for (const [m, p] of steps) s = advanceSessionState(s, m, p);
  return s;
}

// A realistic 4 KiB service log: ISO timestamps, amounts, ids, durations, addresses (digits everywhere, no PII).
function serviceLog(bytes: number): string {
  const two = (n: number) => String(n % 60).padStart(2, '0');
  const lines: string[] = [];
  for (let i = 0, size = 0; size < bytes; i++) {
    const ts = `2026-11-29T12:${two(7 + (i >> 3))}:${two(i * 7)}.${String((i * 137) % 1000).padStart(3, '0')}Z`;
    const order = 18_234 + i * 17;
    const line = [
      `${ts} INFO  http GET /api/v1/orders/${order} status=200 duration_ms=${(3 + ((i * 13) % 90) / 10).toFixed(1)} request_id=req_${(0x7f3a9c21 + i * 4099).toString(16)}`,
      `${ts} INFO  payment captured order=${order} amount=${(19 + ((i * 37) % 300)).toFixed(2)} currency=EUR attempt=1`,
      `${ts} WARN  upstream retry host=10.0.${i % 16}.${(i * 11) % 250}:8443 attempt=2 backoff_ms=${250 * (1 + (i % 3))}`,
      `${ts} DEBUG cache hit key=user:${48_213 + i}:profile ttl=3600 size=${512 + ((i * 97) % 4096)}`,
    ][i % 4];
    lines.push(line);
    size += line.length + 1;
  }
  return lines.join('\n').slice(0, bytes);
}

const allScenarios: { name: string; method: string; params: Json }[] = [
  { name: 'benign read_file (allow)', method: 'steps/toolCallRequest', params: params({ tool: { name: 'read_file' }, arguments: { path: { value: '/workspace/notes.md', provenance: prov('u3', 'user_input') } } }) },
  { name: 'rm -rf / (deny baseline)', method: 'steps/toolCallRequest', params: params({ tool: { name: 'shell' }, arguments: { command: { value: 'rm -rf / --no-preserve-root', provenance: prov('u3', 'user_input') } } }) },
  { name: 'benign shell command, outside the intent (deny IBAC)', method: 'steps/toolCallRequest', params: params({ tool: { name: 'shell' }, arguments: { command: { value: 'ls -la /workspace/src', provenance: prov('u3', 'user_input') } } }) },
  { name: 'email from retrieved data (deny FIDES+AARM+CaMeL)', method: 'steps/toolCallRequest', params: params({ tool: { name: 'email.send' }, arguments: { to: { value: 'x@evil.test', provenance: prov('g1', 'agent_generated', ['u3', 'r3']) }, body: { value: 'hello', provenance: prov('g2', 'agent_generated', ['u3']) } } }) },
  { name: 'user message with PII (modify)', method: 'steps/userMessage', params: params({ content: [{ type: 'text', value: 'Contact jane.doe@example.com or +44 20 7946 0958, card 4111 1111 1111 1111. ' + 'Some ordinary text. '.repeat(20), provenance: prov('u9', 'user_input') }] }) },
  { name: 'tool result, 4 KiB output (allow)', method: 'steps/toolCallResult', params: params({ tool: { name: 'read_file' }, exit_status: 'success', outputs: [{ value: 'lorem ipsum dolor sit amet '.repeat(150), provenance: prov('o1', 'tool_output') }] }) },
  { name: 'tool result, 4 KiB log with digits (allow)', method: 'steps/toolCallResult', params: params({ tool: { name: 'read_file' }, exit_status: 'success', outputs: [{ value: serviceLog(4096), provenance: prov('o2', 'tool_output') }] }) },
];

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
execFileSync(process.execPath, ['--import', import.meta.resolve('binaryen'), '--import', 'tsx', fileURLToPath(new URL('../scripts/build-bundle.ts', import.meta.url)), bundlePath], { stdio: ['ignore', 'ignore', 'inherit'] });
const built = { bundle: new Uint8Array(readFileSync(bundlePath)) };
const compileMs = performance.now() - t0;
const t1 = performance.now();
const engine = await createWasmPolicyEngine({ bundle: built.bundle, timeoutMs: 5_000 });
const loadMs = performance.now() - t1;
console.log(`policy: library compile (child process) ${compileMs.toFixed(0)} ms, bundle ${built.bundle.byteLength} bytes, engine load (incl. warm-up) ${loadMs.toFixed(1)} ms`);
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
const paramsJcsOf = (eng: WasmPolicyEngine, sc: { params: Json }): string | undefined => (inputAB && eng === baseline ? undefined : canonicalJson(sc.params));

const base = history();
const client = { modify_capable: true, ask_capable: true };
const inputFor = (sc: (typeof scenarios)[number], revision: string): PolicyInput =>
  buildPolicyInput(sc.method, sc.params, advanceSessionState(base, sc.method, sc.params), client, { now: '2026-11-29T12:00:00.000Z', policy_version: revision }, canonicalJson(sc.params));

// Host-builtin calls per decision (each marshals its arguments out of Wasm as JSON and back), counted on
// separate engines so the timed ones run the plain host table.
async function hostCallsPerScenario(bundle: Uint8Array): Promise<string[]> {
  const calls = new Map<string, number>();
  const counting: HostBuiltinFactory = (clock) =>
    Object.fromEntries(
      Object.entries(projectHostBuiltins(clock)).map(([name, fn]) => [name, (...args: Json[]) => (calls.set(name, (calls.get(name) ?? 0) + 1), fn(...args))]),
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
const baselineHostCalls = baselinePath ? await hostCallsPerScenario(new Uint8Array(readFileSync(baselinePath))) : undefined;

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
    const input = buildPolicyInput(sc.method, sc.params, state, client, { now: '2026-11-29T12:00:00.000Z', policy_version: eng.revision }, paramsJcs);
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
      const order: [WasmPolicyEngine, Sample][] = r % 2 ? [[engine, current], [baseline, before]] : [[baseline, before], [engine, current]];
      for (const [eng, into] of order) await measure(eng, sc, Math.ceil(iterations / ROUNDS), into);
    }
  } else await measure(engine, sc, iterations, current);
  console.log(
    `policy: ${sc.name.padEnd(52)} → ${current.decision.padEnd(6)} input ${String(current.inputBytes).padStart(5)} B | state+input ${fmt(current.prep)} | evaluate ${fmt(current.evals)} | host calls ${hostCalls[k]}`,
  );
  if (baseline && baselineHostCalls) {
    console.log(`policy:   baseline bundle${' '.repeat(36)} → ${before.decision.padEnd(6)}${' '.repeat(53)} | evaluate ${fmt(before.evals)} | host calls ${baselineHostCalls[k]}`);
  } else if (baseline) {
    console.log(`policy:   reference ${builtinsAB ? 'host-call' : 'input'} path${' '.repeat(builtinsAB ? 27 : 31)} → ${before.decision.padEnd(6)}${' '.repeat(14)} | state+input ${fmt(before.prep)} | evaluate ${fmt(before.evals)}`);
  }
}
console.log(`policy: ${iterations} iterations per scenario, instance recycles ${engine.instanceRecycles}, load average ${loadavg().map((l) => l.toFixed(2)).join(' ')}`);
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
  await Promise.all(Array.from({ length: 32 }, async () => {
    while (next < total) await run(inputs[next++ % inputs.length]);
  }));
  return total / ((performance.now() - t) / 1000);
}
const inProc = await latency((inp) => engine.evaluate(inp));
const pooled = await latency((inp) => pool.evaluate(inp));
console.log(`policy: mixed scenarios, one at a time: in-process p50 ${percentile(inProc, 50).toFixed(3)} ms p99 ${percentile(inProc, 99).toFixed(3)} ms | worker pool (2) p50 ${percentile(pooled, 50).toFixed(3)} ms p99 ${percentile(pooled, 99).toFixed(3)} ms`);
console.log(`policy: 32 in flight: in-process ${(await throughput((inp) => engine.evaluate(inp))).toFixed(0)} decisions/s | worker pool (2) ${(await throughput((inp) => pool.evaluate(inp))).toFixed(0)} decisions/s`);
await pool.close();
