// A Guardian serving a prebuilt bundle never loads the Rego toolchain: binaryen alone is a large heap that every
// full collection would mark for the server's life, and through tsx its import is slow.
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';

const root = fileURLToPath(new URL('../..', import.meta.url));
const dataDir = mkdtempSync(join(tmpdir(), 'no-compiler-'));
afterAll(() => rmSync(dataDir, { recursive: true, force: true }));

// A resolve hook that prints every module the child reaches, dynamic imports included.
const hook = `data:text/javascript,${encodeURIComponent(
  "import { register } from 'node:module'; register('data:text/javascript,' + encodeURIComponent('export async function resolve(s, c, n) { const r = await n(s, c); process.stderr.write(\"resolved \" + r.url + \"\\\\n\"); return r; }'));",
)}`;

function modulesReachedBy(code: string, preload: string[] = [], adminToken = 'no-compiler-check'): string[] {
  const run = spawnSync(
    process.execPath,
    [...preload, '--import', hook, '--import', 'tsx', '--input-type=module', '-e', code],
    {
      cwd: root,
      encoding: 'utf8',
      timeout: 120_000,
      // A token enables the admin API, so its replay routes (loaded only then) are part of the check.
      env: {
        ...process.env,
        DATABASE_URL: '',
        GUARDIAN_HMAC_IKM: Buffer.alloc(32, 7).toString('base64'),
        GUARDIAN_ADMIN_TOKEN: adminToken,
      },
    },
  );
  expect(run.status, run.stderr).toBe(0);
  return run.stderr
    .split('\n')
    .filter((l) => l.startsWith('resolved '))
    .map((l) => l.slice('resolved '.length));
}

const toolchain = (urls: string[]): string[] =>
  urls.filter((u) => u.includes('/node_modules/binaryen/') || u.includes('/src/rego/wasm/'));

describe('guardian serve start-up', () => {
  it('opening the runtime on the prebuilt bundle (lifecycle, admin and replay routes included) reaches neither binaryen nor the compiler', () => {
    const reached = modulesReachedBy(
      `const { openGuardianRuntime } = await import('./src/server/index.ts');
       const runtime = await openGuardianRuntime({ dataDir: ${JSON.stringify(dataDir)} });
       if (!(await runtime.ready())) throw new Error('not ready');
       await runtime.close();
       await import('./src/cli/main.ts');`,
    );
    expect(reached.some((u) => u.includes('/src/lifecycle/runtime.ts'))).toBe(true);
    expect(reached.some((u) => u.includes('/src/replay/'))).toBe(true);
    expect(toolchain(reached)).toEqual([]);
  }, 240_000);

  it('without an admin token the admin API (its zod and OpenAPI modules, replay, the console) is never loaded', () => {
    const open = `const { openGuardianRuntime } = await import('./src/server/index.ts');
       const runtime = await openGuardianRuntime({ dataDir: ${JSON.stringify(dataDir)} });
       if (runtime.admin) throw new Error('admin mounted without a token');
       await runtime.close();`;
    const admin = (urls: string[]): string[] =>
      urls.filter((u) => /\/src\/(admin|console|replay)\/|\/node_modules\/@hono\/zod-openapi\//.test(u));
    expect(admin(modulesReachedBy(open, [], ''))).toEqual([]);
    // The same check sees them when a token is set.
    expect(admin(modulesReachedBy(open.replace('if (runtime.admin)', 'if (!runtime.admin)'))).length).toBeGreaterThan(
      0,
    );
  }, 240_000);

  it('the check sees the toolchain when a module does reach it', () => {
    // binaryen preloaded natively: through tsx its import takes 20 s
    expect(
      toolchain(modulesReachedBy(`await import('./src/rego/wasm/index.ts');`, ['--import', 'binaryen'])).length,
    ).toBeGreaterThan(0);
  }, 240_000);
});
