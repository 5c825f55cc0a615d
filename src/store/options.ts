// What opening a store takes. Kept apart from index.ts so config.ts (flags → options) imports no store code.
import type { CheckpointPolicy } from './checkpoints.ts';
import type { StoreError } from './errors.ts';

export interface StoreOptions {
  /** Signed checkpoints of chain heads; without it no checkpoints are written. */
  checkpoints?: CheckpointPolicy;
  /** Appends per transaction at most (default 256). */
  maxBatch?: number;
  /** Retries of a transaction that hit a serialization failure or deadlock (default 8). */
  maxRetries?: number;
  /**
   * A step handed the state it started from (StepCommit.session.stateBase) stores only its change, with its entry;
   * the session row gets the whole state when the entry's seq + 1 is a multiple of this (default 32), or when the
   * step writes the row anyway. 1 writes the whole state on every step.
   */
  stateCheckpointEvery?: number;
  /** Background failures (checkpoint writes, replay-key purge); default: one line on stderr. */
  onBackgroundError?: (err: StoreError) => void;
}

export interface OpenStoreOptions extends StoreOptions {
  /** postgres://… — use Postgres (shared by every Guardian replica). */
  databaseUrl?: string;
  /** Postgres only: keep the tables in this schema (tests use one per file). */
  schema?: string;
  /** Postgres only: connection pool size (default 10). */
  poolSize?: number;
  /** Postgres only: application_name of the connections (default "acs-guardian"). */
  applicationName?: string;
  /** PGlite: data directory root; the database lives in `<dataDir>/pgdata`. */
  dataDir?: string;
  /** PGlite in memory (tests); implied when neither databaseUrl nor dataDir is given. */
  inMemory?: boolean;
  /** Skip applying migrations at open (default false: migrations are applied). */
  skipMigrations?: boolean;
}
