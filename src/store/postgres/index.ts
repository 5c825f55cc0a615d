// Postgres driver (node-postgres). Several Guardian processes may share one database: appends serialise
// on chain-head row locks, migrations on an advisory lock.
//
// Not postgres.js: in 3.4.9 a backend that dies inside a transaction makes its ROLLBACK write to a null
// socket from a setImmediate, an uncatchable TypeError that takes the process down
// (porsager/postgres#1208). A Guardian must turn a lost database into errors, never into a crash.
import pg from 'pg';
import { drizzle } from 'drizzle-orm/node-postgres';
import { migrate } from 'drizzle-orm/node-postgres/migrator';
import type { StoreDatabase, StoreDriver } from '../drizzle-store.ts';
import { MIGRATIONS_FOLDER } from '../migrations-folder.ts';

export interface PostgresDriverOptions {
  databaseUrl: string;
  /** Tables live in this schema (created if missing); default: the connection's search_path (public). */
  schema?: string;
  /** Pool size for appends and queries (default 10). */
  poolSize?: number;
  /** application_name of the connections (default "acs-guardian"): tells replicas apart in pg_stat_activity. */
  applicationName?: string;
}

/** Any 64-bit key shared by every Guardian process: "migrations in progress". */
const MIGRATION_LOCK_KEY = '7418550112001';

/**
 * Transaction statements run as named prepared statements: each connection parses and plans one once, instead of
 * for every batch (about half of Postgres' CPU per append, bench/store.ts "pg cpu"). Names are per statement text,
 * the same on every connection; the store's transactions use a fixed handful of texts, and past the bound a text
 * simply runs unnamed.
 */
const statementNames = new Map<string, string>();
const MAX_NAMED_STATEMENTS = 64;
function statementName(text: string): string | undefined {
  let name = statementNames.get(text);
  if (name === undefined && statementNames.size < MAX_NAMED_STATEMENTS)
    statementNames.set(text, (name = `guardian_${statementNames.size}`));
  return name;
}

/** The connection's socket, to cork a transaction's pipelined messages into one write (none: plain writes). */
function socketOf(client: pg.PoolClient): { cork(): void; uncork(): void } | null {
  const stream = (client as unknown as { connection?: { stream?: { cork?: unknown; uncork?: unknown } } }).connection
    ?.stream;
  return stream && typeof stream.cork === 'function' && typeof stream.uncork === 'function'
    ? (stream as { cork(): void; uncork(): void })
    : null;
}

export async function openPostgresDriver(options: PostgresDriverOptions): Promise<StoreDriver> {
  if (options.schema !== undefined && !/^[a-z_][a-z0-9_]{0,62}$/.test(options.schema)) {
    throw new TypeError('schema must be a lowercase SQL identifier');
  }
  const pool = new pg.Pool({
    // Queries sent without waiting for the previous answer (pg 8.23's pipeline option, not in @types/pg yet): see transaction().
    ...({ pipeline: true } as pg.PoolConfig),
    connectionString: options.databaseUrl,
    max: options.poolSize ?? 10,
    connectionTimeoutMillis: 10_000,
    idleTimeoutMillis: 60_000,
    // A black-holed connection (no RST) must fail the request instead of hanging it.
    query_timeout: 30_000,
    keepAlive: true,
    application_name: options.applicationName ?? 'acs-guardian',
    ...(options.schema ? { options: `-c search_path=${options.schema}` } : {}),
  });
  // A connection that dies reports to the query using it; these listeners only keep the 'error' events of
  // idle or checked-out clients from becoming uncaught exceptions (pg-pool detaches its own on checkout).
  pool.on('error', () => {});
  pool.on('connect', (client) => client.on('error', () => {}));
  const db = drizzle(pool) as unknown as StoreDatabase;
  let closed = false;

  return {
    name: 'postgres',
    db,
    // Group-commit transactions in flight at once: one. A step batch is one round trip, and while it commits the
    // next batch gathers on the event loop; a second transaction in flight only halves the batches, and Postgres'
    // CPU per step is mostly per transaction. bench/server.ts external phase, 64 sessions and clients, alternating
    // (load 1.4-2.4): 2196-2324 decisions/s with one, 2005-2150 with two; postgres processes 0.124-0.134 ms of
    // CPU per decision against 0.149-0.167.
    appendConcurrency: 1,
    async transaction(work) {
      const client = await pool.connect();
      const socket = socketOf(client);
      let failure: unknown;
      let begun = false;
      let ended = false;
      try {
        // Pipelined (the pool's connections run in pipeline mode): BEGIN goes out with the first statement and
        // COMMIT with the one marked last. What `work` sends before its first await leaves in one socket write: a
        // step batch's two statements and COMMIT are one write and one round trip. Each message keeps its own
        // Sync: a failed statement leaves the transaction aborted, and a COMMIT sent behind it rolls back.
        let pending: ReturnType<typeof work>;
        socket?.cork();
        try {
          pending = work(async (sqlText, params = [], options) => {
            if (ended) throw new Error('statement after the last one of a transaction');
            const sent: Promise<unknown>[] = [];
            socket?.cork();
            try {
              if (!begun) sent.push(client.query('begin'));
              sent.push(client.query({ name: statementName(sqlText), text: sqlText, values: params }));
              if (options?.last) sent.push(client.query('commit'));
            } finally {
              socket?.uncork();
            }
            const statement = begun ? 0 : 1;
            begun = true;
            ended = options?.last === true;
            const results = await Promise.all(sent);
            return (results[statement] as pg.QueryResult).rows as Record<string, unknown>[];
          });
        } finally {
          socket?.uncork();
        }
        const result = await pending;
        if (begun && !ended) await client.query('commit');
        return result;
      } catch (err) {
        failure = err;
        // A dead connection cannot roll back (the server already did when it lost the session); after a failed
        // last statement the COMMIT behind it has rolled back already, and this one only draws a warning.
        if (begun) await client.query('rollback').catch(() => {});
        throw err;
      } finally {
        // pg-pool discards a client that is no longer queryable; a failed one is not reused either way.
        client.release(failure instanceof Error && !(failure as { code?: unknown }).code ? failure : undefined);
      }
    },
    async migrate() {
      // One connection holds the advisory lock for the whole run: replicas starting together migrate once.
      const client = await pool.connect();
      let failure: Error | undefined;
      try {
        if (options.schema) await client.query(`create schema if not exists "${options.schema}"`);
        await client.query(`select pg_advisory_lock(${MIGRATION_LOCK_KEY})`);
        try {
          await migrate(drizzle(client), {
            migrationsFolder: MIGRATIONS_FOLDER,
            ...(options.schema ? { migrationsSchema: options.schema } : {}),
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
    },
    async close() {
      if (closed) return;
      closed = true;
      await pool.end();
    },
    async query(sqlText, params = []) {
      const result = await pool.query(sqlText, params);
      return result.rows as Record<string, unknown>[];
    },
  };
}
