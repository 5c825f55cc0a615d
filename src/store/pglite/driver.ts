// PGlite driver: embedded Postgres (WASM) in this process. Single connection, so one append transaction
// at a time; group commit still batches concurrent appends into it.
import { mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import { PGlite } from '@electric-sql/pglite';
import { drizzle } from 'drizzle-orm/pglite';
import { type StoreDatabase, type StoreDriver, renderQuery } from '../driver.ts';
import { migratePglite } from './migrator.ts';
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
 * anyway (NODEFS reads the real data directory).
 */
export const PGLITE_SHARED_BUFFERS = '16MB';
const startParams = [...PGlite.defaultStartParams, '-c', `shared_buffers=${PGLITE_SHARED_BUFFERS}`];

/** A migrated in-memory database, dumped once per process; each in-memory store starts from a copy. */
let template: Promise<Blob> | undefined;

async function migratedTemplate(): Promise<Blob> {
  template ??= (async () => {
    const pg = await PGlite.create({ startParams });
    try {
      await migratePglite(pg, { force: true });
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
  const run = async (sqlText: string, params: unknown[] = []) =>
    (await pg.query<Record<string, unknown>>(sqlText, params)).rows;
  let closed = false;
  return {
    name: 'pglite',
    db,
    appendConcurrency: 1,
    transaction(work) {
      return pg.transaction((tx) =>
        work(async (statement) => {
          const { text, params } = renderQuery(statement);
          return (await tx.query<Record<string, unknown>>(text, params)).rows;
        }),
      );
    },
    execute(statement) {
      const { text, params } = renderQuery(statement);
      return run(text, params);
    },
    migrate: () => migratePglite(pg),
    async close() {
      if (closed) return;
      closed = true;
      await pg.close();
    },
    query: run,
  };
}
