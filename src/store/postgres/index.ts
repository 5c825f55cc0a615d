// Postgres driver (postgres.js). Several Guardian processes may share one database: appends serialise on
// chain-head row locks, migrations on an advisory lock.
import postgres from 'postgres';
import { drizzle } from 'drizzle-orm/postgres-js';
import { migrate } from 'drizzle-orm/postgres-js/migrator';
import type { StoreDatabase, StoreDriver } from '../drizzle-store.ts';
import { MIGRATIONS_FOLDER } from '../migrations-folder.ts';

export interface PostgresDriverOptions {
  databaseUrl: string;
  /** Tables live in this schema (created if missing); default: the connection's search_path (public). */
  schema?: string;
  /** Pool size for appends and queries (default 10). */
  poolSize?: number;
}

/** Any 64-bit key shared by every Guardian process: "migrations in progress". */
const MIGRATION_LOCK_KEY = 7_418_550_112_001n;

function clientOptions(options: PostgresDriverOptions, max: number): postgres.Options<Record<string, postgres.PostgresType>> {
  return {
    max,
    onnotice: () => {},
    connect_timeout: 10,
    idle_timeout: 60,
    ...(options.schema ? { connection: { search_path: options.schema } } : {}),
  };
}

export async function openPostgresDriver(options: PostgresDriverOptions): Promise<StoreDriver> {
  if (options.schema !== undefined && !/^[a-z_][a-z0-9_]{0,62}$/.test(options.schema)) {
    throw new TypeError('schema must be a lowercase SQL identifier');
  }
  // drizzle rewrites its client's json/timestamp serializers, so raw SQL gets its own client.
  const main = postgres(options.databaseUrl, clientOptions(options, options.poolSize ?? 10));
  const raw = postgres(options.databaseUrl, clientOptions(options, 2));
  const db = drizzle(main) as unknown as StoreDatabase;
  let closed = false;
  return {
    name: 'postgres',
    db,
    appendConcurrency: Math.max(1, Math.min(4, (options.poolSize ?? 10) - 2)),
    async migrate() {
      // One connection holds the advisory lock for the whole run: replicas starting together migrate once.
      const lockClient = postgres(options.databaseUrl, clientOptions(options, 1));
      try {
        if (options.schema) await lockClient.unsafe(`create schema if not exists "${options.schema}"`);
        await lockClient`select pg_advisory_lock(${MIGRATION_LOCK_KEY.toString()}::bigint)`;
        try {
          await migrate(drizzle(lockClient), {
            migrationsFolder: MIGRATIONS_FOLDER,
            ...(options.schema ? { migrationsSchema: options.schema } : {}),
          });
        } finally {
          await lockClient`select pg_advisory_unlock(${MIGRATION_LOCK_KEY.toString()}::bigint)`;
        }
      } finally {
        await lockClient.end({ timeout: 5 });
      }
    },
    async close() {
      if (closed) return;
      closed = true;
      await Promise.all([main.end({ timeout: 5 }), raw.end({ timeout: 5 })]);
    },
    async query(sqlText, params = []) {
      const rows = await raw.unsafe(sqlText, params as postgres.ParameterOrJSON<never>[]);
      return [...rows] as Record<string, unknown>[];
    },
  };
}
