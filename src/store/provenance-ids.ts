// The chain entries whose params carry Provenance objects, for the session-wide uniqueness of provenance_id
// (ACS §7: "Unique within session"; src/acs/pipeline/provenance-ids.ts). The chain is the record of which ids a
// session used, so nothing else is written: entries are read back by a text search of their params JCS for the
// member `"provenance_id":` (with one of the given ids), and the caller parses the rows it gets to confirm.
import { and, asc, eq, gt, lte, or, sql } from 'drizzle-orm';
import type { StoreDatabase, StoreDriver } from './driver.ts';
import { toStoreError } from './errors.ts';
import { contextEntries } from './schema.ts';
import type { ProvenanceEntryRow, ProvenanceIdStore } from './types.ts';

const e = contextEntries;

/** The text a Provenance object with this id has in RFC 8785 params (JCS strings are JSON.stringify's). */
function needle(id?: string): string {
  return id === undefined ? '"provenance_id":' : `"provenance_id":${JSON.stringify(id)}`;
}

export class ProvenanceIdReads implements ProvenanceIdStore {
  constructor(
    driver: StoreDriver,
    private readonly db: StoreDatabase = driver.db,
  ) {}

  async readProvenanceEntries(
    sessionId: string,
    afterSeq: number,
    throughSeq: number,
    ids?: readonly string[],
  ): Promise<ProvenanceEntryRow[]> {
    if (throughSeq <= afterSeq || ids?.length === 0) return [];
    const mentions = (ids === undefined ? [needle()] : ids.map(needle)).map(
      (text) => sql`strpos(${e.paramsJcs}, ${text}) > 0`,
    );
    try {
      return await this.db
        .select({ seq: e.seq, paramsJcs: e.paramsJcs })
        .from(e)
        .where(and(eq(e.sessionId, sessionId), gt(e.seq, afterSeq), lte(e.seq, throughSeq), or(...mentions)))
        .orderBy(asc(e.seq));
    } catch (err) {
      throw toStoreError(err, 'readProvenanceEntries');
    }
  }
}
