// Storage entry point: `openStore()` picks the driver (Postgres when a URL is given, else embedded PGlite),
// applies migrations and returns the one Drizzle implementation of the store interfaces.
import { DrizzleGuardianStore } from './drizzle-store.ts';
import type { OpenStoreOptions } from './options.ts';
import type { DurableStore } from './types.ts';

export async function openStore(options: OpenStoreOptions = {}): Promise<DurableStore> {
  // Each driver is loaded only when used: a PGlite server does not load the Postgres client, nor the reverse.
  const driver = options.databaseUrl
    ? await (await import('./postgres/index.ts')).openPostgresDriver({
        databaseUrl: options.databaseUrl,
        schema: options.schema,
        poolSize: options.poolSize,
        applicationName: options.applicationName,
      })
    : await (await import('./pglite/index.ts')).openPgliteDriver({
        dataDir: options.inMemory ? undefined : options.dataDir,
      });
  const store = new DrizzleGuardianStore(driver, options);
  if (!options.skipMigrations) {
    try {
      await store.migrate();
    } catch (err) {
      await driver.close().catch(() => {});
      throw err;
    }
  }
  return store;
}

export { StoreError, type StoreErrorCode } from './errors.ts';
export {
  checkpointSigningInput,
  signCheckpoint,
  verifyCheckpoint,
  type CheckpointPolicy,
  type CheckpointClaim,
} from './checkpoints.ts';
export type { OpenStoreOptions, StoreOptions } from './options.ts';
export { REPLICA_CHANNEL } from './fleet.ts';
export { storeOptionsFrom, describeStoreLocation, DEFAULT_DATA_DIR, type StoreLocationFlags } from './config.ts';
export type * from './types.ts';
