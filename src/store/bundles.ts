// The bundle registry (policy_bundles, content-addressed by the SHA-256 of the .tar.gz bytes), the append-only
// activation history (policy_activations: the newest row is in force) and the lifecycle's audit rows.
import { asc, desc, eq, sql } from 'drizzle-orm';
import { isSha256Hex } from '../chain/index.ts';
import type { StoreDatabase, StoreDriver } from './driver.ts';
import { StoreError, toStoreError } from './errors.ts';
import { lifecycleAudit, policyActivations, policyBundles } from './schema.ts';
import { names } from './sql.ts';
import type {
  LifecycleAuditRecord,
  PolicyActivationEntry,
  PolicyActivationRecord,
  PolicyBundleInfo,
  PolicyBundleRecord,
  PolicyBundleStore,
} from './types.ts';
import { jcsOf, parseJcs } from './values.ts';

const info = {
  sha256: policyBundles.sha256,
  revision: policyBundles.revision,
  source: policyBundles.source,
  createdAt: policyBundles.createdAt,
};

/**
 * Bytes travel as base64 text both ways: PGlite's bytea parameter and row codecs are far slower on the event
 * loop than base64. encode(…, 'base64') wraps lines every 76 characters; Buffer.from skips the newlines.
 */
const bytesAsBase64 = sql<string>`encode(${policyBundles.bytes}, 'base64')`;

export class PolicyBundles implements PolicyBundleStore {
  constructor(
    private readonly driver: StoreDriver,
    private readonly db: StoreDatabase = driver.db,
  ) {}

  async putPolicyBundle(bundle: Omit<PolicyBundleRecord, 'createdAt'>): Promise<void> {
    if (!isSha256Hex(bundle.sha256))
      throw new StoreError('invalid_input', 'bundle sha256 must be 64 lowercase hex digits');
    const manifestJcs = jcsOf(bundle.manifest, 'manifest');
    const base64 = Buffer.from(bundle.bytes).toString('base64');
    try {
      await this.db
        .insert(policyBundles)
        .values({
          sha256: bundle.sha256,
          revision: bundle.revision,
          manifestJcs,
          bytes: sql`decode(${base64}, 'base64')`,
          source: bundle.source ?? null,
        })
        .onConflictDoNothing();
    } catch (err) {
      throw toStoreError(err, 'putPolicyBundle');
    }
  }

  async getPolicyBundle(sha256: string): Promise<PolicyBundleRecord | null> {
    let rows: (PolicyBundleInfo & { manifestJcs: string; base64: string })[];
    try {
      rows = await this.db
        .select({ ...info, manifestJcs: policyBundles.manifestJcs, base64: bytesAsBase64 })
        .from(policyBundles)
        .where(eq(policyBundles.sha256, sha256));
    } catch (err) {
      throw toStoreError(err, 'getPolicyBundle');
    }
    if (rows.length === 0) return null;
    const { manifestJcs, base64, ...rest } = rows[0];
    return { ...rest, manifest: parseJcs(manifestJcs), bytes: new Uint8Array(Buffer.from(base64, 'base64')) };
  }

  async getPolicyBundleInfo(sha256: string): Promise<PolicyBundleInfo | null> {
    const rows = await this.#read('getPolicyBundleInfo', () =>
      this.db.select(info).from(policyBundles).where(eq(policyBundles.sha256, sha256)),
    );
    return rows[0] ?? null;
  }

  listPolicyBundles(): Promise<PolicyBundleInfo[]> {
    return this.#read('listPolicyBundles', () =>
      this.db.select(info).from(policyBundles).orderBy(asc(policyBundles.createdAt), asc(policyBundles.sha256)),
    );
  }

  async findPolicyBundleByRevision(revision: string): Promise<PolicyBundleInfo | null> {
    const rows = await this.#read('findPolicyBundleByRevision', () =>
      this.db
        .select(info)
        .from(policyBundles)
        .where(eq(policyBundles.revision, revision))
        .orderBy(desc(policyBundles.createdAt))
        .limit(1),
    );
    return rows[0] ?? null;
  }

  async readPolicyBundleBytes(sha256: string): Promise<Uint8Array | null> {
    const rows = await this.#read('readPolicyBundleBytes', () =>
      this.db.select({ base64: bytesAsBase64 }).from(policyBundles).where(eq(policyBundles.sha256, sha256)),
    );
    // A Buffer of its own (not from the shared pool at this size): no second copy into a Uint8Array.
    return rows.length === 0 ? null : Buffer.from(rows[0].base64, 'base64');
  }

  async activatePolicyBundle(sha256: string, activatedBy: string | null = null): Promise<number> {
    // One statement: the revision is copied from the registry row, and no row means no such bundle.
    const a = policyActivations;
    const b = policyBundles;
    const rows = await this.#read('activatePolicyBundle', () =>
      this.driver.execute(sql`
        insert into ${a} (${names(a.bundleSha256, a.revision, a.activatedBy)})
        select ${b.sha256}, ${b.revision}, ${activatedBy}::text from ${b} where ${b.sha256} = ${sha256}
        returning ${names(a.id)}`),
    );
    if (rows.length === 0) throw new StoreError('not_found', `no policy bundle ${sha256}`);
    return Number(rows[0].id);
  }

  async getActivePolicyBundle(): Promise<PolicyActivationRecord | null> {
    const [newest] = await this.listPolicyActivations(1);
    if (!newest) return null;
    const { id: _id, ...record } = newest;
    return record;
  }

  listPolicyActivations(limit: number): Promise<PolicyActivationEntry[]> {
    return this.#read('listPolicyActivations', () =>
      this.db
        .select({
          id: policyActivations.id,
          bundleSha256: policyActivations.bundleSha256,
          revision: policyActivations.revision,
          activatedBy: policyActivations.activatedBy,
          activatedAt: policyActivations.activatedAt,
        })
        .from(policyActivations)
        .orderBy(desc(policyActivations.id))
        .limit(limit),
    );
  }

  async appendLifecycleAudit(record: Omit<LifecycleAuditRecord, 'at'>): Promise<void> {
    await this.#read('appendLifecycleAudit', () => this.db.insert(lifecycleAudit).values(record));
  }

  async listLifecycleAudit(limit: number): Promise<LifecycleAuditRecord[]> {
    const rows = await this.#read('listLifecycleAudit', () =>
      this.db
        .select({
          actor: lifecycleAudit.actor,
          action: lifecycleAudit.action,
          target: lifecycleAudit.target,
          outcome: lifecycleAudit.outcome,
          detail: lifecycleAudit.detail,
          at: lifecycleAudit.at,
        })
        .from(lifecycleAudit)
        .orderBy(desc(lifecycleAudit.id))
        .limit(limit),
    );
    return rows.map((r) => ({ ...r, outcome: r.outcome as LifecycleAuditRecord['outcome'] }));
  }

  async #read<T>(what: string, work: () => Promise<T>): Promise<T> {
    try {
      return await work();
    } catch (err) {
      throw toStoreError(err, what);
    }
  }
}
