// Rego → Wasm evaluation: opa-wasm evaluate() p50/p99 for a generated 20-rule policy over an ~800-byte ACS
// step envelope (target p50 ≤ 15 µs), on opa-wasm's fast path (one opa_eval call, ABI ≥ 1.2) and its slow
// path (opa_eval_ctx_* calls + JSON round trips, what ABI 1.1 hosts do). Figures are printed, never asserted.
// Run: `npm run bench rego` (or `npx tsx bench/rego-eval.ts`). BENCH_ITERATIONS (default 20000).
import { performance } from 'node:perf_hooks';
import type { LoadedPolicy } from '@open-policy-agent/opa-wasm';
import { compileBundle, hostBuiltins, instantiatePolicy } from '../src/rego/index.ts';
import { toolCallEnvelope } from './fixtures/acs-envelope.ts';

const iterations = Number(process.env.BENCH_ITERATIONS ?? 20000);

const envelope = toolCallEnvelope;

/** 20 rules: deny/ask partial sets, allow-lists, counters, and a decision object combining them. */
const POLICY = `package bench

default allow := false

tools_allowed := {"read_file", "search", "list_dir", "summarise"}
blocked_servers := {"shell-mcp", "net-mcp"}
admin_roles := {"admin", "operator"}

deny contains "tool_not_allowed" if not input.params.tool.name in tools_allowed
deny contains "server_blocked" if input.params.tool.server in blocked_servers
deny contains "too_many_calls" if input.params.limits.tool_calls > 50
deny contains "token_budget" if input.params.limits.tokens > 100000
deny contains "no_session" if not input.params.session.id
deny contains "bad_method" if input.method != "steps/toolCallRequest"

ask contains "write_tool" if input.params.tool.annotations.readOnlyHint == false
ask contains "agent_provided_path" if input.params.arguments.path.provenance.source == "agent"
ask contains "late_turn" if input.params.session.turn > 40

is_admin if { some r in input.params.user.roles; r in admin_roles }
beta_user if "beta" in input.params.user.roles
web_channel if input.params.context.channel == "web"
arg_count := count(input.params.arguments)
trusted_args := count([k | some k, a in input.params.arguments; a.provenance.source == "user_input"])

allow if {
  count(deny) == 0
  count(ask) == 0
}

decision := {"allow": allow, "deny": deny, "ask": ask, "admin": is_admin, "beta": beta_user, "web": web_channel, "args": arg_count, "trusted": trusted_args} if is_admin
decision := {"allow": allow, "deny": deny, "ask": ask, "admin": false, "beta": beta_user, "web": web_channel, "args": arg_count, "trusted": trusted_args} if not is_admin
`;

function percentile(sorted: number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))];
}

function timeEval(policy: LoadedPolicy, input: unknown, entrypoint: string): { p50: number; p99: number } {
  for (let i = 0; i < 2000; i++) policy.evaluate(input, entrypoint);
  const samples = new Array<number>(iterations);
  for (let i = 0; i < iterations; i++) {
    const t = performance.now();
    policy.evaluate(input, entrypoint);
    samples[i] = (performance.now() - t) * 1000;
  }
  samples.sort((a, b) => a - b);
  return { p50: percentile(samples, 50), p99: percentile(samples, 99) };
}

const compiled = await compileBundle({
  sources: [{ file: 'bench.rego', text: POLICY }],
  entrypoints: ['bench/decision'],
});
const inputBytes = JSON.stringify(envelope).length;
const fast = await instantiatePolicy(compiled.wasm, hostBuiltins());
const slow = await instantiatePolicy(compiled.wasm, hostBuiltins());
// opa-wasm picks its slow path for modules reporting ABI minor version < 2.
(slow as unknown as { minorVersion: number }).minorVersion = 1;
const result = JSON.stringify(fast.evaluate(envelope, 'bench/decision'));
if (JSON.stringify(slow.evaluate(envelope, 'bench/decision')) !== result)
  throw new Error('fast and slow paths disagree');
const hostCalls = (compiled.plan.static?.builtin_funcs ?? []).map((b) => b.name);
console.log(
  `policy: 20 rules, policy.wasm ${compiled.wasm.length} bytes, builtins ${hostCalls.join(', ') || '(none)'}`,
);
console.log(`input: ACS steps/toolCallRequest envelope, ${inputBytes} bytes; result ${result}`);
const f = timeEval(fast, envelope, 'bench/decision');
const s = timeEval(slow, envelope, 'bench/decision');
console.log(
  `evaluate() fast path (${iterations} runs): p50 ${f.p50.toFixed(1)} µs  p99 ${f.p99.toFixed(1)} µs   (target p50 ≤ 15 µs)`,
);
console.log(`evaluate() slow path (${iterations} runs): p50 ${s.p50.toFixed(1)} µs  p99 ${s.p99.toFixed(1)} µs`);
// Passing the input as pre-serialised bytes skips opa-wasm's JSON.stringify (what src/policy/engine.ts does).
const bytes = new TextEncoder().encode(JSON.stringify(envelope));
const buffer = bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.byteLength) as ArrayBuffer;
const b = timeEval(fast, buffer, 'bench/decision');
console.log(`evaluate() fast path, input as raw JSON bytes: p50 ${b.p50.toFixed(1)} µs  p99 ${b.p99.toFixed(1)} µs`);
