// What a lifecycle node is configured with and what it reports (activations, its own and the fleet's status).
import type { ReplicaHeartbeat, DurableStore } from '../../store/types.ts';
import type { BundleVerificationConfig, SignatureCheck } from '../signing.ts';
import type { EngineSettings, LoadedVersion, ShadowStats } from '../slot.ts';

export interface LifecycleNodeOptions {
  store: DurableStore;
  /** Default: hostname + random suffix. */
  replicaId?: string;
  engine?: EngineSettings;
  /** Signature verification; when keys are configured every activation needs a valid signature. */
  verification?: BundleVerificationConfig;
  /** Polling fallback interval (default 1000 ms). */
  pollIntervalMs?: number;
  /** Heartbeat interval (default 2000 ms). */
  heartbeatMs?: number;
  /** LISTEN for other replicas' activations when the store's driver can (Postgres; default true); else polling only. */
  listen?: boolean;
  /** Used when the store has no active bundle yet: registered and activated as `startup`. */
  initialBundle?: { bytes: Uint8Array; source: string };
  /**
   * A version loaded (verified, smoke-tested) while the store was still opening (preloadBundleFile in runtime.ts):
   * start() serves it when it is the store's active bundle or the initial bundle, instead of loading that again.
   */
  preloaded?: LoadedVersion;
  /**
   * Serve from a worker-thread pool of this many workers (src/policy/pool/: evaluation off the event loop, hard
   * pre-emption of overruns) instead of in-process. Each activated version is also loaded into the pool; the
   * in-process engine still runs the smoke cases and the shadow candidate. Default: in-process.
   */
  poolSize?: number;
  /** Shadow differences stored per shadow target and replica (default 10 000); counting continues beyond it. */
  maxStoredDifferences?: number;
  /** Receives one line per event (activation, refusal); default silent. */
  log?: (line: string) => void;
}

export interface ActivationResult {
  sha256: string;
  revision: string;
  previousRevision: string | null;
  smokeCases: number;
  signature: SignatureCheck['status'];
  durationMs: number;
  /** Where `durationMs` went, step by step (bench/lifecycle.ts prints their medians). */
  phasesMs: ActivationPhases;
}

/** Wall-clock milliseconds of each step of one activation, in order. */
export interface ActivationPhases {
  /** Finding the reference in the registry. */
  resolve: number;
  /** The bundle's bytes: from memory (recent bundles) or from the store. */
  read: number;
  /** The unpack worker (gunzip, untar, JSON, sha256, signature, smoke file), hand-over included. */
  unpack: number;
  /** The new engine: compile, instantiate, base document, warm-up, smoke cases. */
  engine: number;
  /** Loading into every pool worker (poolSize only). */
  pool?: number;
  /** Writing the activation row (before the swap: the store says what is in force). */
  record: number;
  /** Swap, audit row and fleet signal. */
  publish: number;
}

/** A replica's heartbeat row (its extra status aside), `stale` when it has been silent too long. */
export type ReplicaStatus = Omit<ReplicaHeartbeat, 'status'> & { heartbeatAt: Date; stale: boolean };

export interface LocalStatus {
  replicaId: string;
  revision: string;
  sha256: string;
  swaps: number;
  lastSync: Date | null;
  lastError: string | null;
  shadow: ShadowStats;
}
