// Vitest global setup: many tests spawn the real CLI (bin/guardian.mjs), which runs the compiled dist/. Built
// here once per run, before any test file starts; a no-op when dist/ matches the sources (scripts/build.mjs
// stamps a hash of its inputs), so no test can run stale compiled code.
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';

export default function buildDist(): void {
  const root = fileURLToPath(new URL('..', import.meta.url));
  const run = spawnSync(process.execPath, ['scripts/build.mjs'], { cwd: root, stdio: 'inherit' });
  if (run.status !== 0) throw new Error(`scripts/build.mjs failed (exit ${run.status}): the CLI tests need dist/`);
}
