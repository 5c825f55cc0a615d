// Postgres driver (node-postgres). Several Guardian processes may share one database: appends serialise on
// chain-head row locks, migrations on an advisory lock, activations reach the other replicas by LISTEN/NOTIFY.
// node-postgres, not postgres.js: README "Running a fleet" says why (porsager/postgres#1208).
import { drizzle } from 'drizzle-orm/node-postgres';
import pg from 'pg';
import { type Rows, type StoreDatabase, type StoreDriver, renderQuery } from '../driver.ts';
import { listenOn } from './listener.ts';
import { migratePostgres } from './migrator.ts';

export interface PostgresDriverOptions {
  databaseUrl: string;
  /** Tables live in this schema (created if missing); default: the connection's search_path (public). */
  schema?: string;
  /** Pool size for appends and queries (default 10). */
  poolSize?: number;
  /** application_name of the connections (default "acs-guardian"): tells replicas apart in pg_stat_activity. */
  applicationName?: string;
}

/**
 * Transaction statements run as named prepared statements: each connection parses and plans one once instead of
 * for every batch. Names are per statement text, the same on every connection; the store's transactions use a
 * fixed handful of texts, and past the bound a text simply runs unnamed.
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
  const connection: pg.ClientConfig = {
    connectionString: options.databaseUrl,
    connectionTimeoutMillis: 10_000,
    // A black-holed connection (no RST) must fail the request instead of hanging it.
    query_timeout: 30_000,
    keepAlive: true,
    application_name: options.applicationName ?? 'acs-guardian',
    ...(options.schema ? { options: `-c search_path=${options.schema}` } : {}),
  };
  const poolSize = options.poolSize ?? 10;
  const pool = new pg.Pool({
    // Queries sent without waiting for the previous answer (pg 8.23's pipeline option, not in @types/pg yet): see transaction().
    ...({ pipeline: true } as pg.PoolConfig),
    ...connection,
    max: poolSize,
    idleTimeoutMillis: 60_000,
  });
  // A connection that dies reports to the query using it; these listeners only keep the 'error' events of
  // idle or checked-out clients from becoming uncaught exceptions (pg-pool detaches its own on checkout).
  pool.on('error', () => {});
  pool.on('connect', (client) => client.on('error', () => {}));
  const db = drizzle(pool) as unknown as StoreDatabase;
  const run = async (text: string, params: unknown[] = []): Promise<Rows> => (await pool.query(text, params)).rows;
  let closed = false;

  return {
    name: 'postgres',
    db,
    // One group-commit transaction in flight at a time: a step batch is one round trip, and while it commits the
    // next batch gathers on the event loop; a second transaction in flight would only halve the batches, and
    // Postgres' work per step is mostly per transaction.
    appendConcurrency: 1,
    // Half the pool at most: each held turn's step still reads through the pool, and group commit needs a connection
    // (a pool of one cannot hold a turn and read beside it: turns are then this process's alone).
    ...(poolSize >= 2 ? { heldTransactions: Math.floor(poolSize / 2) } : {}),
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
          pending = work(async (statement, options) => {
            if (ended) throw new Error('statement after the last one of a transaction');
            const { text, params } = renderQuery(statement);
            const sent: Promise<unknown>[] = [];
            socket?.cork();
            try {
              if (!begun) sent.push(client.query('begin'));
              sent.push(client.query({ name: statementName(text), text, values: params }));
              if (options?.last) sent.push(client.query('commit'));
            } finally {
              socket?.uncork();
            }
            const index = begun ? 0 : 1;
            begun = true;
            ended = options?.last === true;
            const results = await Promise.all(sent);
            return (results[index] as pg.QueryResult).rows as Rows;
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
    execute(statement) {
      const { text, params } = renderQuery(statement);
      return run(text, params);
    },
    // node-postgres corks a query's Parse/Bind/Describe/Execute/Sync into one socket write, and names the
    // statement per connection: Parse goes out only on a connection that has not prepared its text yet.
    async autocommit({ text, params }) {
      return (await pool.query({ name: statementName(text), text, values: params })).rows as Rows;
    },
    listen: (channel, onNotify, onError) => listenOn(connection, channel, onNotify, onError),
    migrate: () => migratePostgres(pool, options.schema),
    async close() {
      if (closed) return;
      closed = true;
      await pool.end();
    },
    query: run,
  };
}
