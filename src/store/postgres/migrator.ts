// Migrations on Postgres: one connection holds an advisory lock for the whole run, so replicas starting
// together migrate once.
import { drizzle } from 'drizzle-orm/node-postgres';
import { migrate } from 'drizzle-orm/node-postgres/migrator';
import type pg from 'pg';
import { MIGRATIONS_FOLDER } from '../migrations-folder.ts';

/** Any 64-bit key shared by every Guardian process: "migrations in progress". */
const MIGRATION_LOCK_KEY = '7418550112001';

export async function migratePostgres(pool: pg.Pool, schema: string | undefined): Promise<void> {
  const client = await pool.connect();
  let failure: Error | undefined;
  try {
    if (schema) await client.query(`create schema if not exists "${schema}"`);
    await client.query(`select pg_advisory_lock(${MIGRATION_LOCK_KEY})`);
    try {
      await migrate(drizzle(client), {
        migrationsFolder: MIGRATIONS_FOLDER,
        ...(schema ? { migrationsSchema: schema } : {}),
      });
    } finally {
      await client.query(`select pg_advisory_unlock(${MIGRATION_LOCK_KEY})`).catch(() => {});
    }
  } catch (err) {
    failure = err instanceof Error ? err : new Error(String(err));
    throw err;
  } finally {
    client.release(failure);
  }
}
