// Where the store lives, from CLI flags and the environment (README "Configuration"):
// DATABASE_URL → Postgres; else PGlite under --data-dir (default `.guardian/`).
import type { OpenStoreOptions } from './options.ts';

export interface StoreLocationFlags {
  dataDir?: string;
  databaseUrl?: string;
  /** Postgres schema (GUARDIAN_DB_SCHEMA); default: the connection's search_path. */
  schema?: string;
}

export const DEFAULT_DATA_DIR = '.guardian';

export function storeOptionsFrom(
  flags: StoreLocationFlags,
  env: Readonly<Record<string, string | undefined>> = process.env,
): OpenStoreOptions {
  // GUARDIAN_STATE_CHECKPOINT_EVERY: steps between whole session states in the session row (StoreOptions).
  // A value that is not a positive integer is refused rather than silently replaced by the default.
  const raw = env.GUARDIAN_STATE_CHECKPOINT_EVERY;
  const every = Number(raw);
  if (raw !== undefined && raw !== '' && !(Number.isInteger(every) && every >= 1)) {
    throw new Error(`GUARDIAN_STATE_CHECKPOINT_EVERY must be a positive integer, got ${JSON.stringify(raw)}`);
  }
  const tuning = raw !== undefined && raw !== '' ? { stateCheckpointEvery: every } : {};
  const databaseUrl = flags.databaseUrl ?? (env.DATABASE_URL || undefined);
  if (databaseUrl) {
    const schema = flags.schema ?? (env.GUARDIAN_DB_SCHEMA || undefined);
    return { databaseUrl, ...(schema ? { schema } : {}), ...tuning };
  }
  return { dataDir: flags.dataDir ?? (env.GUARDIAN_DATA_DIR || DEFAULT_DATA_DIR), ...tuning };
}

/** For messages: where the store is, without credentials. */
export function describeStoreLocation(options: OpenStoreOptions): string {
  if (options.databaseUrl) {
    try {
      const u = new URL(options.databaseUrl);
      return `postgres ${u.hostname}:${u.port || 5432}${u.pathname}${options.schema ? ` schema ${options.schema}` : ''}`;
    } catch {
      return 'postgres (unparseable DATABASE_URL)';
    }
  }
  return `pglite ${options.dataDir ?? 'in memory'}`;
}
