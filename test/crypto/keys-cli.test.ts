// `guardian keys generate|list|retire`: the command tree is driven in-process (the machine is shared, and every
// spawned CLI imports the whole program), plus one run of the real bin/guardian.mjs in a child process.
import { spawnSync } from 'node:child_process';
import { chmodSync, mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Command, CommanderError } from 'commander';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { registerKeysCommands } from '../../src/cli/commands/keys.ts';
import { CliError, ExitCode } from '../../src/cli/exit-codes.ts';
import { createSignatureRegistry } from '../../src/crypto/index.ts';

const root = fileURLToPath(new URL('../../', import.meta.url));
let dir: string;

/** Runs `guardian <args>` with only the keys commands registered; same exit-code mapping as src/cli/main.ts. */
async function guardian(...args: string[]): Promise<{ code: number; out: string; err: string }> {
  const program = new Command('guardian')
    .exitOverride()
    .configureOutput({ writeErr: (s) => void (err += s), writeOut: (s) => void (out += s) });
  registerKeysCommands(program);
  let out = '';
  let err = '';
  const stdout = process.stdout.write.bind(process.stdout);
  const stderr = process.stderr.write.bind(process.stderr);
  process.stdout.write = ((chunk: string | Uint8Array) => (
    (out += String(chunk)), true
  )) as typeof process.stdout.write;
  process.stderr.write = ((chunk: string | Uint8Array) => (
    (err += String(chunk)), true
  )) as typeof process.stderr.write;
  const saved = process.env.GUARDIAN_KEY_DIR;
  delete process.env.GUARDIAN_KEY_DIR;
  try {
    await program.parseAsync(['node', 'guardian', ...args]);
    return { code: ExitCode.Ok, out, err };
  } catch (e) {
    if (e instanceof CommanderError) return { code: e.exitCode === 0 ? ExitCode.Ok : ExitCode.Usage, out, err };
    if (e instanceof CliError) return { code: e.exitCode, out, err: err + `guardian: ${e.message}\n` };
    throw e;
  } finally {
    process.stdout.write = stdout;
    process.stderr.write = stderr;
    if (saved !== undefined) process.env.GUARDIAN_KEY_DIR = saved;
  }
}

beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'acs-keys-cli-'));
});
afterAll(() => {
  rmSync(dir, { recursive: true, force: true });
});

describe('guardian keys', () => {
  it('generate writes a 0600 private file and a public file, prints paths and fingerprint but no secret', async () => {
    const keys = join(dir, 'keys');
    const r = await guardian(
      'keys',
      'generate',
      '--algorithm',
      'ML-DSA-65+ECDSA-P256',
      '--out',
      keys,
      '--key-id',
      'hybrid-1',
      '--json',
    );
    expect(r.err).toBe('');
    expect(r.code).toBe(0);
    const summary = JSON.parse(r.out);
    expect(summary).toMatchObject({ key_id: 'hybrid-1', algorithm: 'ML-DSA-65+ECDSA-P256' });
    expect(summary.fingerprint).toMatch(/^[0-9a-f]{32}$/);
    expect(statSync(summary.private_key_file).mode & 0o777).toBe(0o600);
    const priv = JSON.parse(readFileSync(summary.private_key_file, 'utf8'));
    expect(r.out).not.toContain(priv.components.pqc.private_key);
    expect(r.out).not.toContain(priv.components.classical.private_key);
    expect(JSON.parse(readFileSync(summary.public_key_file, 'utf8')).components.pqc.private_key).toBeUndefined();
  });

  it('generated keys sign and verify through the registry; list shows them; retire rotates', async () => {
    const keys = join(dir, 'rotation');
    expect(
      (await guardian('keys', 'generate', '--algorithm', 'ML-DSA-65', '--out', keys, '--key-id', 'old')).code,
    ).toBe(0);
    const hmac = await guardian('keys', 'generate', '--algorithm', 'HMAC-SHA256', '--out', keys, '--key-id', 'mac');
    expect(hmac.code).toBe(0);
    expect(hmac.out).toContain('fingerprint: secret');
    const ikm = JSON.parse(readFileSync(join(keys, 'mac.key.json'), 'utf8')).ikm;
    expect(hmac.out).not.toContain(ikm);

    const before = createSignatureRegistry({ dir: keys, workerPool: false });
    const oldSig = await before.sign('ML-DSA-65', 'payload', { sessionId: 's' });
    expect(oldSig.key_id).toBe('old');

    expect(
      (await guardian('keys', 'generate', '--algorithm', 'ML-DSA-65', '--out', keys, '--key-id', 'new')).code,
    ).toBe(0);
    const retired = await guardian('keys', 'retire', 'old', '--dir', keys);
    expect(retired.code).toBe(0);
    expect(retired.out).toContain('retired old');

    const list = await guardian('keys', 'list', '--dir', keys);
    expect(list.code).toBe(0);
    const rows = list.out.trim().split('\n');
    expect(rows[0]).toMatch(/^KEY ID\s+ALGORITHM\s+STATUS\s+USE/);
    expect(rows.find((l) => l.startsWith('old'))).toMatch(/ML-DSA-65\s+retired\s+verify\s/);
    expect(rows.find((l) => l.startsWith('new'))).toMatch(/ML-DSA-65\s+active\s+sign\+verify\s/);
    expect(rows.find((l) => l.startsWith('mac'))).toMatch(/HMAC-SHA256\s+active\s+sign\+verify\s.*secret$/);
    expect(list.out).not.toContain(ikm);

    const after = createSignatureRegistry({ dir: keys, workerPool: false });
    expect((await after.sign('ML-DSA-65', 'payload', { sessionId: 's' })).key_id).toBe('new');
    expect(await after.verify(oldSig, 'payload', { sessionId: 's' })).toBe(true);
  });

  it('list warns about a private key file readable by others', async () => {
    const keys = join(dir, 'loose');
    expect(
      (await guardian('keys', 'generate', '--algorithm', 'ECDSA-P256', '--out', keys, '--key-id', 'loose')).code,
    ).toBe(0);
    chmodSync(join(keys, 'loose.key.json'), 0o644);
    const list = await guardian('keys', 'list', '--dir', keys, '--json');
    expect(list.code).toBe(0);
    expect(JSON.parse(list.out).map((s: { keyId: string }) => s.keyId)).toEqual(['loose']);
    expect(list.err).toMatch(/loose\.key\.json holds secret key material and is readable by group\/others/);
  });

  it('usage errors: unknown algorithm (2), missing --out (2), no directory for list (2), existing key (1)', async () => {
    const bad = await guardian('keys', 'generate', '--algorithm', 'ECDSA-P384', '--out', join(dir, 'x'));
    expect(bad.code).toBe(2);
    expect(bad.err).toMatch(/unknown algorithm "ECDSA-P384"; one of: HMAC-SHA256/);
    expect((await guardian('keys', 'generate', '--algorithm', 'ECDSA-P256')).code).toBe(2);
    const noDir = await guardian('keys', 'list');
    expect(noDir.code).toBe(2);
    expect(noDir.err).toMatch(/--dir DIR or set GUARDIAN_KEY_DIR/);
    const keys = join(dir, 'dup');
    expect((await guardian('keys', 'generate', '--algorithm', 'ECDSA-P256', '--out', keys, '--key-id', 'k')).code).toBe(
      0,
    );
    const dup = await guardian('keys', 'generate', '--algorithm', 'ECDSA-P256', '--out', keys, '--key-id', 'k');
    expect(dup.code).toBe(1);
    expect(dup.err).toMatch(/key "k" already exists/);
    expect(
      (await guardian('keys', 'generate', '--algorithm', 'RSA-PSS-SHA256', '--out', keys, '--rsa-bits', '1024')).code,
    ).toBe(1);
  });
});

describe('bin/guardian.mjs', () => {
  it('runs `keys generate` as a real process (exit 0, key usable)', async () => {
    const keys = join(dir, 'bin');
    const run = spawnSync(
      process.execPath,
      [
        join(root, 'bin/guardian.mjs'),
        'keys',
        'generate',
        '--algorithm',
        'ECDSA-P256',
        '--out',
        keys,
        '--key-id',
        'bin-key',
      ],
      {
        cwd: root,
        encoding: 'utf8',
        timeout: 240_000,
      },
    );
    expect(run.stderr).toBe('');
    expect(run.status).toBe(0);
    expect(run.stdout).toContain('generated ECDSA-P256 key bin-key');
    const r = createSignatureRegistry({ dir: keys, workerPool: false });
    const sig = await r.sign('ECDSA-P256', 'x', { sessionId: 's' });
    expect(await r.verify(sig, 'x', { sessionId: 's' })).toBe(true);
  }, 300_000);
});
