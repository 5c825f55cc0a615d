// The BUILT package (dist/, `npm run build`), used as a dependent would: `guardian serve` from bin/guardian.mjs
// on a free port with a fresh data dir, and a plain-node script importing only `acs-guardian/client` and
// `acs-guardian/rego`. The build runs first (also done by the global setup, test/build-dist.ts); it is a no-op
// when dist/ already matches the sources (stamp of their hash), so this file never exercises stale code.
import { type ChildProcessWithoutNullStreams, spawn, spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { expectValidAnswer } from '../acs/fixtures/harness.ts';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const IKM = randomBytes(32).toString('base64');
let dir: string;
let guardian: ChildProcessWithoutNullStreams;
let url = '';
let stderr = '';

// A resolve hook that prints every module the server reaches (as test/server/no-compiler-at-start.test.ts does).
const RESOLVE_HOOK = `data:text/javascript,${encodeURIComponent(
  "import { register } from 'node:module'; register('data:text/javascript,' + encodeURIComponent('export async function resolve(s, c, n) { const r = await n(s, c); process.stderr.write(\"resolved \" + r.url + \"\\\\n\"); return r; }'));",
)}`;

/** A child's environment without a TypeScript loader: plain node resolves the package's exports only. */
function plainNodeEnv(): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { ...process.env, DATABASE_URL: '', GUARDIAN_HMAC_IKM: IKM };
  delete env.NODE_OPTIONS;
  return env;
}

beforeAll(async () => {
  const build = spawnSync(process.execPath, [join(ROOT, 'scripts/build.mjs')], { cwd: ROOT, encoding: 'utf8' });
  expect(build.status, build.stderr).toBe(0);
  dir = mkdtempSync(join(tmpdir(), 'built-package-'));
  guardian = spawn(
    process.execPath,
    ['--import', RESOLVE_HOOK, join(ROOT, 'bin/guardian.mjs'), 'serve', '--port', '0', '--data-dir', join(dir, 'data')],
    { cwd: dir, env: plainNodeEnv() },
  );
  guardian.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
  url = await new Promise<string>((resolve, reject) => {
    let stdout = '';
    guardian.stdout.on('data', (d: Buffer) => {
      stdout += d.toString();
      const m = /listening on (http:\/\/\S+)/.exec(stdout);
      if (m) resolve(m[1]);
    });
    guardian.once('exit', (code) => reject(new Error(`guardian exited with ${code}: ${stderr}`)));
  });
}, 600_000);

afterAll(async () => {
  if (guardian && guardian.exitCode === null) {
    const exited = new Promise((resolve) => guardian.once('exit', resolve));
    guardian.kill('SIGTERM');
    await exited;
  }
  if (dir) rmSync(dir, { recursive: true, force: true });
});

describe('the built package', () => {
  it('serves from dist/, and its client and Rego exports work from plain node', async () => {
    const run = spawnSync(process.execPath, [join(ROOT, 'test/package/fixtures/use-built-package.mjs'), url, IKM], {
      cwd: ROOT,
      encoding: 'utf8',
      env: plainNodeEnv(),
      timeout: 120_000,
    });
    expect(run.status, run.stderr).toBe(0);
    const out = JSON.parse(run.stdout) as {
      answers: unknown[];
      negotiatedVersion: string;
      step: { decision: string; failure: unknown; signature: { value?: string } | null };
      chainHash: string | null;
      rego: Record<string, unknown>;
    };
    // handshake/hello and one step: both answers are schema-valid and signed, and the client verified them.
    expect(out.answers).toHaveLength(2);
    for (const answer of out.answers) expectValidAnswer(answer);
    expect(out.negotiatedVersion).toBe('0.1.0');
    expect(out.step.failure).toBeNull();
    expect(out.step.decision).toBe('allow');
    expect(typeof out.step.signature?.value).toBe('string');
    expect(out.chainHash).toMatch(/^[0-9a-f]{64}$/);
    expect(out.rego).toEqual({ admin: [{ result: true }], guest: [], limit: [{ result: 30 }] });
    // The server (and any worker thread, which inherits the hook) ran compiled modules only, never the compiler.
    const reached = stderr
      .split('\n')
      .filter((l) => l.startsWith('resolved '))
      .map((l) => l.slice('resolved '.length));
    expect(reached.some((u) => u.endsWith('/dist/cli/main.js'))).toBe(true);
    expect(reached.filter((u) => u.endsWith('.ts'))).toEqual([]);
    expect(reached.filter((u) => u.includes('/node_modules/binaryen/') || u.includes('/dist/rego/wasm/'))).toEqual([]);
  });
});
