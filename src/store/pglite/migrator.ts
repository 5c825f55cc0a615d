// Migrations on PGlite: drizzle's migrator, skipped when the newest migration is already recorded.
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { PGlite } from '@electric-sql/pglite';
import { MIGRATIONS_FOLDER } from '../migrations-folder.ts';

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

export async function migratePglite(pg: PGlite, options: { force?: boolean } = {}): Promise<void> {
  if (!options.force && (await newestMigrationRecorded(pg))) return;
  // Imported here: a restart (newest migration recorded) does not load drizzle's modules on the worker's way up.
  const [{ drizzle }, { migrate }] = await Promise.all([
    import('drizzle-orm/pglite'),
    import('drizzle-orm/pglite/migrator'),
  ]);
  await migrate(drizzle(pg), { migrationsFolder: MIGRATIONS_FOLDER });
}
