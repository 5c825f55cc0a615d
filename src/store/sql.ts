// Small builders for statements written with drizzle's `sql` template on the schema: every value is a
// placeholder drizzle numbers, every table and column comes from src/store/schema.ts.
import { type SQL, sql } from 'drizzle-orm';
import type { AnyPgColumn } from 'drizzle-orm/pg-core';

/** A named placeholder (see templateOf), cast to `type`: a value bound to it (an array too) is one parameter. */
export function slot(name: string, type: string): SQL {
  return sql`${sql.placeholder(name)}::${sql.raw(type)}`;
}

/** Bare column names, for INSERT column lists, ON CONFLICT targets, SET targets and RETURNING. */
export function names(...columns: AnyPgColumn[]): SQL {
  return sql.join(
    columns.map((c) => sql.identifier(c.name)),
    sql`, `,
  );
}
