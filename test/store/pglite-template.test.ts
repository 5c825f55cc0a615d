// The PGlite template (src/store/pglite/template.ts), built into temp dirs with the module's own functions and
// seeded into real data directories; the store is then opened on them with the real PGlite driver.
import { createHash, randomUUID } from 'node:crypto';
import { cpSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { gunzipSync, gzipSync } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DrizzleGuardianStore } from '../../src/store/drizzle-store.ts';
import { MIGRATIONS_FOLDER } from '../../src/store/migrations-folder.ts';
import { openPgliteDriver } from '../../src/store/pglite/index.ts';
import { pgliteTemplateKey, seedFromPgliteTemplate, writePgliteTemplate } from '../../src/store/pglite/template.ts';
import { stepEntry } from './storage-suite.ts';

let root: string;
let template: string;

beforeAll(async () => {
  root = mkdtempSync(join(tmpdir(), 'guardian-template-test-'));
  const build = join(root, 'build');
  const driver = await openPgliteDriver({ dataDir: build, seed: false });
  await driver.migrate();
  await driver.close();
  template = join(root, 'template.tar.gz');
  await writePgliteTemplate(join(build, 'pgdata'), template);
}, 120_000);
afterAll(() => rmSync(root, { recursive: true, force: true }));

const freshDataDir = (): string => mkdtempSync(join(root, 'data-'));

/** Opens the store on `<dataDir>/pgdata` without the real template (as openPgliteDriver does once seeding is done). */
async function openStoreOn(dataDir: string): Promise<DrizzleGuardianStore> {
  const store = new DrizzleGuardianStore(await openPgliteDriver({ dataDir, seed: false }));
  await store.migrate();
  return store;
}

/** Every migration of migrations/ recorded by drizzle, with the hash of its SQL file, and a step accepted. */
async function expectMigratedAndWritable(dataDir: string): Promise<void> {
  const driver = await openPgliteDriver({ dataDir, seed: false });
  await driver.migrate();
  const recorded = await driver.query('select hash, created_at from drizzle.__drizzle_migrations order by id');
  await driver.close();
  const journal = JSON.parse(readFileSync(join(MIGRATIONS_FOLDER, 'meta', '_journal.json'), 'utf8')) as {
    entries: { tag: string; when: number }[];
  };
  expect(recorded.map((r) => ({ hash: r.hash, when: Number(r.created_at) }))).toEqual(
    journal.entries.map((e) => ({
      hash: createHash('sha256')
        .update(readFileSync(join(MIGRATIONS_FOLDER, `${e.tag}.sql`)))
        .digest('hex'),
      when: e.when,
    })),
  );
  const store = await openStoreOn(dataDir);
  try {
    const sessionId = randomUUID();
    await store.createSession({
      id: sessionId,
      tenantId: null,
      agentId: 'agent-1',
      keyId: null,
      hello: {},
      intent: null,
      state: null,
      parentSessionId: null,
    });
    const appended = await store.appendContextEntry(sessionId, stepEntry(sessionId, 0));
    expect(appended.seq).toBe(0);
    expect((await store.getChainHead(sessionId))?.entryHash).toBe(appended.entryHash);
    expect(await store.getSession(sessionId)).toMatchObject({ agentId: 'agent-1' });
  } finally {
    await store.close();
  }
}

/** The template archive with its key entry's data rewritten (same length, so the tar stays well formed). */
function withKeyEntry(edit: (json: string) => string): Buffer {
  const tar = gunzipSync(readFileSync(template));
  const size = Number.parseInt(tar.subarray(124, 136).toString('utf8').replace(/\0.*$/, '').trim(), 8);
  const json = tar.subarray(512, 512 + size).toString('utf8');
  const edited = Buffer.from(edit(json));
  expect(edited.length).toBe(size);
  edited.copy(tar, 512);
  return gzipSync(tar);
}

describe('PGlite template', () => {
  it('seeds a fresh data dir with the template pgdata, fully migrated and writable', async () => {
    const dataDir = freshDataDir();
    expect(await seedFromPgliteTemplate(join(dataDir, 'pgdata'), template)).toBe(true);
    // Byte for byte the data directory the template was built from.
    const built = join(root, 'build', 'pgdata');
    for (const name of ['PG_VERSION', 'global/pg_control'])
      expect(readFileSync(join(dataDir, 'pgdata', name)).equals(readFileSync(join(built, name)))).toBe(true);
    expect(readdirSync(dataDir)).toEqual(['pgdata']);
    await expectMigratedAndWritable(dataDir);
  }, 120_000);

  it('ignores a template built from other migrations, and the store is initialised by initdb', async () => {
    // A migrations folder with one more migration, applied, then packed with that folder's key.
    const otherMigrations = join(root, 'other-migrations');
    cpSync(MIGRATIONS_FOLDER, otherMigrations, { recursive: true });
    const journalPath = join(otherMigrations, 'meta', '_journal.json');
    const journal = JSON.parse(readFileSync(journalPath, 'utf8')) as { entries: Record<string, unknown>[] };
    journal.entries.push({
      idx: journal.entries.length,
      version: '7',
      when: 4102444800000,
      tag: '9999_stale',
      breakpoints: true,
    });
    writeFileSync(journalPath, JSON.stringify(journal));
    writeFileSync(join(otherMigrations, '9999_stale.sql'), 'CREATE TABLE stale_marker (id integer);');
    expect(pgliteTemplateKey(otherMigrations)).not.toBe(pgliteTemplateKey());
    const { PGlite } = await import('@electric-sql/pglite');
    const { drizzle } = await import('drizzle-orm/pglite');
    const { migrate } = await import('drizzle-orm/pglite/migrator');
    const staleData = join(root, 'stale-build', 'pgdata');
    mkdirSync(staleData, { recursive: true });
    const pg = await PGlite.create({ dataDir: staleData });
    await migrate(drizzle(pg), { migrationsFolder: otherMigrations });
    await pg.close();
    const stale = join(root, 'stale.tar.gz');
    await writePgliteTemplate(staleData, stale, otherMigrations);

    const dataDir = freshDataDir();
    expect(await seedFromPgliteTemplate(join(dataDir, 'pgdata'), stale)).toBe(false);
    expect(existsSync(join(dataDir, 'pgdata'))).toBe(false);
    await expectMigratedAndWritable(dataDir);
    const driver = await openPgliteDriver({ dataDir, seed: false });
    expect(await driver.query("select to_regclass('stale_marker') as t")).toEqual([{ t: null }]);
    await driver.close();
  }, 120_000);

  it('ignores a template whose key entry was tampered with', async () => {
    const tampered = join(root, 'tampered.tar.gz');
    const key = pgliteTemplateKey();
    writeFileSync(
      tampered,
      withKeyEntry((json) =>
        json.replace(
          key,
          key.replace(/^./, (c) => (c === '0' ? '1' : '0')),
        ),
      ),
    );
    const dataDir = freshDataDir();
    expect(await seedFromPgliteTemplate(join(dataDir, 'pgdata'), tampered)).toBe(false);
    expect(existsSync(join(dataDir, 'pgdata'))).toBe(false);
    await expectMigratedAndWritable(dataDir);
  }, 120_000);

  it('ignores an unreadable or corrupt archive without failing, and the store still opens', async () => {
    const whole = readFileSync(template);
    const corrupt: Record<string, (path: string) => void> = {
      truncated: (p) => writeFileSync(p, whole.subarray(0, Math.floor(whole.length / 2))),
      'not gzip': (p) => writeFileSync(p, Buffer.from('this is not a template')),
      'gzip of something not a tar': (p) => writeFileSync(p, gzipSync(Buffer.alloc(4096, 0x41))),
      'key entry not JSON': (p) =>
        writeFileSync(
          p,
          withKeyEntry((json) => `!${json.slice(1)}`),
        ),
      'unreadable (a directory)': (p) => mkdirSync(p),
    };
    for (const [what, make] of Object.entries(corrupt)) {
      const path = join(root, `corrupt-${randomUUID()}.tar.gz`);
      make(path);
      const dataDir = freshDataDir();
      expect(await seedFromPgliteTemplate(join(dataDir, 'pgdata'), path), what).toBe(false);
      expect(readdirSync(dataDir), what).toEqual([]);
    }
    const dataDir = freshDataDir();
    await expectMigratedAndWritable(dataDir);
  }, 120_000);

  it('never overwrites an existing data dir', async () => {
    const dataDir = freshDataDir();
    const store = await openStoreOn(dataDir);
    const sessionId = randomUUID();
    await store.appendContextEntry(sessionId, stepEntry(sessionId, 0));
    await store.close();
    const before = readFileSync(join(dataDir, 'pgdata', 'global', 'pg_control'));
    expect(await seedFromPgliteTemplate(join(dataDir, 'pgdata'), template)).toBe(false);
    expect(readFileSync(join(dataDir, 'pgdata', 'global', 'pg_control')).equals(before)).toBe(true);
    const reopened = await openStoreOn(dataDir);
    expect((await reopened.getChainHead(sessionId))?.seq).toBe(0);
    await reopened.close();
  }, 120_000);

  it('cleans up a staging directory left by an interrupted seeding and seeds', async () => {
    const dataDir = freshDataDir();
    const leftover = join(dataDir, `.pgdata-seed-${randomUUID()}`);
    mkdirSync(join(leftover, 'base'), { recursive: true });
    writeFileSync(join(leftover, 'PG_VERSION'), 'half');
    expect(await seedFromPgliteTemplate(join(dataDir, 'pgdata'), template)).toBe(true);
    expect(readdirSync(dataDir)).toEqual(['pgdata']);
    await expectMigratedAndWritable(dataDir);
  }, 120_000);
});
