// A recorded session's AgBOM read back the ways an operator reads it: `guardian agbom export` in all four formats
// and `guardian agbom diff` (the CLI in process, on a real Postgres), the admin routes over real HTTP, and a stored
// version edited behind the Guardian's back caught by `guardian audit verify`.
import { serve, type ServerType } from '@hono/node-server';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createAgbomRoutes } from '../../src/agbom/http.ts';
import { listAgbomVersions } from '../../src/agbom/versions.ts';
import { sharedValidator } from '../../src/acs/validation/index.ts';
import { verifyChain } from '../../src/audit/index.ts';
import { canonicalJson, sha256Hex } from '../../src/chain/index.ts';
import type { AcsClient } from '../../src/client/index.ts';
import { main } from '../../src/cli/main.ts';
import { ExitCode } from '../../src/cli/exit-codes.ts';
import { openStore } from '../../src/store/index.ts';
import { startHarness, type Harness } from '../acs/fixtures/harness.ts';
import { dropSchema, TEST_DATABASE_URL, uniqueSchema } from '../store/postgres-schema.ts';
import { expectCycloneDxValid } from './cyclonedx-schema.ts';
import { expectSpdxValid } from './spdx-schema.ts';
import { expectSwidValid } from './swid-schema.ts';
import { DB_MCP, INSPECT_PROFILES, inspectSession, libraryEngine, MEMORY, REALISTIC_COMPONENTS } from './fixtures.ts';

const TIMEOUT = 180_000;
const schema = uniqueSchema('agbom_export');
let h: Harness;
let c: AcsClient;
/** Chain seqs of the session's agbom/* entries. */
const seq = { snapshot: -1, added: -1, removed: -1 };
let http: ServerType;
let base: string;

async function cli(args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  let stdout = '';
  let stderr = '';
  const write = { out: process.stdout.write, err: process.stderr.write };
  process.stdout.write = ((chunk: string | Uint8Array) => ((stdout += String(chunk)), true)) as typeof write.out;
  process.stderr.write = ((chunk: string | Uint8Array) => ((stderr += String(chunk)), true)) as typeof write.err;
  const exitCode = process.exitCode;
  process.exitCode = undefined;
  try {
    const code = await main(['node', 'guardian', ...args, '--database-url', TEST_DATABASE_URL, '--schema', schema]);
    return { code, stdout, stderr };
  } finally {
    process.stdout.write = write.out;
    process.stderr.write = write.err;
    process.exitCode = exitCode;
  }
}

beforeAll(async () => {
  const store = await openStore({ databaseUrl: TEST_DATABASE_URL, schema });
  h = await startHarness({
    engine: await libraryEngine({ require_snapshot: true }),
    store,
    profiles: INSPECT_PROFILES,
  });
  c = h.client();
  await inspectSession(c);
  await c.step('steps/sessionStart', {});
  const steps: [keyof typeof seq, string, Record<string, unknown>][] = [
    ['snapshot', 'agbom/snapshot', { components: REALISTIC_COMPONENTS.filter((x) => x.id !== DB_MCP.id) }],
    ['added', 'agbom/changed', { added: [DB_MCP] }],
    ['removed', 'agbom/changed', { removed: [MEMORY.id] }],
  ];
  for (const [name, method, payload] of steps) {
    const o = await c.step(method, payload);
    expect(o.decision).toBe('allow');
    seq[name] = (await h.store.getChainHead(c.sessionId))!.seq;
  }
  const app = createAgbomRoutes({ store: h.store });
  await new Promise<void>((resolve) => {
    http = serve({ fetch: app.fetch, port: 0, hostname: '127.0.0.1' }, (info) => {
      base = `http://127.0.0.1:${info.port}`;
      resolve();
    });
  });
}, TIMEOUT);
afterAll(async () => {
  await new Promise((resolve) => http?.close(resolve));
  await h?.close();
  await dropSchema(schema);
});

describe('guardian agbom export / diff', () => {
  it(
    'exports the latest AgBOM and the one at an earlier seq, in all four formats',
    async () => {
      const canonical = await cli(['agbom', 'export', '--session', c.sessionId]);
      expect(canonical).toMatchObject({ code: ExitCode.Ok, stderr: '' });
      const doc = JSON.parse(canonical.stdout) as {
        agbom: { agent_id: string; components: { id: string }[] };
        agbom_hash: string;
        metadata: { chain_seq: number };
      };
      // The canonical form: schema-valid components (agbom/component.json) in a schema-valid snapshot payload, and
      // an agbom_hash that recomputes from the document (SHA-256 of its JCS, docs/agbom.md) (and is the stored version's).
      const validator = sharedValidator();
      for (const component of doc.agbom.components) {
        const check = validator.validate('agbom/component.json', component);
        expect(check.ok ? null : check.violation).toBeNull();
      }
      const asSnapshot = validator.validate('hooks/agbom-snapshot.json', {
        agbom: doc.agbom,
        components: doc.agbom.components,
      });
      expect(asSnapshot.ok ? null : asSnapshot.violation).toBeNull();
      expect(doc.agbom_hash).toBe(sha256Hex(canonicalJson(doc.agbom)));
      const stored = await listAgbomVersions(h.store, c.sessionId);
      expect(stored.find((v) => v.seq === seq.removed)?.agbomHash).toBe(doc.agbom_hash);
      const ids = doc.agbom.components.map((x) => x.id);
      expect(ids).toContain(DB_MCP.id);
      expect(ids).not.toContain(MEMORY.id);
      expect(doc.metadata.chain_seq).toBe(seq.removed);

      const early = JSON.parse(
        (await cli(['agbom', 'export', '--session', c.sessionId, '--at', String(seq.snapshot)])).stdout,
      ) as typeof doc;
      expect(early.agbom.components.map((x) => x.id)).toContain(MEMORY.id);
      expect(early.agbom.components.map((x) => x.id)).not.toContain(DB_MCP.id);

      const cdx = await cli(['agbom', 'export', '--session', c.sessionId, '--format', 'cyclonedx-1.6']);
      expect(cdx.code).toBe(ExitCode.Ok);
      expectCycloneDxValid(JSON.parse(cdx.stdout));
      const spdx = JSON.parse(
        (await cli(['agbom', 'export', '--session', c.sessionId, '--format', 'spdx-3.0'])).stdout,
      );
      expect(spdx['@context']).toBe('https://spdx.org/rdf/3.0.1/spdx-context.jsonld');
      expectSpdxValid(spdx);
      const swid = await cli(['agbom', 'export', '--session', c.sessionId, '--format', 'swid']);
      await expectSwidValid(swid.stdout);
      expect(swid.stdout).toContain(`tagId="${DB_MCP.id}"`);
    },
    TIMEOUT,
  );

  it(
    'diffs two points of the chain, and fails in one line for a session without an AgBOM',
    async () => {
      const d = await cli([
        'agbom',
        'diff',
        '--session',
        c.sessionId,
        '--from',
        String(seq.snapshot),
        '--to',
        String(seq.removed),
      ]);
      expect(d.code).toBe(ExitCode.Ok);
      expect(d.stdout).toContain(`+ ${DB_MCP.id} (mcp_server 1.4.0)`);
      expect(d.stdout).toContain(`- ${MEMORY.id} (memory_store)`);
      const none = await cli([
        'agbom',
        'diff',
        '--session',
        c.sessionId,
        '--from',
        String(seq.added),
        '--to',
        String(seq.added),
      ]);
      expect(none.stdout).toContain('no change');
      const before = await cli(['agbom', 'export', '--session', c.sessionId, '--at', '0']);
      expect(before.code).toBe(ExitCode.Failed);
      expect(before.stderr).toMatch(/^guardian: session \S+ has no adopted AgBOM at or before seq 0\n$/);
      const help = await cli(['agbom', 'export', '--help']);
      expect(help.stdout).toContain('--format <format>');
    },
    TIMEOUT,
  );
});

describe('admin routes', () => {
  it('serve the AgBOM in each format, its versions and a diff over HTTP', async () => {
    const res = await fetch(`${base}/sessions/${c.sessionId}?format=cyclonedx-1.6&at=${seq.added}`);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toContain('application/vnd.cyclonedx+json');
    const bom = (await res.json()) as { services: { 'bom-ref': string }[] };
    expectCycloneDxValid(bom);
    expect(bom.services.map((s) => s['bom-ref'])).toContain(DB_MCP.id);
    const spdx = await fetch(`${base}/sessions/${c.sessionId}?format=spdx-3.0&at=${seq.added}`);
    expect(spdx.status).toBe(200);
    expectSpdxValid(await spdx.json());
    const swid = await fetch(`${base}/sessions/${c.sessionId}?format=swid`);
    expect(swid.status).toBe(200);
    await expectSwidValid(await swid.text());
    const versions = (await (await fetch(`${base}/sessions/${c.sessionId}/versions`)).json()) as {
      versions: { seq: number; adopted: boolean }[];
    };
    expect(versions.versions.map((v) => v.seq)).toEqual([seq.snapshot, seq.added, seq.removed]);
    const diff = (await (
      await fetch(`${base}/sessions/${c.sessionId}/diff?from=${seq.snapshot}&to=${seq.added}`)
    ).json()) as { added: { id: string }[] };
    expect(diff.added.map((x) => x.id)).toEqual([DB_MCP.id]);
    expect((await fetch(`${base}/sessions/${c.sessionId}?format=pdf`)).status).toBe(400);
    expect((await fetch(`${base}/sessions/00000000-0000-4000-8000-00000000dead`)).status).toBe(404);
  });
});

describe('tampering with a stored AgBOM', () => {
  // Each stored column an intruder with database access might edit, one at a time, restored afterwards.
  const variants: [string, keyof typeof seq, 'document_jcs' | 'diff_jcs' | 'agbom_hash', string, string][] = [
    [
      'the snapshot document (the model swapped)',
      'snapshot',
      'document_jcs',
      `replace(document_jcs, '"GPT-4o"', '"GPT-4o-mini"')`,
      'document',
    ],
    [
      'a diff (the added MCP server at another version)',
      'added',
      'diff_jcs',
      `replace(diff_jcs, '"1.4.0"', '"9.9.9"')`,
      'diff',
    ],
    ['an agbom_hash', 'removed', 'agbom_hash', `repeat('0', 64)`, 'agbom_hash'],
  ];
  it.each(variants)(
    'is detected by audit verify when %s is edited (the chain itself still verifies)',
    async (_what, at, column, edit, problem) => {
      expect((await verifyChain(h.store, c.sessionId)).ok).toBe(true);
      const where = 'where session_id = $1 and seq = $2';
      const [row] = await h.store.query(`select ${column} as value from agbom_versions ${where}`, [
        c.sessionId,
        seq[at],
      ]);
      await h.store.query(`update agbom_versions set ${column} = ${edit} ${where}`, [c.sessionId, seq[at]]);
      try {
        const [edited] = await h.store.query(`select ${column} as value from agbom_versions ${where}`, [
          c.sessionId,
          seq[at],
        ]);
        expect(edited.value).not.toBe(row.value);
        const report = await verifyChain(h.store, c.sessionId);
        expect(report.ok).toBe(false);
        expect(report.breaks).toHaveLength(1);
        expect(report.firstBreak).toMatchObject({ kind: 'agbom_mismatch', seq: seq[at] });
        expect(report.firstBreak?.message).toContain(`differs from its chain entry in ${problem}: edited`);
        const run = await cli(['audit', 'verify', '--session', c.sessionId]);
        expect(run.code).toBe(ExitCode.Failed);
        expect(run.stdout).toContain('agbom_mismatch');
      } finally {
        await h.store.query(`update agbom_versions set ${column} = $3 ${where}`, [c.sessionId, seq[at], row.value]);
      }
      expect((await verifyChain(h.store, c.sessionId)).ok).toBe(true);
    },
    TIMEOUT,
  );
});
