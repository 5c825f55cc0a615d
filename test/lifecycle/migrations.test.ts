// The lifecycle tables come from the store's migrations (migrations/0001_lifecycle.sql), on PGlite and Postgres:
// a fresh database gets them when the store opens, and a database that already has them from the lifecycle's
// former ad-hoc DDL (0000 applied, tables created by the lifecycle itself) migrates without error and keeps its rows.
import { cpSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PGlite } from '@electric-sql/pglite';
import { drizzle as drizzlePglite } from 'drizzle-orm/pglite';
import { migrate as migratePglite } from 'drizzle-orm/pglite/migrator';
import { drizzle as drizzlePg } from 'drizzle-orm/node-postgres';
import { migrate as migratePg } from 'drizzle-orm/node-postgres/migrator';
import pg from 'pg';
import { afterAll, describe, expect, it } from 'vitest';
import { LifecycleNode, shadowReport } from '../../src/lifecycle/index.ts';
import { openStore } from '../../src/store/index.ts';
import { MIGRATIONS_FOLDER } from '../../src/store/migrations-folder.ts';
import type { DurableStore } from '../../src/store/types.ts';
import { constantBundle, policyInput } from './fixtures.ts';

const PG_URL = process.env.TEST_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test';
const LIFECYCLE_TABLES = ['lifecycle_audit', 'lifecycle_replicas', 'lifecycle_shadow', 'lifecycle_shadow_diffs'];

/** The DDL the lifecycle ran itself before the tables had a migration (src/lifecycle/registry.ts, until this change). */
const FORMER_AD_HOC_DDL = [
  `CREATE TABLE IF NOT EXISTS lifecycle_replicas (
     replica_id text PRIMARY KEY, hostname text, started_at timestamptz NOT NULL DEFAULT now(),
     revision text, bundle_sha256 text, shadow_revision text, last_sync timestamptz, last_error text,
     heartbeat_at timestamptz NOT NULL DEFAULT now(), status jsonb)`,
  `CREATE TABLE IF NOT EXISTS lifecycle_shadow (
     id int PRIMARY KEY CHECK (id = 1), bundle_sha256 text, set_by text, set_at timestamptz NOT NULL DEFAULT now())`,
  `CREATE TABLE IF NOT EXISTS lifecycle_shadow_diffs (
     id bigserial PRIMARY KEY, replica_id text NOT NULL, method text NOT NULL, enforcing_revision text NOT NULL,
     shadow_revision text NOT NULL, shadow_sha256 text NOT NULL, enforcing jsonb, shadow jsonb, shadow_error text,
     at timestamptz NOT NULL DEFAULT now())`,
  `CREATE TABLE IF NOT EXISTS lifecycle_audit (
     id bigserial PRIMARY KEY, actor text NOT NULL, action text NOT NULL, target text, outcome text NOT NULL,
     detail text, at timestamptz NOT NULL DEFAULT now())`,
  `INSERT INTO lifecycle_audit (actor, action, target, outcome) VALUES ('legacy', 'activate', 'old', 'ok')`,
];

const tmpDirs: string[] = [];
afterAll(() => {
  for (const d of tmpDirs) rmSync(d, { recursive: true, force: true });
});

/** A copy of migrations/ holding only 0000_init: the schema as it was before the lifecycle migration. */
function initOnlyMigrations(): string {
  const dir = mkdtempSync(join(tmpdir(), 'lifecycle-mig-'));
  tmpDirs.push(dir);
  cpSync(MIGRATIONS_FOLDER, dir, { recursive: true });
  const journalPath = join(dir, 'meta', '_journal.json');
  const journal = JSON.parse(readFileSync(journalPath, 'utf8')) as { entries: { tag: string }[] };
  journal.entries = journal.entries.filter((e) => e.tag === '0000_init');
  writeFileSync(journalPath, JSON.stringify(journal));
  return dir;
}

async function tableNames(store: DurableStore): Promise<string[]> {
  const rows = await store.query(
    `SELECT table_name FROM information_schema.tables WHERE table_schema = current_schema() AND table_name LIKE 'lifecycle_%' ORDER BY 1`,
  );
  return rows.map((r) => String(r.table_name));
}

/** Push, activate, shadow, one difference, report: every lifecycle table is written and read back. */
async function exerciseLifecycle(store: DurableStore): Promise<void> {
  const node = new LifecycleNode({
    store,
    replicaId: 'mig',
    pollIntervalMs: 60_000,
    initialBundle: { bytes: await constantBundle('mig-1'), source: 'test' },
  });
  await node.start();
  try {
    const candidate = await constantBundle('mig-2', { decision: { decision: 'deny', reasoning: 'candidate' } });
    await node.push(candidate, { source: 'test', by: 'ops' });
    await node.setShadow('mig-2', 'ops');
    await node.engine.evaluate(policyInput());
    await new Promise((r) => setTimeout(r, 50));
    await node.flushShadow();
    const report = await shadowReport(store);
    expect(report.differences).toBe(1);
    expect(report.byMethod).toEqual([
      { method: 'steps/toolCallRequest', enforcing: 'allow', shadow: 'deny', count: 1 },
    ]);
    await node.heartbeat();
    expect((await node.replicas()).map((r) => [r.replicaId, r.revision])).toEqual([['mig', 'mig-1']]);
    const audit = await node.registry.auditLog();
    expect(audit.map((a) => a.action)).toContain('shadow');
  } finally {
    await node.stop();
  }
}

/** The tables are there, the rows written before the migration (if any) are kept, and the lifecycle works on them. */
async function expectMigratedAndWorking(store: DurableStore, legacyAuditActors: string[]): Promise<void> {
  try {
    expect(await tableNames(store)).toEqual(LIFECYCLE_TABLES);
    expect((await store.query('SELECT actor FROM lifecycle_audit')).map((r) => r.actor)).toEqual(legacyAuditActors);
    await exerciseLifecycle(store);
  } finally {
    await store.close();
  }
}

describe('lifecycle tables through migrations: PGlite', () => {
  it('a fresh store has them as soon as it opens, and the lifecycle works on them', { timeout: 240_000 }, async () => {
    await expectMigratedAndWorking(await openStore({ inMemory: true }), []);
  });

  it('a database whose tables came from the former ad-hoc DDL migrates and keeps its rows', {
    timeout: 240_000,
  }, async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'lifecycle-pglite-'));
    tmpDirs.push(dataDir);
    const legacy = await PGlite.create({ dataDir: join(dataDir, 'pgdata') });
    await migratePglite(drizzlePglite(legacy), { migrationsFolder: initOnlyMigrations() });
    for (const ddl of FORMER_AD_HOC_DDL) await legacy.query(ddl);
    await legacy.close();

    await expectMigratedAndWorking(await openStore({ dataDir }), ['legacy']);
  });
});

describe('lifecycle tables through migrations: Postgres', () => {
  const schemas: string[] = [];
  afterAll(async () => {
    const client = new pg.Client({ connectionString: PG_URL });
    await client.connect();
    for (const s of schemas) await client.query(`DROP SCHEMA IF EXISTS "${s}" CASCADE`);
    await client.end();
  });

  it('a fresh store has them as soon as it opens, and the lifecycle works on them', { timeout: 240_000 }, async () => {
    const schema = `lifecycle_mig_fresh_${process.pid}`;
    schemas.push(schema);
    await expectMigratedAndWorking(await openStore({ databaseUrl: PG_URL, schema, poolSize: 2 }), []);
  });

  it('a database whose tables came from the former ad-hoc DDL migrates and keeps its rows', {
    timeout: 240_000,
  }, async () => {
    const schema = `lifecycle_mig_legacy_${process.pid}`;
    schemas.push(schema);
    const client = new pg.Client({ connectionString: PG_URL, options: `-c search_path=${schema}` });
    await client.connect();
    try {
      await client.query(`CREATE SCHEMA IF NOT EXISTS "${schema}"`);
      await migratePg(drizzlePg(client), { migrationsFolder: initOnlyMigrations(), migrationsSchema: schema });
      for (const ddl of FORMER_AD_HOC_DDL) await client.query(ddl);
    } finally {
      await client.end();
    }

    const store = await openStore({ databaseUrl: PG_URL, schema, poolSize: 2 });
    const applied = await store.query(`SELECT count(*)::int AS n FROM "${schema}".__drizzle_migrations`);
    const journal = JSON.parse(readFileSync(join(MIGRATIONS_FOLDER, 'meta', '_journal.json'), 'utf8')) as {
      entries: unknown[];
    };
    expect(Number(applied[0].n)).toBe(journal.entries.length);
    await expectMigratedAndWorking(store, ['legacy']);
  });
});
