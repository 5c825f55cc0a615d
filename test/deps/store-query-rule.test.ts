// The biome plugin scripts/lint/store-query-for-tests.grit (wired in biome.json, run by `npm run lint`) keeps
// DurableStore.query() — raw SQL — to tests: a probe tree linted with the real biome.json reports the call outside
// src/store and nothing else (not the same call inside src/store, not a Hono `c.req.query('name')`).
import { execFile } from 'node:child_process';
import { copyFileSync, mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

const ROOT = resolve(import.meta.dirname, '../..');
const PLUGIN = 'scripts/lint/store-query-for-tests.grit';

const CALLER = [
  'export async function rows(',
  '  store: { query(sql: string): Promise<unknown[]> },',
  '  c: { req: { query(name: string): string | undefined } },',
  ') {',
  "  c.req.query('format');",
  "  return store.query('select 1');",
  '}',
  '',
].join('\n');

interface Diagnostic {
  category: string;
  location: { path: string; start: { line: number } };
}

let dir: string;
let diagnostics: Diagnostic[];

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'store-query-rule-'));
  for (const file of ['src/lifecycle/registry.ts', 'src/store/reads.ts']) {
    mkdirSync(dirname(join(dir, file)), { recursive: true });
    writeFileSync(join(dir, file), CALLER);
  }
  mkdirSync(join(dir, dirname(PLUGIN)), { recursive: true });
  copyFileSync(join(ROOT, PLUGIN), join(dir, PLUGIN));
  copyFileSync(join(ROOT, 'biome.json'), join(dir, 'biome.json'));
  symlinkSync(join(ROOT, 'node_modules'), join(dir, 'node_modules'), 'dir');
  // The probe is no git checkout, so biome.json's VCS settings are switched off; exit code 1 = errors found.
  const biome = join(ROOT, 'node_modules/.bin/biome');
  const run = promisify(execFile)(biome, ['lint', '--vcs-enabled=false', '--reporter=json', 'src'], { cwd: dir });
  const { stdout } = await run.catch((failed: { stdout: string }) => failed);
  diagnostics = (JSON.parse(stdout) as { diagnostics: Diagnostic[] }).diagnostics;
}, 60_000);

afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe(PLUGIN, () => {
  it('reports store.query() outside src/store only', () => {
    expect(diagnostics.map((d) => `${d.category} ${d.location.path}:${d.location.start.line}`)).toEqual([
      'plugin src/lifecycle/registry.ts:6',
    ]);
  });
});
