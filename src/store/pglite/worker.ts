// The PGlite worker: the embedded Postgres (Wasm) runs on this thread, off the Guardian's event loop, so a query
// never stalls HTTP, signing or policy evaluation. PGlite has one connection: PGlite's own mutex serialises
// transactions and the statements outside them, so a statement never lands inside another caller's transaction.
import { mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import { PGlite, type Transaction, types } from '@electric-sql/pglite';
import { serveRequests } from '../../worker-thread/index.ts';
import type { Rows } from '../driver.ts';
import { migratePglite } from './migrator.ts';
import { PreparedStatements } from './prepared.ts';
import type {
  OpenRequest,
  OpenResponse,
  PgliteProtocol,
  PgliteStatement,
  QueryRequest,
  RowMode,
  StatementError,
  StatementOutcome,
  TransactionRequest,
} from './protocol.ts';
import { pgliteStartParams } from './settings.ts';
import { seedFromPgliteTemplate } from './template.ts';

const PGLITE_START_PARAMS = pgliteStartParams(PGlite.defaultStartParams);

let pg: PGlite | undefined;
/** The hot path's statements, prepared on `pg` (a new database starts with none). */
let prepared: PreparedStatements | undefined;

function database(): PGlite {
  if (!pg) throw new Error('the PGlite worker has no open database');
  return pg;
}

function preparedStatements(): PreparedStatements {
  const db = database();
  if (!prepared) prepared = new PreparedStatements(db);
  return prepared;
}

async function open(request: OpenRequest): Promise<OpenResponse> {
  if (pg) throw new Error('the PGlite worker already has an open database');
  if (request.dataDir === undefined) {
    if (request.loadDataDir) {
      pg = await PGlite.create({ loadDataDir: new Blob([request.loadDataDir]), startParams: PGLITE_START_PARAMS });
      return {};
    }
    pg = await PGlite.create({ startParams: PGLITE_START_PARAMS });
    await migratePglite(pg, { force: true });
    const dump = (await pg.dumpDataDir('none')) as Blob;
    return { migratedDump: new Uint8Array(await dump.arrayBuffer()) };
  }
  const dir = join(request.dataDir, 'pgdata');
  if (request.seed) await seedFromPgliteTemplate(dir);
  await mkdir(dir, { recursive: true });
  pg = await PGlite.create({ dataDir: dir, startParams: PGLITE_START_PARAMS });
  return {};
}

/** The parsers drizzle's PGlite session uses: these types reach drizzle's column mappers as text. */
const asText = (value: string): string => value;
const DRIZZLE_PARSERS = {
  [types.TIMESTAMP]: asText,
  [types.TIMESTAMPTZ]: asText,
  [types.INTERVAL]: asText,
  [types.DATE]: asText,
  1231: asText, // numeric[]
  1115: asText, // timestamp[]
  1185: asText, // timestamptz[]
  1187: asText, // interval[]
  1182: asText, // date[]
};

const QUERY_OPTIONS: Record<RowMode, Parameters<PGlite['query']>[2]> = {
  objects: undefined,
  'drizzle-objects': { rowMode: 'object', parsers: DRIZZLE_PARSERS },
  'drizzle-arrays': { rowMode: 'array', parsers: DRIZZLE_PARSERS },
};

async function query(request: QueryRequest): Promise<Rows | unknown[][]> {
  const db = database();
  if (request.prepared && request.rows === 'objects') {
    await db._checkReady();
    // PGlite's query() holds its transaction mutex, then its query mutex: no other caller's statement or
    // transaction runs in between, and this statement is never sent inside another caller's transaction.
    const rows = await db._runExclusiveTransaction(() =>
      db._runExclusiveQuery(() => preparedStatements().run(request.text, request.params, false)),
    );
    if (rows) return rows;
  }
  return (await db.query<Record<string, unknown>>(request.text, request.params, QUERY_OPTIONS[request.rows])).rows;
}

/** One statement inside the transaction `tx` (which holds PGlite's transaction mutex): prepared when marked so. */
async function queryInTransaction(tx: Transaction, statement: PgliteStatement): Promise<Rows> {
  if (statement.prepared) {
    const rows = await database()._runExclusiveQuery(() =>
      preparedStatements().run(statement.text, statement.params, true),
    );
    if (rows) return rows;
  }
  return (await tx.query<Record<string, unknown>>(statement.text, statement.params)).rows;
}

function statementError(err: unknown): StatementError {
  if (!(err instanceof Error)) return { name: 'Error', message: String(err) };
  const code = (err as { code?: unknown }).code;
  return { name: err.name, message: err.message, ...(typeof code === 'string' ? { code } : {}) };
}

/** What a statement behind a failed one gets, as Postgres answers it inside an aborted transaction. */
const ABORTED: StatementError = {
  name: 'DatabaseError',
  message: 'current transaction is aborted, commands ignored until end of transaction block',
  code: '25P02',
};

interface Delivery {
  request: TransactionRequest;
  resolve(outcomes: StatementOutcome[]): void;
  reject(err: unknown): void;
}

/** One transaction's messages, run in arrival order inside one PGlite transaction. */
class OpenTransaction {
  readonly #inbox: Delivery[] = [];
  #wake: (() => void) | null = null;

  constructor(
    readonly id: number,
    onEnd: () => void,
  ) {
    void database()
      .transaction((tx) => this.#run(tx))
      .then(
        (finish) => finish?.(),
        (err: unknown) => {
          // COMMIT failed, or BEGIN did: every message still waiting (the committing one included) fails with it.
          for (const d of this.#inbox.splice(0)) d.reject(err);
          this.#committing?.reject(err);
        },
      )
      .finally(onEnd);
  }

  #committing: Delivery | null = null;

  deliver(request: TransactionRequest): Promise<StatementOutcome[]> {
    return new Promise((resolve, reject) => {
      this.#inbox.push({ request, resolve, reject });
      this.#wake?.();
    });
  }

  async #next(): Promise<Delivery> {
    while (this.#inbox.length === 0) await new Promise<void>((r) => (this.#wake = r));
    this.#wake = null;
    return this.#inbox.shift() as Delivery;
  }

  /** Resolves, once PGlite has committed, to the step that answers the committing message. */
  async #run(tx: Transaction): Promise<(() => void) | undefined> {
    let aborted = false;
    for (;;) {
      const delivery = await this.#next();
      const outcomes: StatementOutcome[] = [];
      for (const statement of delivery.request.statements) {
        if (aborted) {
          outcomes.push({ error: ABORTED });
          continue;
        }
        try {
          outcomes.push({ rows: await queryInTransaction(tx, statement) });
        } catch (err) {
          aborted = true;
          outcomes.push({ error: statementError(err) });
        }
      }
      const end = delivery.request.end;
      if (end === undefined) {
        delivery.resolve(outcomes);
        continue;
      }
      if (end === 'rollback' || aborted) {
        await tx.rollback();
        delivery.resolve(outcomes);
        return undefined;
      }
      // Returning commits; the answer waits for COMMIT, so an acknowledged statement is a committed one.
      this.#committing = delivery;
      return () => delivery.resolve(outcomes);
    }
  }
}

const transactions = new Map<number, OpenTransaction>();

function transaction(request: TransactionRequest): Promise<StatementOutcome[]> {
  let tx = transactions.get(request.id);
  if (!tx) {
    const id = request.id;
    tx = new OpenTransaction(id, () => transactions.delete(id));
    transactions.set(id, tx);
  }
  return tx.deliver(request);
}

serveRequests<PgliteProtocol>({
  open,
  query,
  transaction,
  migrate: async () => {
    await migratePglite(database());
    return null;
  },
  close: async () => {
    await pg?.close();
    pg = undefined;
    prepared = undefined;
    return null;
  },
});
