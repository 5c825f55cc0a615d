// Paired A/B of two policy bundles on one scenario of bench/policy.ts, for a noisy machine: both engines in one
// process, many short rounds alternating which goes first; prints each side's median of round medians and
// the quartiles of the paired difference (B - A) of round medians, so load swings hit both sides alike.
// Run: BENCH_A=<base bundle> BENCH_B=<new bundle> [BENCH_SCENARIO=PII] [BENCH_ROUNDS=60] [BENCH_PER_ROUND=200]
//   node --import tsx bench/policy-ab.ts
import { readFileSync } from 'node:fs';
import { loadavg } from 'node:os';
import {
  advanceSessionState,
  buildPolicyInput,
  createWasmPolicyEngine,
  type WasmPolicyEngine,
} from '../src/policy/index.ts';
import { canonicalJson } from '../src/chain/index.ts';
import { allScenarios, history } from './fixtures/policy-scenarios.ts';

// BENCH_SCENARIO: the first of bench/policy.ts's scenarios whose name contains it (default PII).
const name = process.env.BENCH_SCENARIO ?? 'PII';
const sc = allScenarios.find((s) => s.name.includes(name));
if (!sc) throw new Error(`BENCH_SCENARIO matches none of: ${allScenarios.map((s) => s.name).join('; ')}`);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 60);
const PER_ROUND = Number(process.env.BENCH_PER_ROUND ?? 200);

const engines: WasmPolicyEngine[] = [];
for (const f of [process.env.BENCH_A, process.env.BENCH_B]) {
  if (!f) throw new Error('set BENCH_A and BENCH_B to bundle files');
  engines.push(await createWasmPolicyEngine({ bundle: new Uint8Array(readFileSync(f)), timeoutMs: 5_000 }));
}
const base = history();
const client = { modify_capable: true, ask_capable: true };
const jcs = canonicalJson(sc.params);
const state = advanceSessionState(base, sc.method, sc.params);
const inputs = engines.map((e) =>
  buildPolicyInput(
    sc.method,
    sc.params,
    state,
    client,
    { now: '2026-11-29T12:00:00.000Z', policy_version: e.revision },
    jcs,
  ),
);
const decisions = await Promise.all(engines.map((e, i) => e.evaluate(inputs[i])));
const strip = (d: unknown) => JSON.stringify(d, (k, v) => (k === 'policy_version' || k === 'revision' ? undefined : v));
if (strip(decisions[0].decision) !== strip(decisions[1].decision))
  console.log(`policy-ab: decisions differ:\n A ${strip(decisions[0].decision)}\n B ${strip(decisions[1].decision)}`);

async function round(i: number): Promise<number> {
  const xs: number[] = [];
  for (let k = 0; k < PER_ROUND; k++) {
    const t = performance.now();
    await engines[i].evaluate(inputs[i]);
    xs.push(performance.now() - t);
  }
  xs.sort((a, b) => a - b);
  return xs[xs.length >> 1] * 1000;
}
for (let w = 0; w < 10; w++) for (const i of [0, 1]) await round(i); // warm-up (JIT, Wasm tier-up)
const med: number[][] = [[], []];
for (let r = 0; r < ROUNDS; r++) for (const i of r % 2 ? [1, 0] : [0, 1]) med[i].push(await round(i));
const q = (xs: number[], p: number) =>
  [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor(p * xs.length))];
const diff = med[1].map((b, r) => b - med[0][r]);
console.log(
  `policy-ab ${name}: A median ${q(med[0], 0.5).toFixed(1)} µs (min ${q(med[0], 0).toFixed(1)}) | B median ${q(med[1], 0.5).toFixed(1)} µs (min ${q(med[1], 0).toFixed(1)}) | B-A paired ${q(diff, 0.5).toFixed(2)} µs (quartiles ${q(diff, 0.25).toFixed(2)} .. ${q(diff, 0.75).toFixed(2)}) | ${ROUNDS}x${PER_ROUND} per side, load ${loadavg()
    .map((l) => l.toFixed(1))
    .join(' ')}`,
);
