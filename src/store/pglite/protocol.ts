// What the main thread and the PGlite worker (worker.ts) say to each other over src/worker-thread.
import type { BoundQuery, Rows } from '../driver.ts';

export interface OpenRequest {
  /** `<dataDir>/pgdata` on disk; absent: in memory. */
  dataDir?: string;
  /** Seed a new `<dataDir>/pgdata` from the prebuilt template (template.ts). */
  seed: boolean;
  /** In memory: start from this migrated data dir (a `dumpDataDir` tarball). */
  loadDataDir?: Uint8Array;
}

export interface OpenResponse {
  /** In memory without `loadDataDir`: this database, migrated, dumped, for the next in-memory opens to start from. */
  migratedDump?: Uint8Array;
}

/**
 * How rows come back: `objects` with PGlite's own parsers (the driver's execute/query); `drizzle-objects` and
 * `drizzle-arrays` with the parsers drizzle's PGlite session uses (timestamps, dates and intervals as text, which
 * drizzle's column mappers expect), as objects or as value arrays in column order.
 */
export type RowMode = 'objects' | 'drizzle-objects' | 'drizzle-arrays';

/**
 * A statement for the worker. `prepared`: a text that never changes (templateOf), run as a named prepared
 * statement, parsed and planned once (past a bound, texts run unnamed).
 */
export interface PgliteStatement extends BoundQuery {
  prepared?: boolean;
}

export interface QueryRequest extends PgliteStatement {
  rows: RowMode;
}

/**
 * Some statements of transaction `id` (the first message begins it), run in order; `end` finishes it after them.
 * After a statement fails the rest of the message is not run (the transaction is aborted, as in Postgres), and an
 * `end: 'commit'` then rolls back.
 */
export interface TransactionRequest {
  id: number;
  statements: PgliteStatement[];
  end?: 'commit' | 'rollback';
}

/** A driver error as it crosses the thread boundary: the SQLSTATE in `code` is what the store reads. */
export interface StatementError {
  name: string;
  message: string;
  code?: string;
}

export type StatementOutcome = { rows: Rows } | { error: StatementError };

export type PgliteProtocol = {
  open: { request: OpenRequest; response: OpenResponse };
  query: { request: QueryRequest; response: Rows | unknown[][] };
  transaction: { request: TransactionRequest; response: StatementOutcome[] };
  migrate: { request: null; response: null };
  /** Shuts Postgres down cleanly (a checkpoint; nothing left to recover at the next start). */
  close: { request: null; response: null };
};
