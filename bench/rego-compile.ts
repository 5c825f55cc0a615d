// Rego toolchain: warm compile time per stage (parse → compile → plan → link → bundle) for a generated
// 300-rule policy set (target < 1.5 s total) and for the project's rego/ library.
// Run: `npm run bench rego` (or `npx tsx bench/rego-compile.ts`). BENCH_RUNS (default 5) warm runs; median shown.
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { performance } from 'node:perf_hooks';
import { parseSources, writeBundle, type RegoSource } from '../src/rego/index.ts';
import { compileModules } from '../src/rego/semantic/index.ts';
import { planEntrypoints } from '../src/rego/planner/index.ts';
import { linkPolicyWasm } from '../src/rego/wasm/index.ts';

const RUNS = Number(process.env.BENCH_RUNS ?? 5);
const root = fileURLToPath(new URL('..', import.meta.url));

/** 300 rules over 10 packages: partial sets, complete rules with defaults, functions, comprehensions. */
function generatedPolicySet(): { sources: RegoSource[]; entrypoints: string[] } {
  const sources: RegoSource[] = [];
  const entrypoints: string[] = [];
  for (let p = 0; p < 10; p++) {
    const lines = [`package gen.p${p}`, ''];
    for (let r = 0; r < 30; r++) {
      const i = p * 30 + r;
      switch (r % 5) {
        case 0:
          lines.push(
            `deny contains msg if {`,
            `  input.params.tool.name == "tool_${i}"`,
            `  some arg in object.keys(input.params.arguments)`,
            `  startswith(arg, "secret_${i}")`,
            `  msg := sprintf("rule ${i}: %s", [arg])`,
            `}`,
          );
          break;
        case 1:
          lines.push(
            `default allow_${i} := false`,
            `allow_${i} if {`,
            `  input.params.agent.id in {"a${i}", "b${i}", "c${i}"}`,
            `  count(input.params.arguments) < ${i + 3}`,
            `}`,
          );
          break;
        case 2:
          lines.push(
            `score_${i}(x) := y if {`,
            `  y := x * ${i} + 1`,
            `}`,
            `scores_${i} := [score_${i}(n) | some n in numbers.range(1, 5)]`,
          );
          break;
        case 3:
          lines.push(
            `tags_${i} contains lower(t) if {`,
            `  some t in input.params.tags`,
            `  not endswith(t, "_${i}")`,
            `}`,
          );
          break;
        default:
          lines.push(`limits_${i} := {k: v | some k, v in input.params.limits; v > ${i}}`);
      }
      lines.push('');
    }
    lines.push(`decision := {"deny": deny, "allow": allow_${p * 30 + 1}, "n": count(tags_${p * 30 + 3})}`);
    sources.push({ file: `gen/p${p}.rego`, text: lines.join('\n') });
    entrypoints.push(`gen/p${p}/decision`);
  }
  return { sources, entrypoints };
}

function walk(dir: string, out: string[]): void {
  for (const name of readdirSync(dir).sort()) {
    const p = join(dir, name);
    if (statSync(p).isDirectory()) walk(p, out);
    else out.push(p);
  }
}

function regoLibrary(): { sources: RegoSource[]; entrypoints: string[]; data: Record<string, unknown> } {
  const dir = join(root, 'rego');
  const files: string[] = [];
  walk(dir, files);
  const sources = files
    .filter((f) => f.endsWith('.rego'))
    .map((f) => ({ file: relative(dir, f), text: readFileSync(f, 'utf8') }));
  const data = JSON.parse(readFileSync(join(dir, 'data.json'), 'utf8')) as Record<string, unknown>;
  return { sources, entrypoints: ['acs/decision'], data };
}

type Stage = 'parse' | 'compile' | 'plan' | 'link' | 'bundle';
const STAGES: Stage[] = ['parse', 'compile', 'plan', 'link', 'bundle'];

async function compileOnce(set: {
  sources: RegoSource[];
  entrypoints: string[];
  data?: Record<string, unknown>;
}): Promise<Record<Stage, number> & { wasm: number; bundle_bytes: number }> {
  let t = performance.now();
  const lap = (): number => {
    const now = performance.now();
    const d = now - t;
    t = now;
    return d;
  };
  const modules = parseSources(set.sources);
  const parse = lap();
  const program = compileModules(modules);
  const compile = lap();
  const plan = planEntrypoints(program, set.entrypoints);
  const planT = lap();
  const wasm = await linkPolicyWasm(plan, { strictBuiltinErrors: false });
  const link = lap();
  const bundle = writeBundle({
    manifest: {
      roots: [''],
      wasm: set.entrypoints.map((entrypoint) => ({ entrypoint, module: '/policy.wasm' })),
      rego_version: 1,
    },
    wasm,
    plan,
    data: set.data ?? {},
    sources: set.sources.map((s) => ({ path: s.file, text: s.text })),
  });
  const bundleT = lap();
  return { parse, compile, plan: planT, link, bundle: bundleT, wasm: wasm.length, bundle_bytes: bundle.length };
}

const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

async function report(
  label: string,
  set: { sources: RegoSource[]; entrypoints: string[]; data?: Record<string, unknown> },
): Promise<void> {
  const cold = await compileOnce(set);
  const runs: Awaited<ReturnType<typeof compileOnce>>[] = [];
  for (let i = 0; i < RUNS; i++) runs.push(await compileOnce(set));
  const per = Object.fromEntries(STAGES.map((s) => [s, median(runs.map((r) => r[s]))])) as Record<Stage, number>;
  const totals = runs.map((r) => STAGES.reduce((a, s) => a + r[s], 0));
  const bytes = set.sources.reduce((a, s) => a + s.text.length, 0);
  console.log(
    `${label}: ${set.sources.length} modules, ${bytes} bytes of Rego, ${set.entrypoints.length} entrypoint(s)`,
  );
  console.log(`  cold (first) total ${STAGES.reduce((a, s) => a + cold[s], 0).toFixed(0)} ms`);
  console.log(
    `  warm median total ${median(totals).toFixed(0)} ms (min ${Math.min(...totals).toFixed(0)}, max ${Math.max(...totals).toFixed(0)}, ${RUNS} runs)`,
  );
  console.log(`  per stage (median ms): ${STAGES.map((s) => `${s} ${per[s].toFixed(1)}`).join(', ')}`);
  console.log(`  policy.wasm ${runs[0].wasm} bytes, bundle ${runs[0].bundle_bytes} bytes`);
}

const gen = generatedPolicySet();
await report('generated 300-rule policy set (target < 1500 ms warm)', gen);
await report('project rego/ library', regoLibrary());
