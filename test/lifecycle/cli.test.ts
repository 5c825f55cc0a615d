// `guardian bundle …` as a child process on a PGlite data directory: push, activate, rollback, list, shadow,
// sign and verify, with exit codes and precise refusals.
import { execFile } from 'node:child_process';
import { generateKeyPairSync } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { constantBundle } from './fixtures.ts';

const BIN = fileURLToPath(new URL('../../bin/guardian.mjs', import.meta.url));
let dir: string;

function guardian(
  args: string[],
  env: Record<string, string> = {},
): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      [BIN, ...args],
      { env: { ...process.env, DATABASE_URL: '', ...env }, timeout: 120_000 },
      (err, stdout, stderr) => {
        resolve({ code: err ? (typeof err.code === 'number' ? err.code : 1) : 0, stdout, stderr });
      },
    );
  });
}

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'bundle-cli-'));
  writeFileSync(join(dir, 'v1.tar.gz'), await constantBundle('cli-1'));
  writeFileSync(join(dir, 'v2.tar.gz'), await constantBundle('cli-2'));
  const { publicKey, privateKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' });
  writeFileSync(join(dir, 'pub.pem'), publicKey.export({ type: 'spki', format: 'pem' }));
  writeFileSync(join(dir, 'priv.pem'), privateKey.export({ type: 'pkcs8', format: 'pem' }));
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('guardian bundle', () => {
  it('push --activate, push, activate, rollback, list, shadow and its report', async () => {
    const data = ['--data-dir', join(dir, 'db')];
    let r = await guardian(['bundle', 'push', join(dir, 'v1.tar.gz'), '--activate', ...data]);
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(
      /^stored cli-1 sha256:[0-9a-f]{64}; activated \(was none, 0 smoke case\(s\), signature unsigned, \d+ ms\)\n$/,
    );
    r = await guardian(['bundle', 'push', join(dir, 'v2.tar.gz'), ...data]);
    expect(r.stdout).toMatch(/^stored cli-2 /);
    r = await guardian(['bundle', 'activate', 'cli-2', ...data]);
    expect(r.stdout).toMatch(/^activated cli-2 sha256:[0-9a-f]{64} \(was cli-1\)\n$/);
    r = await guardian(['bundle', 'rollback', '--json', ...data]);
    expect(JSON.parse(r.stdout)).toMatchObject({ revision: 'cli-1', previousRevision: 'cli-2' });
    r = await guardian(['bundle', 'shadow', 'cli-2', ...data]);
    expect(r.stdout).toMatch(/^shadowing cli-2 /);
    r = await guardian(['bundle', 'list', '--json', ...data]);
    const list = JSON.parse(r.stdout) as {
      bundles: { revision: string }[];
      activations: { revision: string; activatedBy: string }[];
    };
    expect(list.bundles.map((b) => b.revision)).toEqual(['cli-1', 'cli-2']);
    expect(list.activations.map((a) => a.revision)).toEqual(['cli-1', 'cli-2', 'cli-1']);
    expect(list.activations[0].activatedBy).toMatch(/^cli:/);
    r = await guardian(['bundle', 'shadow', '--report', ...data]);
    expect(r.stdout).toBe('shadow cli-2: 0 difference(s)\n');
    r = await guardian(['bundle', 'activate', 'nope', ...data]);
    expect(r.code).toBe(1);
    expect(r.stderr).toBe('guardian: not_found: no registered bundle with revision or sha256 "nope"\n');
  }, 300_000);

  it('sign + verify; an unsigned bundle is refused with exit 1; push --activate refuses an unsigned bundle when a key is configured', async () => {
    let r = await guardian([
      'bundle',
      'sign',
      join(dir, 'v1.tar.gz'),
      '--key',
      join(dir, 'priv.pem'),
      '--alg',
      'ES256',
      '--key-id',
      'rel',
      '-o',
      join(dir, 'v1.signed.tar.gz'),
    ]);
    expect(r.stdout).toBe(`signed ${join(dir, 'v1.signed.tar.gz')} (ES256, kid rel)\n`);
    const verify = [
      '--verification-key',
      join(dir, 'pub.pem'),
      '--verification-alg',
      'ES256',
      '--verification-key-id',
      'rel',
    ];
    r = await guardian(['bundle', 'verify', join(dir, 'v1.signed.tar.gz'), ...verify]);
    expect(r.stdout).toBe('verified (key rel)\n');
    r = await guardian(['bundle', 'verify', join(dir, 'v1.tar.gz'), ...verify]);
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/refused: signature_required: bundle is not signed/);
    r = await guardian([
      'bundle',
      'push',
      join(dir, 'v2.tar.gz'),
      '--activate',
      '--data-dir',
      join(dir, 'db2'),
      ...verify,
    ]);
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/signature_required/);
  }, 300_000);
});
