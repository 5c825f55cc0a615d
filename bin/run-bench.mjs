#!/usr/bin/env node
// `npm run bench [name…] [-- options]`: runs every benchmark script in bench/ (or the named ones) one after another,
// each in its own process so figures are not skewed by another benchmark's heap or JIT state.
import { readdirSync, readFileSync } from 'node:fs';
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { dirname, join } from 'node:path';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
// Names first, then options for the benchmarks themselves (`npm run bench soak -- --minutes 5`).
const argv = process.argv.slice(2);
const firstOption = argv.findIndex((a) => a.startsWith('--'));
const wanted = firstOption < 0 ? argv : argv.slice(0, firstOption);
const options = firstOption < 0 ? [] : argv.slice(firstOption);
// Run only when named: the soak lasts half an hour by default (`npm run bench soak`), and policy-ab compares two
// bundles the caller names (BENCH_A, BENCH_B).
const NAMED_ONLY = new Set(['soak.ts', 'policy-ab.ts']);
const available = readdirSync(join(root, 'bench'))
  .filter((f) => f.endsWith('.ts'))
  .sort();
if (argv[0] === '--help' || argv[0] === '-h') {
  console.log(`Usage: npm run bench [name...] [-- options for the benchmarks]

Runs each benchmark in bench/ whose file name contains one of the names (all of them without a name, but
${[...NAMED_ONLY].join(' and ')}), one process each, and prints its figures beside its targets. Options after \`--\`
go to every benchmark run (e.g. \`npm run bench soak -- --minutes 5\`). docs/performance.md says what each measures.

Benchmarks: ${available.map((f) => f.replace(/\.ts$/, '')).join(', ')}
Exit codes: 0 all ran, 1 a benchmark failed, 2 no benchmark matches the names.`);
  process.exit(0);
}
const scripts = available.filter((f) => (wanted.length === 0 ? !NAMED_ONLY.has(f) : wanted.some((w) => f.includes(w))));
if (wanted.length === 0) console.log(`bench: ${[...NAMED_ONLY].join(', ')} runs only when named`);
if (scripts.length === 0) {
  console.error(`bench: no benchmark matches ${wanted.join(', ') || '(none in bench/)'}`);
  process.exit(2);
}
// tsx's loader rewrites every ESM file it loads, and binaryen is one 15 MB file: through the loader its import
// takes many times longer than a native import. A benchmark that reaches the compiler gets binaryen
// loaded natively first; the others are spared its heap.
const reachesCompiler = (script) =>
  /from '\.\.\/src\/(rego\/index|rego\/wasm\/[\w/]+|policy\/library)\.ts'/.test(
    readFileSync(join(root, 'bench', script), 'utf8'),
  );
let failed = 0;
for (const script of scripts) {
  console.log(`\n=== bench/${script}`);
  const run = spawnSync(
    process.execPath,
    [
      ...(reachesCompiler(script) ? ['--import', 'binaryen'] : []),
      '--import',
      'tsx',
      join(root, 'bench', script),
      ...options,
    ],
    { stdio: 'inherit', cwd: root },
  );
  if (run.status !== 0) {
    failed++;
    console.error(`bench/${script} exited with ${run.status ?? run.signal}`);
  }
}
process.exit(failed ? 1 : 0);
