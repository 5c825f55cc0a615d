#!/usr/bin/env node
// `npm run bench [name…]`: runs every benchmark script in bench/ (or the named ones) one after another,
// each in its own process so figures are not skewed by another benchmark's heap or JIT state.
import { readdirSync } from 'node:fs';
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { dirname, join } from 'node:path';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const wanted = process.argv.slice(2);
const scripts = readdirSync(join(root, 'bench'))
  .filter((f) => f.endsWith('.ts'))
  .filter((f) => wanted.length === 0 || wanted.some((w) => f.includes(w)))
  .sort();
if (scripts.length === 0) {
  console.error(`bench: no benchmark matches ${wanted.join(', ') || '(none in bench/)'}`);
  process.exit(2);
}
let failed = 0;
for (const script of scripts) {
  console.log(`\n=== bench/${script}`);
  const run = spawnSync(process.execPath, ['--import', 'tsx', join(root, 'bench', script)], { stdio: 'inherit', cwd: root });
  if (run.status !== 0) {
    failed++;
    console.error(`bench/${script} exited with ${run.status ?? run.signal}`);
  }
}
process.exit(failed ? 1 : 0);
