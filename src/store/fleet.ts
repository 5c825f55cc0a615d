// What the replicas sharing a store tell each other: heartbeats (lifecycle_replicas), the activation signal
// (Postgres LISTEN/NOTIFY on the store's own driver), the shadow target and the differences stored for it.
import { asc, desc, eq, sql } from 'drizzle-orm';
import type { StoreDatabase, StoreDriver } from './driver.ts';
import { toStoreError } from './errors.ts';
import { lifecycleReplicas, lifecycleShadow, lifecycleShadowDiffs } from './schema.ts';
import type { Json } from '../json.ts';
import type { ReplicaHeartbeat, ReplicaStore, ShadowDifferenceRecord, ShadowStore, StopListening } from './types.ts';

/** The channel every Guardian process on one database listens on for activations and shadow changes. */
export const REPLICA_CHANNEL = 'guardian_policy_bundles';

async function wrapped<T>(what: string, work: () => Promise<T>): Promise<T> {
  try {
    return await work();
  } catch (err) {
    throw toStoreError(err, what);
  }
}

export class Fleet implements ReplicaStore, ShadowStore {
  constructor(
    private readonly driver: StoreDriver,
    private readonly db: StoreDatabase = driver.db,
  ) {}

  async heartbeatReplica(heartbeat: ReplicaHeartbeat): Promise<void> {
    const r = lifecycleReplicas;
    await wrapped('heartbeatReplica', () =>
      this.db
        .insert(r)
        .values({ ...heartbeat, heartbeatAt: sql`now()` })
        .onConflictDoUpdate({
          target: r.replicaId,
          set: {
            revision: sql`excluded.${sql.identifier(r.revision.name)}`,
            bundleSha256: sql`excluded.${sql.identifier(r.bundleSha256.name)}`,
            shadowRevision: sql`excluded.${sql.identifier(r.shadowRevision.name)}`,
            lastSync: sql`excluded.${sql.identifier(r.lastSync.name)}`,
            lastError: sql`excluded.${sql.identifier(r.lastError.name)}`,
            heartbeatAt: sql`now()`,
            status: sql`excluded.${sql.identifier(r.status.name)}`,
          },
        }),
    );
  }

  async listReplicaHeartbeats(): Promise<{ replicas: (ReplicaHeartbeat & { heartbeatAt: Date })[]; now: Date }> {
    const r = lifecycleReplicas;
    const rows = await wrapped('listReplicaHeartbeats', () =>
      this.db
        .select({
          replicaId: r.replicaId,
          hostname: r.hostname,
          revision: r.revision,
          bundleSha256: r.bundleSha256,
          shadowRevision: r.shadowRevision,
          lastSync: r.lastSync,
          lastError: r.lastError,
          heartbeatAt: r.heartbeatAt,
          status: r.status,
          dbNow: sql<Date>`now()`.mapWith(r.heartbeatAt),
        })
        .from(r)
        .orderBy(asc(r.replicaId)),
    );
    const now = rows[0]?.dbNow ?? new Date();
    return {
      replicas: rows.map(({ dbNow: _now, status, ...row }) => ({ ...row, status: (status ?? null) as Json })),
      now,
    };
  }

  async notifyReplicas(sender: string): Promise<void> {
    if (!this.driver.listen) return;
    await wrapped('notifyReplicas', () => this.driver.execute(sql`select pg_notify(${REPLICA_CHANNEL}, ${sender})`));
  }

  async listenReplicas(onNotify: () => void, onError: (err: Error) => void): Promise<StopListening | null> {
    if (!this.driver.listen) return null;
    return this.driver.listen(REPLICA_CHANNEL, onNotify, onError);
  }

  async getShadowTarget(): Promise<string | null> {
    const rows = await wrapped('getShadowTarget', () =>
      this.db.select({ sha256: lifecycleShadow.bundleSha256 }).from(lifecycleShadow).where(eq(lifecycleShadow.id, 1)),
    );
    return rows[0]?.sha256 ?? null;
  }

  async setShadowTarget(sha256: string | null, setBy: string): Promise<void> {
    await wrapped('setShadowTarget', () =>
      this.db
        .insert(lifecycleShadow)
        .values({ id: 1, bundleSha256: sha256, setBy, setAt: sql`now()` })
        .onConflictDoUpdate({
          target: lifecycleShadow.id,
          set: { bundleSha256: sha256, setBy, setAt: sql`now()` },
        }),
    );
  }

  async recordShadowDifference(d: ShadowDifferenceRecord): Promise<void> {
    await wrapped('recordShadowDifference', () => this.db.insert(lifecycleShadowDiffs).values(d));
  }

  async countShadowDifferences(
    shadowSha256: string,
  ): Promise<{ method: string; enforcing: string | null; shadow: string | null; count: number }[]> {
    const d = lifecycleShadowDiffs;
    const rows = await wrapped('countShadowDifferences', () =>
      this.driver.execute(sql`
        select ${d.method} as method, ${d.enforcing}->>'decision' as enforcing, ${d.shadow}->>'decision' as shadow,
               count(*)::int as n
          from ${d} where ${d.shadowSha256} = ${shadowSha256}
         group by 1, 2, 3 order by 4 desc, 1`),
    );
    return rows.map((g) => ({
      method: String(g.method),
      enforcing: g.enforcing === null ? null : String(g.enforcing),
      shadow: g.shadow === null ? null : String(g.shadow),
      count: Number(g.n),
    }));
  }

  async listShadowDifferences(shadowSha256: string, limit: number): Promise<ShadowDifferenceRecord[]> {
    const d = lifecycleShadowDiffs;
    const rows = await wrapped('listShadowDifferences', () =>
      this.db.select().from(d).where(eq(d.shadowSha256, shadowSha256)).orderBy(desc(d.id)).limit(limit),
    );
    return rows.map(({ id: _id, enforcing, shadow, ...row }) => ({
      ...row,
      enforcing: (enforcing ?? null) as Json,
      shadow: (shadow ?? null) as Json,
    }));
  }
}
