// The bundle registry: every bundle ever loaded, content-addressed by the SHA-256 of its .tar.gz bytes, with its
// manifest revision and where it came from (store.putPolicyBundle). Activations are the store's append-only
// `policy_activations`; the lifecycle's own tables (replica heartbeats, shadow target, shadow differences,
// admin audit) are part of the store schema (src/store/schema.ts, migrations/0001_lifecycle.sql), applied when
// the store opens or by `guardian db migrate`.
import { sha256Hex } from '../chain/index.ts';
import type { BundleManifest } from '../rego/bundle/index.ts';
import type { Json } from '../json.ts';
import type { DurableStore } from '../store/types.ts';
import { LifecycleError } from './errors.ts';
import { readBundleManifest, readBundleOrRefuse, type UnpackedBundle } from './unpack.ts';

export interface RegisteredBundle {
  sha256: string;
  revision: string;
  source: string | null;
  createdAt: Date;
}

export interface BundleDescription extends RegisteredBundle {
  manifest: Json;
  signed: boolean;
  files: { path: string; bytes: number; sha256: string }[];
  sources: { path: string; text: string }[];
}

export interface ActivationEntry {
  id: number;
  sha256: string;
  revision: string;
  activatedBy: string | null;
  activatedAt: Date;
}

const asDate = (v: unknown): Date => (v instanceof Date ? v : new Date(String(v)));

const registeredBundle = (r: Record<string, unknown>): RegisteredBundle => ({
  sha256: String(r.sha256),
  revision: String(r.revision),
  source: r.source === null ? null : String(r.source),
  createdAt: asDate(r.created_at),
});

/** Bundles whose bytes a registry keeps in memory (pushed through it or read recently): rollback, push → activate. */
const RECENT_BUNDLES = 4;
/** Bundles whose unpacked form a registry keeps: the one in force, the one before it (rollback), one just pushed. */
const RECENT_UNPACKED = 3;

/** Makes `key` the newest entry of `recent` (insertion order) and drops the oldest beyond `limit`. */
function keepRecent<V>(recent: Map<string, V>, key: string, value: V, limit: number): void {
  recent.delete(key);
  recent.set(key, value);
  while (recent.size > limit) recent.delete(recent.keys().next().value as string);
}

export class BundleRegistry {
  /** sha256 → bytes, oldest first. Content-addressed, so an entry can never be stale. */
  #recent = new Map<string, Uint8Array>();
  /** sha256 → unpacked form (module, base document text, manifest, smoke cases, signature check), oldest first. */
  #unpacked = new Map<string, UnpackedBundle>();

  constructor(readonly store: DurableStore) {}

  #remember(sha256: string, bytes: Uint8Array): void {
    keepRecent(this.#recent, sha256, bytes, RECENT_BUNDLES);
  }

  /**
   * Keeps the unpacked form of a bundle this registry's node loaded, so activating it again (rollback, back and
   * forth) skips the unpack worker: same bytes (sha256), same node and so the same verification settings, same
   * result. Only complete forms (module and data text) are kept. Memory: the data text is shared with the
   * engine that was built from it while that engine lives.
   */
  rememberUnpacked(unpacked: UnpackedBundle): void {
    if (unpacked.parts) keepRecent(this.#unpacked, unpacked.sha256, unpacked, RECENT_UNPACKED);
  }

  /** The unpacked form kept by rememberUnpacked, if still kept. */
  unpacked(sha256: string): UnpackedBundle | undefined {
    return this.#unpacked.get(sha256);
  }

  /**
   * Stores the bundle (idempotent: same bytes, same sha256). `manifest`: already read from these bytes by the
   * caller (e.g. in the unpack worker), so the tarball is not read again here; otherwise it is read for the
   * manifest only (readBundleManifest: a malformed archive or manifest is refused with invalid_bundle; the other
   * files are checked by the unpack of every activation). `sha256`: of these bytes, when the caller has it (the
   * unpack hashed them off the event loop: 1 MB is 1-2 ms of sha256 here).
   */
  async register(
    bytes: Uint8Array,
    source: string | null,
    manifest: BundleManifest = readBundleManifest(bytes),
    sha256 = sha256Hex(bytes),
  ): Promise<RegisteredBundle> {
    const revision =
      typeof manifest.revision === 'string' && manifest.revision !== '' ? manifest.revision : `sha256:${sha256}`;
    await this.store.putPolicyBundle({ sha256, revision, manifest: manifest as Json, bytes, source });
    this.#remember(sha256, bytes);
    const rows = await this.store.query('SELECT source, created_at FROM policy_bundles WHERE sha256 = $1', [sha256]);
    const stored = rows[0];
    return {
      sha256,
      revision,
      source: stored ? (stored.source === null ? null : String(stored.source)) : source,
      createdAt: stored ? asDate(stored.created_at) : new Date(),
    };
  }

  async list(): Promise<RegisteredBundle[]> {
    const rows = await this.store.query(
      'SELECT sha256, revision, source, created_at FROM policy_bundles ORDER BY created_at, sha256',
    );
    return rows.map(registeredBundle);
  }

  /** `ref` = full sha256, a unique sha256 prefix (≥ 8 hex digits), or a manifest revision (newest bundle with it). */
  async resolve(ref: string): Promise<RegisteredBundle> {
    // A full sha256 (activations, rollback, replicas following the store): one row, whatever the registry's size.
    if (/^[0-9a-f]{64}$/.test(ref)) {
      const rows = await this.store.query(
        'SELECT sha256, revision, source, created_at FROM policy_bundles WHERE sha256 = $1',
        [ref],
      );
      if (rows[0]) return registeredBundle(rows[0]);
    }
    const all = await this.list();
    const exact = all.find((b) => b.sha256 === ref);
    if (exact) return exact;
    if (/^[0-9a-f]{8,63}$/.test(ref)) {
      const byPrefix = all.filter((b) => b.sha256.startsWith(ref));
      if (byPrefix.length === 1) return byPrefix[0];
      if (byPrefix.length > 1)
        throw new LifecycleError('ambiguous', `sha256 prefix ${ref} matches ${byPrefix.length} bundles`);
    }
    const byRevision = all.filter((b) => b.revision === ref);
    if (byRevision.length > 0) return byRevision[byRevision.length - 1];
    throw new LifecycleError('not_found', `no registered bundle with revision or sha256 ${JSON.stringify(ref)}`);
  }

  /** A registered bundle with its manifest, its files (path, size, sha256) and its Rego sources. */
  async describe(ref: string): Promise<BundleDescription> {
    const rec = await this.resolve(ref);
    const stored = await this.store.getPolicyBundle(rec.sha256);
    if (!stored) throw new LifecycleError('not_found', `bundle ${rec.sha256} is not in the registry`);
    const bundle = readBundleOrRefuse(stored.bytes);
    return {
      ...rec,
      manifest: stored.manifest,
      signed: bundle.signatures !== undefined,
      files: bundle.files.map((f) => ({ path: f.path, bytes: f.bytes.length, sha256: sha256Hex(f.bytes) })),
      sources: bundle.sources.map((src) => ({ path: src.path, text: src.text })),
    };
  }

  async bytes(sha256: string): Promise<Uint8Array> {
    const read = await this.readBytes(sha256);
    if (!read.verified) this.confirmBytes(sha256, read.bytes, sha256Hex(read.bytes));
    return read.bytes;
  }

  /**
   * The bundle's bytes; `verified: false` when they come from the store and were not hashed here: for a caller
   * that hashes them anyway off the event loop (the unpack worker: 1 MB is ~1 ms of sha256 on this thread) and
   * then calls confirmBytes with that hash before trusting anything built from them.
   */
  async readBytes(sha256: string): Promise<{ bytes: Uint8Array; verified: boolean }> {
    const known = this.#recent.get(sha256);
    if (known) {
      this.#remember(sha256, known);
      return { bytes: known, verified: true };
    }
    // base64 text instead of the bytea value: PGlite decodes a 1 MB bytea in 150-350 ms on the event loop,
    // base64 in ~30 ms (Postgres: about equal). Measured in docs/bundle-lifecycle.md.
    const rows = await this.store.query(`SELECT encode(bytes, 'base64') AS b64 FROM policy_bundles WHERE sha256 = $1`, [
      sha256,
    ]);
    if (rows.length === 0) throw new LifecycleError('not_found', `bundle ${sha256} is not in the registry`);
    // A Buffer of its own (not from the shared pool at this size): no second copy into a Uint8Array.
    return { bytes: Buffer.from(String(rows[0].b64), 'base64'), verified: false };
  }

  /** Refuses bytes from readBytes whose sha256 (`actual`) is not their key; keeps them in memory otherwise. */
  confirmBytes(sha256: string, bytes: Uint8Array, actual: string): void {
    if (actual !== sha256)
      throw new LifecycleError('invalid_bundle', `stored bundle ${sha256} does not match its sha256`);
    this.#remember(sha256, bytes);
  }

  async activations(limit = 100): Promise<ActivationEntry[]> {
    const rows = await this.store.query(
      'SELECT id, bundle_sha256, revision, activated_by, activated_at FROM policy_activations ORDER BY id DESC LIMIT $1',
      [limit],
    );
    return rows.map((r) => ({
      id: Number(r.id),
      sha256: String(r.bundle_sha256),
      revision: String(r.revision),
      activatedBy: r.activated_by === null ? null : String(r.activated_by),
      activatedAt: asDate(r.activated_at),
    }));
  }

  /**
   * Appends an activation of a registered bundle and returns its id: one statement (the store's
   * activatePolicyBundle, then a query for the id, took three round trips on an activation's critical path).
   */
  async recordActivation(sha256: string, by: string | null): Promise<number> {
    const rows = await this.store.query(
      'INSERT INTO policy_activations (bundle_sha256, revision, activated_by) SELECT sha256, revision, $2 FROM policy_bundles WHERE sha256 = $1 RETURNING id',
      [sha256, by],
    );
    if (rows.length === 0) throw new LifecycleError('not_found', `bundle ${sha256} is not in the registry`);
    return Number(rows[0].id);
  }

  /** The newest activation (id lets replicas detect a re-activation of the same bundle). */
  async active(): Promise<ActivationEntry | null> {
    return (await this.activations(1))[0] ?? null;
  }

  async shadowTarget(): Promise<string | null> {
    const rows = await this.store.query('SELECT bundle_sha256 FROM lifecycle_shadow WHERE id = 1');
    return rows[0]?.bundle_sha256 ? String(rows[0].bundle_sha256) : null;
  }

  async setShadowTarget(sha256: string | null, by: string): Promise<void> {
    await this.store.query(
      'INSERT INTO lifecycle_shadow (id, bundle_sha256, set_by, set_at) VALUES (1, $1, $2, now()) ON CONFLICT (id) DO UPDATE SET bundle_sha256 = EXCLUDED.bundle_sha256, set_by = EXCLUDED.set_by, set_at = now()',
      [sha256, by],
    );
  }

  async audit(
    actor: string,
    action: string,
    target: string | null,
    outcome: 'ok' | 'refused',
    detail?: string,
  ): Promise<void> {
    await this.store.query(
      'INSERT INTO lifecycle_audit (actor, action, target, outcome, detail) VALUES ($1, $2, $3, $4, $5)',
      [actor, action, target, outcome, detail ?? null],
    );
  }

  async auditLog(
    limit = 100,
  ): Promise<
    { actor: string; action: string; target: string | null; outcome: string; detail: string | null; at: Date }[]
  > {
    const rows = await this.store.query(
      'SELECT actor, action, target, outcome, detail, at FROM lifecycle_audit ORDER BY id DESC LIMIT $1',
      [limit],
    );
    return rows.map((r) => ({
      actor: String(r.actor),
      action: String(r.action),
      target: r.target === null ? null : String(r.target),
      outcome: String(r.outcome),
      detail: r.detail === null ? null : String(r.detail),
      at: asDate(r.at),
    }));
  }
}
