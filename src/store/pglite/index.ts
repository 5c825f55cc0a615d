// PGlite driver: embedded Postgres (WASM) in this process. Single connection, so one append transaction
// at a time; group commit still batches concurrent appends into it.
import { mkdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { PGlite } from '@electric-sql/pglite';
import { drizzle } from 'drizzle-orm/pglite';
import { migrate } from 'drizzle-orm/pglite/migrator';
import type { StoreDatabase, StoreDriver } from '../drizzle-store.ts';
import { MIGRATIONS_FOLDER } from '../migrations-folder.ts';
import { seedFromPgliteTemplate } from './template.ts';

export interface PgliteDriverOptions {
  /** Data lives in `<dataDir>/pgdata`; omit for an in-memory database. */
  dataDir?: string;
  /** Seed a new `<dataDir>/pgdata` from the prebuilt template when there is a current one (default true). */
  seed?: boolean;
}

/**
 * Postgres' default shared_buffers (128MB) is sized for a server with many connections; PGlite has one, its pages
 * live in the process heap (Wasm memory that Postgres zeroes at every start) and its files are cached by the OS
 * anyway (NODEFS reads the real data directory). 16MB keeps the hot catalog and chain-head pages resident.
 */
export const PGLITE_SHARED_BUFFERS = '16MB';
const startParams = [...PGlite.defaultStartParams, '-c', `shared_buffers=${PGLITE_SHARED_BUFFERS}`];

/** A migrated in-memory database, dumped once per process; each in-memory store starts from a copy. */
let template: Promise<Blob> | undefined;

async function migratedTemplate(): Promise<Blob> {
  template ??= (async () => {
    const pg = await PGlite.create({ startParams });
    try {
      await migrate(drizzle(pg), { migrationsFolder: MIGRATIONS_FOLDER });
      return (await pg.dumpDataDir('none')) as Blob;
    } finally {
      await pg.close();
    }
  })();
  try {
    return await template;
  } catch (err) {
    template = undefined;
    throw err;
  }
}

/**
 * Whether the newest migration in the journal is already recorded, by drizzle's own rule (a migration is applied
 * when the newest recorded created_at is older than its `when`): a restart then skips reading and hashing every
 * migration file and the DDL drizzle issues before it checks.
 */
async function newestMigrationRecorded(pg: PGlite): Promise<boolean> {
  const journal = JSON.parse(await readFile(join(MIGRATIONS_FOLDER, 'meta', '_journal.json'), 'utf8')) as {
    entries: { when: number }[];
  };
  const newest = Math.max(...journal.entries.map((e) => e.when));
  try {
    const recorded = await pg.query<{ created_at: string | number }>(
      'select created_at from drizzle.__drizzle_migrations order by created_at desc limit 1',
    );
    return recorded.rows.length > 0 && Number(recorded.rows[0].created_at) >= newest;
  } catch {
    // No journal table yet: a new database.
    return false;
  }
}

export async function openPgliteDriver(options: PgliteDriverOptions = {}): Promise<StoreDriver> {
  let pg: PGlite;
  if (options.dataDir === undefined) {
    pg = await PGlite.create({ loadDataDir: await migratedTemplate(), startParams });
  } else {
    const dir = join(options.dataDir, 'pgdata');
    if (options.seed !== false) await seedFromPgliteTemplate(dir);
    await mkdir(dir, { recursive: true });
    pg = await PGlite.create({ dataDir: dir, startParams });
  }
  const db = drizzle(pg) as unknown as StoreDatabase;
  let closed = false;
  return {
    name: 'pglite',
    db,
    appendConcurrency: 1,
    transaction(work) {
      return pg.transaction((tx) =>
        work(async (sqlText, params = []) => (await tx.query<Record<string, unknown>>(sqlText, params)).rows),
      );
    },
    async migrate() {
      if (await newestMigrationRecorded(pg)) return;
      await migrate(drizzle(pg), { migrationsFolder: MIGRATIONS_FOLDER });
    },
    async close() {
      if (closed) return;
      closed = true;
      await pg.close();
    },
    async query(sqlText, params = []) {
      const result = await pg.query<Record<string, unknown>>(sqlText, params);
      return result.rows;
    },
  };
}
