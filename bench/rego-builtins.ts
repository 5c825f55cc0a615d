// String/regex builtins over an ACS envelope: evaluate() p50 for policies dominated by host-dispatched
// builtins (startswith, contains, lower, regex.match, …) against the same checks written with natively
// implemented builtins only (==, in, count), so moving a builtin into the Wasm runtime is a measured decision.
// A builtin not in NATIVE_BUILTINS (src/rego/wasm/native-builtins.ts) crosses opa_builtinN → JS with a
// JSON round trip of its arguments and result (~2–3 µs a call here); startswith/endswith/contains moved into the
// runtime after this measurement. The script prints which string builtins are native now.
// Run: `npm run bench rego` (or `npx tsx bench/rego-builtins.ts`). BENCH_ITERATIONS (default 10000).
import { performance } from 'node:perf_hooks';
import type { LoadedPolicy } from '@open-policy-agent/opa-wasm';
import { compileBundle, hostBuiltins, instantiatePolicy } from '../src/rego/index.ts';
import { NATIVE_BUILTINS } from '../src/rego/wasm/index.ts';
import { toolCallEnvelope } from './fixtures/acs-envelope.ts';

const iterations = Number(process.env.BENCH_ITERATIONS ?? 10000);

// The shared envelope without its trace member, as this benchmark has always measured it.
const { trace: _trace, ...params } = toolCallEnvelope.params;
const envelope = { ...toolCallEnvelope, params };

interface Variant {
  name: string;
  /** Rule bodies computing `hits` (a count) from the envelope; 10 checks each. */
  rego: string;
  /** How many host builtin calls one evaluation makes (for the per-call figure). */
  hostCalls: number;
}

const CHECKS = 10;
const path = 'input.params.arguments.path.value';
const tool = 'input.params.tool.name';
const intent = 'input.params.intent.value';

const variants: Variant[] = [
  {
    name: 'native only (==, !=, in, count)',
    rego: [
      `c0 if ${path} != "/etc/passwd"`,
      `c1 if ${tool} == "read_file"`,
      `c2 if not ${tool} in {"shell", "exec"}`,
      `c3 if input.params.tool.server == "fs-mcp"`,
      `c4 if input.params.context.locale == "en-GB"`,
      `c5 if count(${path}) > 5`,
      `c6 if ${intent} != ""`,
      `c7 if input.params.session.agent.name == "support-bot"`,
      `c8 if input.params.arguments.encoding.value == "utf-8"`,
      `c9 if count(${intent}) < 500`,
    ].join('\n'),
    hostCalls: 0,
  },
  {
    name: 'startswith / endswith / contains (native since the measured split)',
    rego: [
      `c0 if startswith(${path}, "/workspace/")`,
      `c1 if endswith(${path}, ".md")`,
      `c2 if contains(${intent}, "report")`,
      `c3 if not contains(${path}, "..")`,
      `c4 if startswith(${tool}, "read_")`,
      `c5 if not startswith(${path}, "/etc")`,
      `c6 if contains(input.params.tool.server, "mcp")`,
      `c7 if endswith(input.params.session.agent.name, "-bot")`,
      `c8 if not contains(${intent}, "password")`,
      `c9 if startswith(input.params.context.locale, "en")`,
    ].join('\n'),
    hostCalls: 0,
  },
  {
    name: 'lower / upper / trim / replace (host)',
    rego: [
      `c0 if lower(${tool}) == "read_file"`,
      `c1 if upper(input.params.context.channel) == "WEB"`,
      `c2 if trim_space(${intent}) != ""`,
      `c3 if lower(${path}) != "/etc/passwd"`,
      `c4 if replace(${path}, "/", "_") != ""`,
      `c5 if lower(input.params.context.locale) == "en-gb"`,
      `c6 if trim(${path}, "/") != ""`,
      `c7 if upper(input.params.tool.server) == "FS-MCP"`,
      `c8 if lower(${intent}) != ""`,
      `c9 if trim_prefix(${path}, "/workspace") != ${path}`,
    ].join('\n'),
    hostCalls: 10,
  },
  {
    name: 'regex.match (host)',
    rego: Array.from(
      { length: CHECKS },
      (_, i) =>
        [
          `c${i} if regex.match("^/workspace/[a-z0-9/_-]+\\\\.md$", ${path})`,
          `c${i} if not regex.match("(?i)password|secret", ${intent})`,
        ][i % 2],
    ).join('\n'),
    hostCalls: 10,
  },
  {
    name: 'sprintf / concat / split (host)',
    rego: [
      `c0 if sprintf("%s:%s", [${tool}, input.params.tool.server]) == "read_file:fs-mcp"`,
      `c1 if count(split(${path}, "/")) > 2`,
      `c2 if concat("/", ["", "workspace"]) == "/workspace"`,
      `c3 if count(split(${intent}, " ")) > 3`,
      `c4 if sprintf("%d", [input.params.session.turn]) == "3"`,
      `c5 if concat(",", input.params.user.roles) != ""`,
      `c6 if count(split(input.params.context.locale, "-")) == 2`,
      `c7 if sprintf("%s", [${path}]) == ${path}`,
      `c8 if concat("", [${tool}, "x"]) != ""`,
      `c9 if count(split(input.params.session.agent.version, ".")) == 3`,
    ].join('\n'),
    hostCalls: 10,
  },
];

function percentile(sorted: number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))];
}

function timeEval(policy: LoadedPolicy, input: ArrayBuffer): number {
  for (let i = 0; i < 1000; i++) policy.evaluate(input, 'bench/hits');
  const samples = new Array<number>(iterations);
  for (let i = 0; i < iterations; i++) {
    const t = performance.now();
    policy.evaluate(input, 'bench/hits');
    samples[i] = (performance.now() - t) * 1000;
  }
  samples.sort((a, b) => a - b);
  return percentile(samples, 50);
}

const bytes = new TextEncoder().encode(JSON.stringify(envelope));
const input = bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.byteLength) as ArrayBuffer;
const nativeStrings = [...NATIVE_BUILTINS.keys()].filter((n) =>
  /^(startswith|endswith|contains|lower|upper|trim|replace|regex\.|sprintf|concat|split)/.test(n),
);
console.log(`input ${bytes.length} bytes; native string builtins today: ${nativeStrings.join(', ') || 'none'}`);
let baseline: number | undefined;
for (const v of variants) {
  const text = `package bench\n\n${v.rego}\n\nhits := count([1 | c0]) + count([1 | c1]) + count([1 | c2]) + count([1 | c3]) + count([1 | c4]) + count([1 | c5]) + count([1 | c6]) + count([1 | c7]) + count([1 | c8]) + count([1 | c9])\n`;
  const compiled = await compileBundle({ sources: [{ file: 'bench.rego', text }], entrypoints: ['bench/hits'] });
  const policy = await instantiatePolicy(compiled.wasm, hostBuiltins());
  const result = policy.evaluate(input, 'bench/hits') as { result: number }[];
  const host = (compiled.plan.static?.builtin_funcs ?? []).map((b) => b.name).filter((n) => !NATIVE_BUILTINS.has(n));
  const p50 = timeEval(policy, input);
  baseline ??= p50;
  const perCall = v.hostCalls ? ` → ${((p50 - baseline) / v.hostCalls).toFixed(2)} µs per host call over native` : '';
  console.log(
    `${v.name.padEnd(42)} hits ${result[0]?.result}/${CHECKS}  p50 ${p50.toFixed(1)} µs${perCall}  [host: ${host.join(', ') || 'none'}]`,
  );
}
