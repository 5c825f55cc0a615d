// What src/lifecycle keeps in the store, as DurableStore offers it (src/store/types.ts): the bundle registry and its
// activation history, the replicas sharing a database, and the fleet's shadow candidate with its differences.
import type { Json } from '../json.ts';

export interface PolicyBundleRecord {
  sha256: string;
  revision: string;
  manifest: Json;
  bytes: Uint8Array;
  source: string | null;
  createdAt: Date;
}

/** A registered bundle without its manifest and bytes. */
export type PolicyBundleInfo = Omit<PolicyBundleRecord, 'manifest' | 'bytes'>;

export interface PolicyActivationRecord {
  bundleSha256: string;
  revision: string;
  activatedBy: string | null;
  activatedAt: Date;
}

/** A row of the append-only activation history; the highest id is in force. */
export interface PolicyActivationEntry extends PolicyActivationRecord {
  id: number;
}

/** Who pushed, activated, rolled back or shadowed what (src/lifecycle), refusals and their reason included. */
export interface LifecycleAuditRecord {
  actor: string;
  action: string;
  target: string | null;
  outcome: 'ok' | 'refused';
  detail: string | null;
  at: Date;
}

/** The bundle registry and its activation history (docs/bundle-lifecycle.md). */
export interface PolicyBundleStore {
  /** Stores a bundle under its sha256 (idempotent: same bytes, same row). */
  putPolicyBundle(bundle: Omit<PolicyBundleRecord, 'createdAt'>): Promise<void>;
  getPolicyBundle(sha256: string): Promise<PolicyBundleRecord | null>;
  getPolicyBundleInfo(sha256: string): Promise<PolicyBundleInfo | null>;
  /** Every registered bundle, oldest first (ties by sha256). */
  listPolicyBundles(): Promise<PolicyBundleInfo[]>;
  /** The newest bundle registered under a manifest revision. */
  findPolicyBundleByRevision(revision: string): Promise<PolicyBundleInfo | null>;
  /** A bundle's bytes alone, as stored (the caller checks them against their sha256); null when not registered. */
  readPolicyBundleBytes(sha256: string): Promise<Uint8Array | null>;
  /** Appends an activation of a registered bundle (one statement) and returns its id; not_found otherwise. */
  activatePolicyBundle(sha256: string, activatedBy?: string | null): Promise<number>;
  getActivePolicyBundle(): Promise<PolicyActivationRecord | null>;
  /** The activation history, newest first. */
  listPolicyActivations(limit: number): Promise<PolicyActivationEntry[]>;
  appendLifecycleAudit(record: Omit<LifecycleAuditRecord, 'at'>): Promise<void>;
  /** Newest first. */
  listLifecycleAudit(limit: number): Promise<LifecycleAuditRecord[]>;
}

/** One replica's heartbeat row (lifecycle_replicas). */
export interface ReplicaHeartbeat {
  replicaId: string;
  hostname: string | null;
  revision: string | null;
  bundleSha256: string | null;
  shadowRevision: string | null;
  lastSync: Date | null;
  lastError: string | null;
  /** Extra per-replica status (bundle-service pollers). */
  status: Json;
}

/** Stops listening; resolves once the listening connection is closed. */
export type StopListening = () => Promise<void>;

/** The replicas sharing a store: heartbeats, and the signal an activation sends the others. */
export interface ReplicaStore {
  /** Upserts the replica's row; heartbeat_at is the database's now(). */
  heartbeatReplica(heartbeat: ReplicaHeartbeat): Promise<void>;
  /** Every row in replica-id order, with the database's clock to judge staleness by. */
  listReplicaHeartbeats(): Promise<{ replicas: (ReplicaHeartbeat & { heartbeatAt: Date })[]; now: Date }>;
  /** Tells the other processes on this database that the active bundle or shadow target changed (Postgres NOTIFY). */
  notifyReplicas(sender: string): Promise<void>;
  /**
   * Calls `onNotify` for each notifyReplicas of any process, on a connection of its own that reconnects when
   * lost; null when the driver has no other process to hear (PGlite).
   */
  listenReplicas(onNotify: () => void, onError: (err: Error) => void): Promise<StopListening | null>;
}

/** A decision on which the shadow candidate disagreed with the enforcing bundle. */
export interface ShadowDifferenceRecord {
  replicaId: string;
  method: string;
  enforcingRevision: string;
  shadowRevision: string;
  shadowSha256: string;
  enforcing: Json;
  shadow: Json;
  shadowError: string | null;
  at: Date;
}

/** The fleet's shadow candidate and the differences replicas stored for it. */
export interface ShadowStore {
  getShadowTarget(): Promise<string | null>;
  setShadowTarget(sha256: string | null, setBy: string): Promise<void>;
  recordShadowDifference(difference: ShadowDifferenceRecord): Promise<void>;
  /** Differences for a target counted by method and both decisions, most frequent first. */
  countShadowDifferences(
    shadowSha256: string,
  ): Promise<{ method: string; enforcing: string | null; shadow: string | null; count: number }[]>;
  /** The newest differences stored for a target. */
  listShadowDifferences(shadowSha256: string, limit: number): Promise<ShadowDifferenceRecord[]>;
}
