// The driver seam: what src/store/pglite and src/store/postgres each provide. Everything else in src/store is
// written once over Drizzle and reaches the database only through this interface.
import { type SQL, fillPlaceholders } from 'drizzle-orm';
import { PgDialect, type PgDatabase, type PgQueryResultHKT } from 'drizzle-orm/pg-core';
import type { StopListening } from './types.ts';

export type StoreDatabase = PgDatabase<PgQueryResultHKT>;

export type Rows = Record<string, unknown>[];

/** A statement's text with its numbered placeholders, and their values in order. */
export interface BoundQuery {
  text: string;
  params: unknown[];
}

export type Statement = SQL | BoundQuery;

/**
 * One statement inside a transaction, rows as plain objects. `{ last: true }` marks the transaction's final
 * statement: a driver may send COMMIT along with it (one round trip less); nothing may follow it.
 */
export type TransactionQuery = (statement: Statement, options?: { last?: boolean }) => Promise<Rows>;

export interface StoreDriver {
  readonly name: 'pglite' | 'postgres';
  readonly db: StoreDatabase;
  /** Applies migrations/ (idempotent, safe when several processes start at once). */
  migrate(): Promise<void>;
  close(): Promise<void>;
  /**
   * Runs `work` in one transaction (commit on return, rollback on throw). Drivers own this so a lost
   * connection ends in a rejected promise and a discarded connection, never a leaked or poisoned one.
   */
  transaction<T>(work: (query: TransactionQuery) => Promise<T>): Promise<T>;
  /** One statement outside a transaction. */
  execute(statement: Statement): Promise<Rows>;
  /**
   * One statement of the hot path as a transaction of its own (no BEGIN or COMMIT around it: Postgres commits a
   * statement sent outside a transaction block when it completes), prepared once per connection and sent in one
   * write. For statements whose text never changes (templateOf).
   */
  autocommit?(statement: BoundQuery): Promise<Rows>;
  /** Raw SQL text, for `DurableStore.query` (tests and tamper drills) only. */
  query(sqlText: string, params?: unknown[]): Promise<Rows>;
  /**
   * LISTEN on `channel` on a connection of its own, calling `onNotify` for each notification and reconnecting
   * after a lost connection; absent when the driver has no other process to hear from (PGlite).
   */
  listen?(channel: string, onNotify: () => void, onError: (err: Error) => void): Promise<StopListening>;
  /** Concurrent append transactions (PGlite has one connection: 1). */
  readonly appendConcurrency: number;
  /**
   * Transactions that may stay open while their caller works outside the database (a session's turn held across
   * its step's evaluation, session-turns.ts). Absent where other processes cannot share the database (PGlite: one
   * connection serves everything, and a turn is this process's alone).
   */
  readonly heldTransactions?: number;
}

const dialect = new PgDialect();

/** The statement's text with its numbered placeholders and their values, as drizzle renders it. */
export function renderQuery(statement: Statement): BoundQuery {
  if ('text' in statement) return statement;
  const { sql, params } = dialect.sqlToQuery(statement);
  return { text: sql, params };
}

/**
 * A statement written with named `sql.placeholder`s, rendered once: each call binds values by name (drizzle
 * numbers the placeholders; a name without a value throws). For the hot paths, whose text never changes.
 */
export function templateOf<Name extends string>(statement: SQL): (values: Record<Name, unknown>) => BoundQuery {
  const { sql: text, params } = dialect.sqlToQuery(statement);
  return (values) => ({ text, params: fillPlaceholders(params, values) });
}
