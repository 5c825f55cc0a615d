// The console dashboard's figures over a recent window: decisions per minute by disposition, the most frequent
// reason codes, and evaluation latency percentiles, computed in SQL over context_entries.
import { and, count, desc, gte, isNotNull, sql } from 'drizzle-orm';
import type { StoreDatabase } from '../driver.ts';
import { toStoreError } from '../errors.ts';
import { contextEntries } from '../schema.ts';
import { decisionText, reasonCodesOf } from './decision-columns.ts';

export interface DecisionStats {
  since: Date;
  /** One row per minute that had decisions, oldest first. */
  perMinute: { minute: Date; disposition: string; count: number }[];
  topReasonCodes: { code: string; count: number }[];
  /** Evaluation time in ms (null without decisions in the window). */
  latencyMs: { p50: number | null; p99: number | null; max: number | null };
  decisions: number;
}

export async function decisionStats(db: StoreDatabase, since: Date, topCodes = 10): Promise<DecisionStats> {
  const recent = and(isNotNull(contextEntries.resultJcs), gte(contextEntries.createdAt, since));
  const minute = sql<Date>`date_trunc('minute', ${contextEntries.createdAt})`;
  try {
    const [perMinute, codes, latency] = await Promise.all([
      db
        .select({ minute, disposition: decisionText, count: count() })
        .from(contextEntries)
        .where(recent)
        // By position: the decision expression carries bound parameters, so a repeated expression would not match.
        .groupBy(sql`1, 2`)
        .orderBy(sql`1, 2`),
      db
        .select({ code: sql<string>`rc.code`, count: count() })
        .from(contextEntries)
        .innerJoin(sql`${reasonCodesOf} as rc(code)`, sql`true`)
        .where(recent)
        .groupBy(sql`rc.code`)
        .orderBy(desc(count()), sql`rc.code`)
        .limit(topCodes),
      db
        .select({
          p50: sql<number | null>`percentile_cont(0.5) within group (order by ${contextEntries.evaluationDurationMs})`,
          p99: sql<number | null>`percentile_cont(0.99) within group (order by ${contextEntries.evaluationDurationMs})`,
          max: sql<number | null>`max(${contextEntries.evaluationDurationMs})`,
          decisions: count(),
        })
        .from(contextEntries)
        .where(recent),
    ]);
    const l = latency[0];
    const num = (v: unknown): number | null => (v === null || v === undefined ? null : Number(v));
    return {
      since,
      perMinute: perMinute.map((r) => ({
        minute: r.minute instanceof Date ? r.minute : new Date(String(r.minute)),
        disposition: r.disposition ?? 'none',
        count: Number(r.count),
      })),
      topReasonCodes: codes.map((r) => ({ code: r.code, count: Number(r.count) })),
      latencyMs: { p50: num(l?.p50), p99: num(l?.p99), max: num(l?.max) },
      decisions: Number(l?.decisions ?? 0),
    };
  } catch (err) {
    throw toStoreError(err, 'decisionStats');
  }
}
