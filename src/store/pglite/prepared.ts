// Named prepared statements on PGlite (worker thread only). PGlite's own query() parses, describes, binds,
// describes and executes a statement each time, one call into Postgres per protocol message, and plans it anew.
// A hot-path text (templateOf: it never changes) is parsed and described once here under a name; then each run is
// Bind + Execute + Sync in one message, one call into Postgres, planned from the cached statement
// (PostgreSQL docs, "Extended Query" protocol flow).
import { type PGlite, protocol, types } from '@electric-sql/pglite';
import type { Rows } from '../driver.ts';

interface Prepared {
  name: string;
  /** Parameter type oids, as Postgres inferred them (ParameterDescription): each value is serialised by its own. */
  paramTypes: number[];
  /** Result columns (RowDescription): names and type oids, for parsing DataRows. */
  fields: { name: string; dataTypeID: number }[];
}

/** The texts prepared on this worker's database; past the bound a text runs through PGlite's query() unnamed. */
const MAX_PREPARED = 64;

interface BackendMessage {
  name: string;
}
interface ParameterDescription extends BackendMessage {
  dataTypeIDs: number[];
}
interface RowDescription extends BackendMessage {
  fields: { name: string; dataTypeID: number }[];
}
interface DataRow extends BackendMessage {
  fields: (string | null)[];
}

function concat(parts: Uint8Array[]): Uint8Array {
  const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  let at = 0;
  for (const p of parts) {
    out.set(p, at);
    at += p.length;
  }
  return out;
}

export class PreparedStatements {
  readonly #byText = new Map<string, Prepared>();

  constructor(private readonly db: PGlite) {}

  /**
   * Runs `text` as a named prepared statement, rows as objects with PGlite's own parsers (as its query() returns
   * them); null when the bound is reached and the text is not prepared yet (run it unnamed). A statement error
   * rejects with Postgres' error (its SQLSTATE in `code`), after the Sync that ends it: inside a transaction block
   * the transaction is then aborted, as with any failed statement. The caller holds PGlite's query mutex, and outside
   * a transaction its transaction mutex too (PGlite's query() takes both, in that order).
   */
  async run(text: string, params: unknown[], inTransaction: boolean): Promise<Rows | null> {
    const prepared = this.#byText.get(text) ?? (await this.#prepare(text));
    if (!prepared) return null;
    const values = params.map((value, i) => {
      if (value === null || value === undefined) return null;
      const serialize = this.db.serializers[prepared.paramTypes[i]];
      return serialize ? serialize(value) : String(value);
    });
    const messages = (await this.db.execProtocolStream(
      concat([
        protocol.serialize.bind({ statement: prepared.name, values }),
        protocol.serialize.execute({}),
        protocol.serialize.sync(),
      ]),
      { syncToFs: false },
    )) as BackendMessage[];
    // As PGlite's query(): a statement outside a transaction block is durable once the file system is synced.
    if (!inTransaction) await this.db.syncToFs();
    const { fields } = prepared;
    const rows: Rows = [];
    for (const message of messages) {
      if (message.name !== 'dataRow') continue;
      const row: Record<string, unknown> = {};
      (message as DataRow).fields.forEach((field, i) => {
        row[fields[i].name] = types.parseType(field, fields[i].dataTypeID, this.db.parsers);
      });
      rows.push(row);
    }
    return rows;
  }

  async #prepare(text: string): Promise<Prepared | null> {
    if (this.#byText.size >= MAX_PREPARED) return null;
    const name = `guardian_${this.#byText.size}`;
    const messages = (await this.db.execProtocolStream(
      concat([
        protocol.serialize.parse({ name, text }),
        protocol.serialize.describe({ type: 'S', name }),
        protocol.serialize.sync(),
      ]),
      { syncToFs: false },
    )) as BackendMessage[];
    const params = messages.find((m): m is ParameterDescription => m.name === 'parameterDescription');
    const row = messages.find((m): m is RowDescription => m.name === 'rowDescription');
    const prepared: Prepared = {
      name,
      paramTypes: params?.dataTypeIDs ?? [],
      fields: (row?.fields ?? []).map((f) => ({ name: f.name, dataTypeID: f.dataTypeID })),
    };
    this.#byText.set(text, prepared);
    return prepared;
  }
}
