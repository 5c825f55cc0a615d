// `guardian audit …` / `guardian db …` as an operator runs them: a real process against a real database.
import { execFile } from 'node:child_process';
import { createHash, randomUUID } from 'node:crypto';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import canonicalize from 'canonicalize';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openStore, type DurableStore } from '../../src/store/index.ts';
import { TEST_DATABASE_URL, dropSchema, uniqueSchema } from '../store/postgres-schema.ts';
import { checkpointKey, stepEntry } from '../store/storage-suite.ts';

const guardianBin = fileURLToPath(new URL('../../bin/guardian.mjs', import.meta.url));
const schema = uniqueSchema('audit_cli');
/** The IKM of the suite's checkpoint key (32 × 0x07), as the deployment would configure it. */
const IKM = Buffer.alloc(32, 7).toString('base64');

interface Run {
  code: number;
  stdout: string;
  stderr: string;
}

function guardian(args: string[], env: Record<string, string> = {}): Promise<Run> {
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      [guardianBin, ...args],
      { env: { ...process.env, DATABASE_URL: '', GUARDIAN_HMAC_IKM: IKM, ...env }, timeout: 120_000 },
      (err, stdout, stderr) => {
        resolve({ code: err ? Number((err as { code?: number }).code ?? 1) : 0, stdout, stderr });
      },
    );
  });
}

const pgFlags = ['--database-url', TEST_DATABASE_URL, '--schema', schema];
let store: DurableStore;

async function chainOf(n: number): Promise<string> {
  const sessionId = randomUUID();
  await store.createSession({
    id: sessionId,
    tenantId: null,
    agentId: 'agent-1',
    keyId: null,
    hello: null,
    intent: null,
    state: null,
    parentSessionId: null,
  });
  for (let i = 0; i < n; i++) {
    const a = await store.appendContextEntry(sessionId, stepEntry(sessionId, i));
    await store.recordDecision(sessionId, a.seq, {
      result: { type: 'final', decision: i % 2 ? 'deny' : 'allow', chain_hash: a.entryHash },
      bundleRevision: 'r1',
      evaluationDurationMs: 0.2,
    });
  }
  await store.flush();
  return sessionId;
}

beforeAll(async () => {
  store = await openStore({
    databaseUrl: TEST_DATABASE_URL,
    schema,
    checkpoints: { signer: checkpointKey, keyId: 'ckpt-1', everyEntries: 4, everyMs: 0 },
  });
});
afterAll(async () => {
  await store?.close();
  await dropSchema(schema);
});

// Each CLI run starts a tsx process (seconds on a loaded machine): few runs, generous timeouts.
const SLOW = 600_000;

describe('guardian audit verify', () => {
  it(
    'exits 1 naming the first break per session, and verifies intact chains with their checkpoints',
    async () => {
      const intact = await chainOf(10);
      const broken = await chainOf(10);
      await store.query('delete from context_entries where session_id = $1 and seq = 6', [broken]);

      const all = await guardian(['audit', 'verify', '--all', '--json', ...pgFlags]);
      expect(all.code).toBe(1);
      const reports = all.stdout
        .trim()
        .split('\n')
        .map((l) => JSON.parse(l));
      expect(reports.find((r) => r.sessionId === intact)).toMatchObject({
        ok: true,
        entries: 10,
        checkpoints: 2,
        checkpointsVerified: 2,
      });
      expect(reports.find((r) => r.sessionId === broken)).toMatchObject({
        ok: false,
        firstBreak: { kind: 'seq_gap', seq: 6 },
      });

      const one = await guardian(['audit', 'verify', '--session', broken, ...pgFlags]);
      expect(one.code).toBe(1);
      expect(one.stdout).toContain(`${broken}: BROKEN, 6 entries`);
      expect(one.stdout).toContain('first break: seq_gap at seq 6');
    },
    SLOW,
  );

  it(
    'rejects checkpoints when verified with another key',
    async () => {
      const sessionId = await chainOf(4);
      const wrongKey = await guardian(['audit', 'verify', '--session', sessionId, ...pgFlags], {
        GUARDIAN_HMAC_IKM: Buffer.alloc(32, 9).toString('base64'),
      });
      expect(wrongKey.code).toBe(1);
      expect(wrongKey.stdout).toContain('checkpoint_signature_invalid at seq 3');
    },
    SLOW,
  );

  it(
    'uses exit 2 for bad usage and 4 for an unreachable database',
    async () => {
      expect((await guardian(['audit', 'verify', ...pgFlags])).code).toBe(2);
      const down = await guardian([
        'audit',
        'verify',
        '--all',
        '--database-url',
        'postgres://postgres@127.0.0.1:1/test',
      ]);
      expect(down.code).toBe(4);
      expect(down.stderr).toContain('cannot open the store');
      expect(down.stderr).not.toContain('    at ');
    },
    SLOW,
  );
});

describe('guardian audit export', () => {
  it(
    'writes JSONL that verifies with the ACS §8.2 hash rule alone',
    async () => {
      const sessionId = await chainOf(6);
      const dir = await mkdtemp(join(tmpdir(), 'guardian-export-'));
      try {
        const out = join(dir, 'session.jsonl');
        const run = await guardian(['audit', 'export', '--session', sessionId, '--out', out, ...pgFlags]);
        expect(run.code).toBe(0);
        const lines = (await readFile(out, 'utf8'))
          .trim()
          .split('\n')
          .map((l) => JSON.parse(l));
        expect(lines[0]).toMatchObject({ kind: 'session', session_id: sessionId, head_seq: 5 });
        const entries = lines.filter((l) => l.kind === 'context_entry');
        expect(entries).toHaveLength(6);
        // Independent check: only the canonicalize package and SHA-256, no project code.
        let previous: string | undefined;
        for (const { entry, params, decision } of entries) {
          const { entry_hash, previous_hash, ...content } = entry;
          expect(previous_hash).toBe(previous);
          const h = createHash('sha256').update(canonicalize(content)!, 'utf8');
          if (previous_hash) h.update(Buffer.from(previous_hash, 'hex'));
          expect(h.digest('hex')).toBe(entry_hash);
          expect(createHash('sha256').update(canonicalize(params)!, 'utf8').digest('hex')).toBe(entry.request_hash);
          expect(decision.result.chain_hash).toBe(entry_hash);
          previous = entry_hash;
        }
        expect(entries[0].entry).not.toHaveProperty('previous_hash');
        expect(lines.filter((l) => l.kind === 'checkpoint').map((l) => l.seq)).toEqual([3]);
      } finally {
        await rm(dir, { recursive: true, force: true });
      }
    },
    SLOW,
  );
});

describe('guardian audit prune on PGlite', () => {
  it(
    'prunes a closed session, and the pruned chain still verifies',
    async () => {
      const dir = await mkdtemp(join(tmpdir(), 'guardian-cli-'));
      try {
        const local = await openStore({
          dataDir: dir,
          checkpoints: { signer: checkpointKey, keyId: 'ckpt-1', everyMs: 0 },
        });
        const sessionId = randomUUID();
        await local.createSession({
          id: sessionId,
          tenantId: null,
          agentId: 'agent-1',
          keyId: null,
          hello: null,
          intent: null,
          state: null,
          parentSessionId: null,
        });
        for (let i = 0; i < 3; i++) await local.appendContextEntry(sessionId, stepEntry(sessionId, i));
        await local.closeSession(sessionId, new Date('2024-01-01T00:00:00Z'));
        await local.close();

        const prune = await guardian(['audit', 'prune', '--before', '2025-01-01', '--data-dir', dir]);
        expect(prune.stdout).toContain('pruned 1 sessions (3 entries)');
        expect(prune.code).toBe(0);
        const verify = await guardian(['audit', 'verify', '--session', sessionId, '--data-dir', dir]);
        expect(verify.stdout).toContain(`${sessionId}: ok (pruned), 0 entries, 1/1 checkpoints verified`);
        expect(verify.code).toBe(0);
      } finally {
        await rm(dir, { recursive: true, force: true });
      }
    },
    SLOW,
  );
});
