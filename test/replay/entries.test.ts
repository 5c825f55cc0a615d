import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openStore } from '../../src/store/index.ts';
import type { DurableStore } from '../../src/store/types.ts';
import { packedRevision, packedSeq, readEntryPage, readPackedPage, unpackEntry } from '../../src/replay/entries.ts';

// The packed read must give back exactly the stored columns, NULLs and non-BMP characters included.
describe('readEntryPage (one packed column per row)', () => {
  let store: DurableStore;
  beforeAll(async () => {
    store = await openStore({ inMemory: true });
    const rows: [number, string, string | null, string, string, string | null, string | null][] = [
      [0, '{"step_id":"a;b,c"}', null, 'h0', '{"x":"😀 é ;,-"}', null, null],
      [1, '{"step_id":"𝄞𝄞"}', 'h0', 'h1', '{}', '{"decision":"allow","note":"🙂"}', 'rev-1;2'],
      [2, '', 'h1', 'h2', '"p"', '', ''],
    ];
    for (const [seq, content, prev, hash, params, result, rev] of rows) {
      await store.query(
        `insert into context_entries (session_id, seq, entry_id, step_id, step_type, content_jcs, previous_hash, entry_hash, params_jcs, result_jcs, bundle_revision, created_at)
         values ('s1', $1, 'e', 'e', 'steps/x', $2, $3, $4, $5, $6, $7, '2026-06-01T08:00:00.123999Z')`,
        [seq, content, prev, hash, params, result, rev],
      );
    }
  });
  afterAll(async () => store.close());

  it('returns the columns as stored', async () => {
    const page = await readEntryPage(store, 's1', -1, 10);
    const plain = await store.query(
      'select seq, content_jcs, previous_hash, entry_hash, params_jcs, result_jcs, bundle_revision, created_at from context_entries where session_id = $1 order by seq',
      ['s1'],
    );
    expect(page).toEqual(
      plain.map((r) => ({
        seq: r.seq,
        contentJcs: r.content_jcs,
        previousHash: r.previous_hash,
        entryHash: r.entry_hash,
        paramsJcs: r.params_jcs,
        resultJcs: r.result_jcs,
        bundleRevision: r.bundle_revision,
        createdAtMs: (r.created_at as Date).getTime(),
      })),
    );
    expect(page[0].createdAtMs).toBe(Date.parse('2026-06-01T08:00:00.123Z'));
  });

  it('pages after a seq with a limit', async () => {
    expect((await readEntryPage(store, 's1', 0, 1)).map((e) => e.seq)).toEqual([1]);
  });

  it("a packed row's seq and revision, read without unpacking, are the unpacked ones", async () => {
    const packed = await readPackedPage(store, 's1', -1, 10);
    expect(packed.map(unpackEntry)).toEqual(await readEntryPage(store, 's1', -1, 10));
    expect(packed.map(packedSeq)).toEqual([0, 1, 2]);
    expect(packed.map(packedRevision)).toEqual([null, 'rev-1;2', '']);
    // Rows packed as the query packs them, from arbitrary texts (NULLs, non-ASCII, separators).
    const text = fc.option(fc.string({ unit: 'binary', maxLength: 12 }), { nil: null });
    const pack = (seq: number, fields: (string | null)[]): string =>
      `${seq},1780300800123,${fields.map((f) => (f === null ? '' : Buffer.byteLength(f))).join(',')};${fields.map((f) => f ?? '').join('')}`;
    fc.assert(
      fc.property(
        fc.nat(),
        fc.string({ unit: 'binary' }),
        text,
        fc.string({ unit: 'binary', maxLength: 8 }),
        fc.string({ unit: 'binary' }),
        text,
        text,
        (seq, content, prev, hash, params, result, rev) => {
          const row = pack(seq, [content, prev, hash, params, result, rev]);
          // Lone surrogates do not survive UTF-8; the store never holds them.
          fc.pre(Buffer.from(row).toString() === row);
          expect(packedSeq(row)).toBe(seq);
          expect(packedRevision(row)).toBe(unpackEntry(row).bundleRevision);
          expect(unpackEntry(row)).toMatchObject({
            seq,
            contentJcs: content,
            previousHash: prev,
            entryHash: hash,
            paramsJcs: params,
            resultJcs: result,
            bundleRevision: rev,
          });
        },
      ),
      { numRuns: 2000 },
    );
  });

  it('refuses a row that is not in the packed shape', () => {
    expect(() => unpackEntry('1,2,3;abc')).toThrow(/malformed/);
    // A byte length that ends inside a multi-byte character does not line up with the row's end.
    expect(() => unpackEntry('1,2,1,,1,1,,;éabc')).toThrow(/malformed/);
    expect(unpackEntry('1,2,2,,1,1,,;éab')).toMatchObject({
      contentJcs: 'é',
      previousHash: null,
      entryHash: 'a',
      paramsJcs: 'b',
      resultJcs: null,
    });
    expect(() => unpackEntry('1,2,3,,1,1,,;abcdef')).toThrow(/malformed/);
    expect(() => unpackEntry('1,2,,,1,1,,;ab')).toThrow(/malformed/);
    expect(() => unpackEntry('1,2,x,,1,1,,;ab')).toThrow(/malformed/);
    expect(() => unpackEntry(',2,1,,1,1,,;abc')).toThrow(/malformed/);
    expect(() => unpackEntry('1,2,1,,1,1,,,;abc')).toThrow(/malformed/);
    expect(() => unpackEntry('1,2,1,,1,-1,,;abc')).toThrow(/malformed/);
    expect(unpackEntry('7,-1500,1,,1,1,,;abc')).toMatchObject({
      seq: 7,
      createdAtMs: -1500,
      contentJcs: 'a',
      bundleRevision: null,
    });
  });
});
