// ACS-Crypto audit: chain checkpoints signed with ML-DSA-65 (answers stay HMAC), verified by `guardian audit
// verify` holding only the Guardian's public key — what a third-party auditor has.
import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { AcsClient, httpTransport } from '../../src/client/index.ts';
import { generateKeyFile, publicPart } from '../../src/crypto/index.ts';
import { openGuardianRuntime } from '../../src/server/app.ts';
import { startHttpServer } from '../../src/server/http.ts';
import { constantDecisionEngine } from './fixtures/decision-module.ts';

const BIN = fileURLToPath(new URL('../../bin/guardian.mjs', import.meta.url));
const IKM = Buffer.from(new Uint8Array(32).fill(5));
const root = mkdtempSync(join(tmpdir(), 'acs-checkpoint-pk-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));

function auditVerify(
  dataDir: string,
  keyArgs: string[],
): { code: number | null; reports: Record<string, unknown>[]; stderr: string } {
  // No HMAC key in the auditor's environment: only the public key file.
  const env = {
    ...process.env,
    GUARDIAN_HMAC_IKM: '',
    GUARDIAN_HMAC_IKM_FILE: '',
    GUARDIAN_KEY_DIR: '',
    DATABASE_URL: '',
  };
  const r = spawnSync(
    process.execPath,
    [BIN, 'audit', 'verify', '--all', '--json', '--data-dir', dataDir, ...keyArgs],
    { encoding: 'utf8', env, timeout: 180_000 },
  );
  const reports = r.stdout
    .split('\n')
    .filter((l) => l.startsWith('{'))
    .map((l) => JSON.parse(l) as Record<string, unknown>);
  return { code: r.status, reports, stderr: r.stderr };
}

describe('checkpoints signed with ML-DSA-65', () => {
  it('verify with only the public key; a wrong public key fails verification', async () => {
    const dataDir = join(root, 'data');
    const guardianKey = generateKeyFile('ML-DSA-65', { keyId: 'checkpoint-key' });
    const env = {
      GUARDIAN_HMAC_IKM: IKM.toString('base64'),
      GUARDIAN_KEYS: JSON.stringify([guardianKey]),
      GUARDIAN_CHECKPOINT_ALGORITHM: 'ML-DSA-65',
      GUARDIAN_CHECKPOINT_EVERY_ENTRIES: '2',
      GUARDIAN_LIFECYCLE: 'off',
    };
    const runtime = await openGuardianRuntime({
      dataDir,
      engine: await constantDecisionEngine({ decision: 'allow' }),
      env,
      onAudit: () => {},
    });
    const server = await startHttpServer(runtime.guardian, { port: 0 });
    try {
      const client = new AcsClient({ transport: httpTransport(server.url), ikm: IKM, agentId: 'agent-cp' });
      await client.hello({ methods_implemented: ['steps/sessionStart', 'steps/toolCallRequest'] });
      await client.step('steps/sessionStart', {});
      for (let i = 0; i < 3; i++) {
        const out = await client.step('steps/toolCallRequest', {
          tool: { name: 'search' },
          arguments: { q: { value: `q${i}` } },
        });
        expect(out.decision).toBe('allow');
      }
    } finally {
      await server.close();
      await runtime.close(); // closing signs the final heads
    }

    const publicDir = join(root, 'public');
    mkdirSync(publicDir);
    writeFileSync(join(publicDir, 'checkpoint-key.pub.json'), JSON.stringify(publicPart(guardianKey)));
    const good = auditVerify(dataDir, ['--key-dir', publicDir]);
    expect(good.stderr).not.toMatch(/secret|private/i);
    expect(good.code).toBe(0);
    expect(good.reports).toHaveLength(1);
    expect(good.reports[0]).toMatchObject({ ok: true, entries: 4 });
    // Every 2 entries (seq 1 and 3) — the 4th entry's head is also the one signed on close.
    expect(good.reports[0].checkpointsVerified).toBeGreaterThanOrEqual(2);
    expect(good.reports[0].checkpointsVerified).toBe(good.reports[0].checkpoints);

    const otherDir = join(root, 'other');
    mkdirSync(otherDir);
    const impostor = publicPart(generateKeyFile('ML-DSA-65', { keyId: 'checkpoint-key' }));
    writeFileSync(join(otherDir, 'checkpoint-key.pub.json'), JSON.stringify(impostor));
    const bad = auditVerify(dataDir, ['--key-dir', otherDir]);
    expect(bad.code).toBe(1);
    expect(bad.reports[0]).toMatchObject({ ok: false });

    // The same with one public key file, and a secret key file refused for an auditor.
    const byFile = auditVerify(dataDir, ['--public-key', join(publicDir, 'checkpoint-key.pub.json')]);
    expect(byFile.code).toBe(0);
    expect(byFile.reports[0].checkpointsVerified).toBe(good.reports[0].checkpointsVerified);
    const secretFile = join(root, 'checkpoint-key.key.json');
    writeFileSync(secretFile, JSON.stringify(guardianKey));
    const refused = auditVerify(dataDir, ['--public-key', secretFile]);
    expect(refused.code).toBe(2);
    expect(refused.stderr).toMatch(/secret key material/);
    // A fresh PGlite data directory and four CLI processes, each opening it: minutes on a loaded 2-core machine.
  }, 240_000);

  it('an unknown checkpoint algorithm, a missing key or a bad interval refuses to start', async () => {
    const env = { GUARDIAN_HMAC_IKM: IKM.toString('base64'), GUARDIAN_LIFECYCLE: 'off' };
    await expect(
      openGuardianRuntime({ dataDir: join(root, 'x'), env: { ...env, GUARDIAN_CHECKPOINT_ALGORITHM: 'ML-DSA-99' } }),
    ).rejects.toThrow(/GUARDIAN_CHECKPOINT_ALGORITHM/);
    await expect(
      openGuardianRuntime({ dataDir: join(root, 'y'), env: { ...env, GUARDIAN_CHECKPOINT_ALGORITHM: 'ML-DSA-65' } }),
    ).rejects.toThrow(/ML-DSA-65/);
    await expect(
      openGuardianRuntime({ dataDir: join(root, 'z'), env: { ...env, GUARDIAN_CHECKPOINT_EVERY_ENTRIES: '0' } }),
    ).rejects.toThrow(/GUARDIAN_CHECKPOINT_EVERY_ENTRIES/);
  });
});
