// The bundle registry: every bundle ever loaded, content-addressed by the SHA-256 of its .tar.gz bytes, with its
// manifest revision and where it came from. The rows live behind the store's PolicyBundleStore and ShadowStore
// (src/store/bundles.ts, src/store/fleet.ts): activations are its append-only history, the newest in force.
import { isSha256Hex, sha256Hex } from '../chain/index.ts';
import type { BundleManifest } from '../rego/bundle/index.ts';
import { StoreError } from '../store/errors.ts';
import type { Json } from '../json.ts';
import type { LifecycleAuditRecord, PolicyBundleStore, ShadowStore } from '../store/types.ts';
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

/** What a registry needs of the store. */
export type RegistryStore = PolicyBundleStore & ShadowStore;

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

  constructor(readonly store: RegistryStore) {}

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
   * unpack hashed them off the event loop).
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
    // The row as stored: a bundle registered before keeps its first source and time.
    const stored = await this.store.getPolicyBundleInfo(sha256);
    return { sha256, revision, source: stored ? stored.source : source, createdAt: stored?.createdAt ?? new Date() };
  }

  list(): Promise<RegisteredBundle[]> {
    return this.store.listPolicyBundles();
  }

  /** `ref` = full sha256, a unique sha256 prefix (≥ 8 hex digits), or a manifest revision (newest bundle with it). */
  async resolve(ref: string): Promise<RegisteredBundle> {
    // A full sha256 (activations, rollback, replicas following the store): one row, whatever the registry's size.
    if (isSha256Hex(ref)) {
      const found = await this.store.getPolicyBundleInfo(ref);
      if (found) return found;
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
   * that hashes them anyway off the event loop (the unpack worker) and then calls confirmBytes with that hash
   * before trusting anything built from them.
   */
  async readBytes(sha256: string): Promise<{ bytes: Uint8Array; verified: boolean }> {
    const known = this.#recent.get(sha256);
    if (known) {
      this.#remember(sha256, known);
      return { bytes: known, verified: true };
    }
    const bytes = await this.store.readPolicyBundleBytes(sha256);
    if (!bytes) throw new LifecycleError('not_found', `bundle ${sha256} is not in the registry`);
    return { bytes, verified: false };
  }

  /** Refuses bytes from readBytes whose sha256 (`actual`) is not their key; keeps them in memory otherwise. */
  confirmBytes(sha256: string, bytes: Uint8Array, actual: string): void {
    if (actual !== sha256)
      throw new LifecycleError('invalid_bundle', `stored bundle ${sha256} does not match its sha256`);
    this.#remember(sha256, bytes);
  }

  async activations(limit = 100): Promise<ActivationEntry[]> {
    const rows = await this.store.listPolicyActivations(limit);
    return rows.map((r) => ({
      id: r.id,
      sha256: r.bundleSha256,
      revision: r.revision,
      activatedBy: r.activatedBy,
      activatedAt: r.activatedAt,
    }));
  }

  /** Appends an activation of a registered bundle and returns its id (one statement). */
  async recordActivation(sha256: string, by: string | null): Promise<number> {
    try {
      return await this.store.activatePolicyBundle(sha256, by);
    } catch (err) {
      if (err instanceof StoreError && err.code === 'not_found')
        throw new LifecycleError('not_found', `bundle ${sha256} is not in the registry`);
      throw err;
    }
  }

  /** The newest activation (id lets replicas detect a re-activation of the same bundle). */
  async active(): Promise<ActivationEntry | null> {
    return (await this.activations(1))[0] ?? null;
  }

  shadowTarget(): Promise<string | null> {
    return this.store.getShadowTarget();
  }

  setShadowTarget(sha256: string | null, by: string): Promise<void> {
    return this.store.setShadowTarget(sha256, by);
  }

  audit(
    actor: string,
    action: string,
    target: string | null,
    outcome: 'ok' | 'refused',
    detail?: string,
  ): Promise<void> {
    return this.store.appendLifecycleAudit({ actor, action, target, outcome, detail: detail ?? null });
  }

  auditLog(limit = 100): Promise<LifecycleAuditRecord[]> {
    return this.store.listLifecycleAudit(limit);
  }
}
