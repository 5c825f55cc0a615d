// The decision members of a stored signed result (context_entries.result_jcs, ACS §6 AcsResult), read in SQL for
// filters. result_jcs is cast to json (not jsonb: it keeps the text as stored). Postgres refuses to extract from a
// json text holding the escape \u0000 anywhere (SQLSTATE 22P05), and a policy's reasoning or a modification may
// contain one: the escapes are first rewritten to \u0020, so such a row is still found and never fails the
// listing. The pattern only matches a \u0000 preceded by an even run of backslashes (a real escape, not the text
// "\\u0000"); a match consumes the character before it, so adjacent escapes need the second pass.
import { type SQL, sql } from 'drizzle-orm';
import { contextEntries } from '../schema.ts';

const NUL_ESCAPE = '(^|[^\\\\])((?:\\\\\\\\)*)\\\\u0000';
const SPACE_ESCAPE = '\\1\\2\\\\u0020';
const withoutNul = (text: SQL): SQL => sql`regexp_replace(${text}, ${NUL_ESCAPE}, ${SPACE_ESCAPE}, 'g')`;
const result = sql`(${withoutNul(withoutNul(sql`${contextEntries.resultJcs}`))}::json)`;

/** The delivered disposition (allow, deny, modify, ask, defer). */
export const decisionText = sql<string | null>`(${result}->>'decision')`;

/** decision = disposition. */
export const disposition = (value: string): SQL => sql`${decisionText} = ${value}`;

/** The reason codes as a set-returning expression (none when reason_codes is absent or not an array). */
export const reasonCodesOf = sql`json_array_elements_text(case when json_typeof(${result}->'reason_codes') = 'array' then ${result}->'reason_codes' else '[]'::json end)`;

/** reason_codes contains `code`. */
export const hasReasonCode = (code: string): SQL =>
  sql`exists (select 1 from ${reasonCodesOf} as rc(code) where rc.code = ${code})`;

/** Epoch microseconds of created_at, as text (the cursor's precision). */
export const entryMicros = sql<string>`(extract(epoch from ${contextEntries.createdAt}) * 1000000)::bigint::text`;

/** created_at of an epoch-microseconds text, exact. */
export const fromMicros = (micros: string): SQL =>
  sql`(timestamptz 'epoch' + ${micros}::bigint * interval '1 microsecond')`;
