// One Guardian replica's view of the bundle lifecycle: it owns the PolicySlot the Guardian evaluates with,
// follows the activations recorded in the store (Postgres LISTEN/NOTIFY through the store's own driver, polling
// always as the fallback; PGlite: polling plus an in-process signal), heartbeats its revision into the store,
// evaluates the shadow candidate and stores its differences. Activation = verify signature → load + warm +
// smoke-test locally → record in the store → swap; any failure leaves the old version in force and says why.
import { EventEmitter } from 'node:events';
import { hostname } from 'node:os';
import { randomUUID } from 'node:crypto';
import { performance } from 'node:perf_hooks';
import { REPLICA_CHANNEL } from '../store/fleet.ts';
import type { DurableStore, Json, ReplicaHeartbeat, ReplicaStore, ShadowStore, StopListening } from '../store/types.ts';
import { sha256Hex } from '../chain/index.ts';
import { LifecycleError } from './errors.ts';
import { BundleRegistry, type ActivationEntry, type RegisteredBundle } from './registry.ts';
import type { BundleVerificationConfig, SignatureCheck } from './signing.ts';
import {
  loadUnpacked,
  loadVersion,
  PolicySlot,
  type EngineSettings,
  type LoadedVersion,
  type ShadowDifference,
  type ShadowStats,
} from './slot.ts';
import { sharedUnpackThread } from './unpack-thread.ts';
import { unpackBundle, type UnpackedBundle } from './unpack.ts';
import { createPolicyEnginePool, type PolicyEnginePool } from '../policy/pool/pool.ts';
import type { WasmBundleParts } from '../policy/engine.ts';

/** The Postgres channel activations and shadow changes are announced on. */
export const NOTIFY_CHANNEL = REPLICA_CHANNEL;

// Nodes sharing one store object in a process (PGlite, tests) hear each other's activations at once.
const localSignals = new WeakMap<DurableStore, EventEmitter>();
function signalOf(store: DurableStore): EventEmitter {
  let e = localSignals.get(store);
  if (!e) {
    e = new EventEmitter();
    e.setMaxListeners(0);
    localSignals.set(store, e);
  }
  return e;
}

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

export class LifecycleNode {
  readonly registry: BundleRegistry;
  readonly replicaId: string;
  #slot: PolicySlot | undefined;
  #lastActivationId = 0;
  #lastSync: Date | null = null;
  #lastError: string | null = null;
  #syncing: Promise<void> = Promise.resolve();
  #timers: NodeJS.Timeout[] = [];
  #unlisten: StopListening | null = null;
  #onSignal = (): void => void this.sync().catch(() => {});
  #pendingDiffs = new Set<Promise<unknown>>();
  #storedDiffs = { sha256: '', count: 0 };
  #statusExtra: Record<string, unknown> = {};
  #pool: PolicyEnginePool | undefined;

  constructor(readonly options: LifecycleNodeOptions) {
    this.registry = new BundleRegistry(options.store);
    this.replicaId = options.replicaId ?? `${hostname()}-${randomUUID().slice(0, 8)}`;
  }

  /** The engine to hand to createGuardian (valid after start()). */
  get engine(): PolicySlot {
    if (!this.#slot) throw new Error('lifecycle node not started');
    return this.#slot;
  }

  get store(): DurableStore {
    return this.options.store;
  }

  #log(line: string): void {
    this.options.log?.(`lifecycle[${this.replicaId}]: ${line}`);
  }

  /** Loads the active version (or the initial bundle), then follows activations. */
  async start(): Promise<PolicySlot> {
    const active = await this.registry.active();
    const preloaded = this.options.preloaded;
    this.options.preloaded = undefined;
    // The same bytes (same sha256) loaded with the same settings and checks: adopted instead of loaded again.
    const load = (sha256: string, given?: Uint8Array): Promise<LoadedVersion> => {
      if (preloaded?.sha256 !== sha256) return this.#loadForServing(sha256, given);
      this.#log(`serving ${preloaded.revision} (${sha256.slice(0, 12)}) as loaded while the store opened`);
      return this.#adopt(preloaded);
    };
    let version: LoadedVersion;
    if (active) {
      version = await load(active.sha256);
      this.#lastActivationId = active.id;
    } else if (this.options.initialBundle) {
      // Loaded (unpacked and checked) before it is registered: the registry takes the manifest from the unpack
      // instead of reading the tarball again, and a bundle that does not load is never registered.
      const { bytes, source } = this.options.initialBundle;
      version = await load(sha256Hex(bytes), bytes);
      const record = await this.registry.register(bytes, source, version.unpacked.manifest, version.sha256);
      this.#lastActivationId = await this.registry.recordActivation(record.sha256, `startup:${this.replicaId}`);
    } else {
      throw new LifecycleError('not_found', 'no active policy bundle in the store and no initial bundle given');
    }
    this.#slot = new PolicySlot(version);
    // From now on loads share the thread with evaluations: they unpack in the worker. It boots on another thread
    // (openGuardianRuntime starts it before the store opens), so serving does not wait for it; an activation that
    // arrives before it answers waits for it in loadVersion.
    void sharedUnpackThread()
      .warm()
      .catch((e: unknown) => this.#log(`bundle unpack worker not available: ${(e as Error).message}`));
    this.#slot.onShadowDifference = (d) => this.#storeDifference(d);
    this.#lastSync = new Date();
    await this.#syncShadow();
    // The first beat is not waited for: nothing served depends on the replica row (it says when this replica was
    // last seen), and the first write after the store opens is the slow one. A failed beat is retried by the timer.
    void this.heartbeat().catch((e: unknown) => this.#log(`heartbeat not written: ${(e as Error).message}`));

    const poll = setInterval(() => void this.sync().catch(() => {}), this.options.pollIntervalMs ?? 1000);
    const beat = setInterval(() => void this.heartbeat().catch(() => {}), this.options.heartbeatMs ?? 2000);
    poll.unref();
    beat.unref();
    this.#timers.push(poll, beat);
    signalOf(this.store).on('activation', this.#onSignal);
    if (this.options.listen !== false) {
      try {
        this.#unlisten = await this.store.listenReplicas(this.#onSignal, (e) =>
          this.#log(`LISTEN connection lost, reconnecting: ${e.message}`),
        );
      } catch (e) {
        // Polling still converges; LISTEN only makes it faster.
        this.#log(`LISTEN unavailable, polling only: ${(e as Error).message}`);
      }
    }
    return this.#slot;
  }

  async stop(): Promise<void> {
    for (const t of this.#timers) clearInterval(t);
    this.#timers = [];
    signalOf(this.store).off('activation', this.#onSignal);
    await this.#syncing.catch(() => {});
    await Promise.allSettled([...this.#pendingDiffs]);
    await this.#unlisten?.().catch(() => {});
    this.#unlisten = null;
    await this.#pool?.close();
    this.#pool = undefined;
  }

  /** Extra per-replica status (e.g. bundle-service pollers) included in the heartbeat. */
  setStatusDetail(key: string, value: unknown): void {
    this.#statusExtra[key] = value;
  }

  /**
   * Unpacks and verifies, then loads, warms and smoke-tests here (nothing kept on failure). Once the node serves
   * (started), unpacking runs in the worker thread so evaluations are not stalled; before that (start-up, the
   * one-shot CLI) nothing else is waiting and starting a worker would only add its start-up time.
   */
  async #loadChecked(sha256: string, given?: Uint8Array): Promise<LoadedVersion> {
    const started = performance.now();
    // Loaded here before (rollback, back and forth): the same bytes and settings unpack the same way; the new
    // engine still runs the smoke cases.
    const known = this.registry.unpacked(sha256);
    const bytes = known ? undefined : (given ?? (await this.registry.readBytes(sha256)).bytes);
    const read = performance.now() - started;
    const version = bytes
      ? await loadVersion(
          bytes,
          this.options.engine,
          this.options.verification,
          this.#slot ? sharedUnpackThread() : undefined,
        )
      : await loadUnpacked(known as UnpackedBundle, this.options.engine);
    // The unpack hashed the bytes: bytes that are not what the store keys them by are refused here, before the
    // version can be installed (their engine is dropped).
    if (bytes) this.registry.confirmBytes(sha256, bytes, version.unpacked.sha256);
    version.loadMs.read = read;
    this.registry.rememberUnpacked(version.unpacked);
    return version;
  }

  /** A version loaded outside this node (LifecycleNodeOptions.preloaded), kept and pooled as #loadForServing's. */
  #adopt(version: LoadedVersion): Promise<LoadedVersion> {
    this.registry.rememberUnpacked(version.unpacked);
    return this.#intoPool(version);
  }

  /** #loadChecked, plus the version loaded into the worker pool when the node serves from one. */
  async #loadForServing(sha256: string, given?: Uint8Array): Promise<LoadedVersion> {
    return this.#intoPool(await this.#loadChecked(sha256, given), given);
  }

  /** A checked version, also loaded into the worker pool when the node serves from one. */
  async #intoPool(version: LoadedVersion, given?: Uint8Array): Promise<LoadedVersion> {
    const sha256 = version.sha256;
    const size = this.options.poolSize;
    if (!size) return version;
    const started = performance.now();
    // The parts the unpack worker extracted (module + data text): no pool worker reads the tarball again.
    const parts = version.unpacked.parts;
    const bundle: Uint8Array | WasmBundleParts = parts
      ? { wasm: parts.wasm, dataJson: parts.dataJson, manifest: version.unpacked.manifest }
      : (given ?? (await this.registry.bytes(sha256)));
    try {
      if (this.#pool) version.pooled = await this.#pool.loadVersion(bundle, { revision: version.revision });
      else {
        const { entrypoint, maxInputBytes, timeoutMs, maxMemoryPages, customBuiltinsModule } =
          this.options.engine ?? {};
        this.#pool = await createPolicyEnginePool({
          bundle,
          size,
          revision: version.revision,
          ...(entrypoint ? { entrypoint } : {}),
          ...(maxInputBytes ? { maxInputBytes } : {}),
          ...(timeoutMs ? { timeoutMs } : {}),
          ...(maxMemoryPages ? { maxMemoryPages } : {}),
          ...(customBuiltinsModule ? { customBuiltinsModule } : {}),
        });
        version.pooled = this.#pool.current;
      }
    } catch (e) {
      throw new LifecycleError(
        'load_failed',
        `bundle does not load in the policy worker pool: ${(e as Error).message}`,
      );
    }
    version.loadMs.pool = performance.now() - started;
    return version;
  }

  /** Runs `fn` after every earlier activation/sync of this node (one at a time: the newest activation wins). */
  #exclusive<T>(fn: () => Promise<T>): Promise<T> {
    const run = this.#syncing.then(fn);
    this.#syncing = run.then(
      () => {},
      () => {},
    );
    return run;
  }

  /** Verifies, loads and smoke-tests `ref` here, records the activation, swaps, and signals the fleet. */
  activate(ref: string, by: string): Promise<ActivationResult> {
    return this.#exclusive(() => this.#activate(ref, by));
  }

  /** `prepared`: the bundle `ref` names, already loaded and smoke-tested here (push with activation). */
  async #activate(ref: string, by: string, prepared?: LoadedVersion): Promise<ActivationResult> {
    const started = performance.now();
    let target: RegisteredBundle | undefined;
    try {
      const before = this.#slot ? null : await this.registry.active();
      target = await this.registry.resolve(ref);
      const resolved = performance.now();
      const version =
        prepared?.sha256 === target.sha256 ? await this.#intoPool(prepared) : await this.#loadForServing(target.sha256);
      const loaded = performance.now();
      let activationId: number;
      try {
        // Recorded before the swap: if the store refuses, the old version stays in force (and is what the store
        // says). The id is our own row's, not whatever is newest: another replica may have activated since.
        activationId = await this.registry.recordActivation(target.sha256, by);
      } catch (e) {
        version.pooled?.retire();
        throw e;
      }
      const recorded = performance.now();
      const previous = this.#install(version, activationId);
      await this.registry.audit(by, 'activate', `${target.revision} ${target.sha256}`, 'ok');
      await this.#notify();
      const finished = performance.now();
      const { read, unpack, engine, pool } = version.loadMs;
      const result: ActivationResult = {
        sha256: target.sha256,
        revision: version.revision,
        previousRevision: previous?.revision ?? before?.revision ?? null,
        smokeCases: version.smokeCases,
        signature: version.signature,
        durationMs: finished - started,
        phasesMs: {
          resolve: resolved - started,
          read,
          unpack,
          engine,
          ...(pool !== undefined ? { pool } : {}),
          record: recorded - loaded,
          publish: finished - recorded,
        },
      };
      this.#log(
        `activated ${result.revision} (${result.sha256.slice(0, 12)}) by ${by} in ${result.durationMs.toFixed(1)} ms`,
      );
      return result;
    } catch (e) {
      const reason = e instanceof Error ? e.message : String(e);
      await this.registry
        .audit(by, 'activate', target ? `${target.revision} ${target.sha256}` : ref, 'refused', reason)
        .catch(() => {});
      this.#log(`activation of ${ref} refused: ${reason}`);
      throw e;
    }
  }

  /** Registers bytes (content-addressed) and optionally activates them. */
  async push(
    bytes: Uint8Array,
    options: { source: string | null; activate?: boolean; by: string },
  ): Promise<{ record: RegisteredBundle; activation?: ActivationResult }> {
    if (options.activate) {
      const prepared = await this.#prepare(bytes);
      if (prepared) {
        const record = await this.registry.register(bytes, options.source, prepared.unpacked.manifest, prepared.sha256);
        await this.registry.audit(
          options.by,
          'push',
          `${record.revision} ${record.sha256}`,
          'ok',
          options.source ?? undefined,
        );
        return { record, activation: await this.#exclusive(() => this.#activate(record.sha256, options.by, prepared)) };
      }
      // Refused for a reason other than a malformed bundle (signature, smoke file, load): registered and refused
      // by the activation below, as before (the failure path only).
    }
    // Unpacked and checked once (serving: in the unpack worker, off the event loop); the activation that follows
    // re-uses it (registry.unpacked) instead of parsing the data again.
    const verification = this.options.verification;
    const checked = await (this.#slot
      ? sharedUnpackThread().unpack(bytes, verification)
      : unpackBundle(bytes, verification)
    ).catch((e: unknown) => (e instanceof Error ? e : new Error(String(e))));
    // A malformed tarball is not registered; a bundle refused for its signature or smoke file is, as before.
    if (checked instanceof LifecycleError && checked.code === 'invalid_bundle') throw checked;
    const manifest =
      checked instanceof Error
        ? this.#slot
          ? await sharedUnpackThread().readManifest(bytes)
          : undefined
        : checked.manifest;
    const record = await this.registry.register(
      bytes,
      options.source,
      manifest,
      checked instanceof Error ? undefined : checked.sha256,
    );
    if (!(checked instanceof Error)) this.registry.rememberUnpacked(checked);
    await this.registry.audit(
      options.by,
      'push',
      `${record.revision} ${record.sha256}`,
      'ok',
      options.source ?? undefined,
    );
    if (!options.activate) {
      // Early feedback: a bundle that would be refused at activation (signature, smoke file) is flagged now; it
      // stays registered.
      if (checked instanceof Error) throw checked;
      return { record };
    }
    // A refused check is refused again (and audited) by the activation.
    return { record, activation: await this.activate(record.sha256, options.by) };
  }

  /**
   * Push with activation: the bundle is loaded (the unpack leaves a sole /data.json to the engine's parser, as a
   * first activation does: the data is parsed once, by the module) and smoke-tested before it is registered,
   * and the activation swaps that engine in. A malformed bundle (data included) is refused here and never
   * registered; undefined when it is refused for another reason, which the activation reports.
   */
  async #prepare(bytes: Uint8Array): Promise<LoadedVersion | undefined> {
    try {
      // Not #loadChecked: that needs the sha256 first, and the unpack hashes the bytes off the event loop.
      const version = await loadVersion(
        bytes,
        this.options.engine,
        this.options.verification,
        this.#slot ? sharedUnpackThread() : undefined,
      );
      this.registry.rememberUnpacked(version.unpacked);
      return version;
    } catch (e) {
      if (e instanceof LifecycleError && e.code === 'invalid_bundle') throw e;
      return undefined;
    }
  }

  /** Re-activates the bundle that was active before the current one. */
  async rollback(by: string): Promise<ActivationResult> {
    const target = await findRollbackTarget(this.registry);
    return this.activate(target.sha256, by);
  }

  /** Starts (ref) or stops (null) shadow evaluation fleet-wide. */
  async setShadow(ref: string | null, by: string): Promise<{ revision: string | null; sha256: string | null }> {
    if (ref === null) {
      await this.registry.setShadowTarget(null, by);
      await this.registry.audit(by, 'shadow-stop', null, 'ok');
      this.#slot?.setShadow(undefined);
      await this.#notify();
      return { revision: null, sha256: null };
    }
    const target = await this.registry.resolve(ref);
    try {
      const version = await this.#loadChecked(target.sha256);
      await this.registry.setShadowTarget(target.sha256, by);
      this.#slot?.setShadow(version);
    } catch (e) {
      await this.registry
        .audit(by, 'shadow', `${target.revision} ${target.sha256}`, 'refused', (e as Error).message)
        .catch(() => {});
      throw e;
    }
    await this.registry.audit(by, 'shadow', `${target.revision} ${target.sha256}`, 'ok');
    await this.#notify();
    return { revision: target.revision, sha256: target.sha256 };
  }

  #install(version: LoadedVersion, activationId: number | undefined): LoadedVersion | undefined {
    // A loaded version that does not go live gives its pool version back (the pool unloads it).
    const discard = (): LoadedVersion | undefined => {
      if (version !== this.#slot?.current) version.pooled?.retire();
      return this.#slot?.current;
    };
    // Never go back to an older activation than one already installed (another replica may activate meanwhile).
    if (activationId !== undefined && activationId < this.#lastActivationId) return discard();
    if (activationId !== undefined) this.#lastActivationId = activationId;
    this.#lastSync = new Date();
    this.#lastError = null;
    if (!this.#slot) return undefined;
    if (this.#slot.current.sha256 === version.sha256) return discard();
    const previous = this.#slot.swap(version);
    // Evaluations already sent to the previous pool version finish on it; then the pool unloads it.
    previous.pooled?.retire();
    return previous;
  }

  async #notify(): Promise<void> {
    signalOf(this.store).emit('activation');
    await this.store.notifyReplicas(this.replicaId).catch(() => {});
  }

  /** Brings this replica to the store's active version and shadow target (serialised; safe to call any time). */
  sync(): Promise<void> {
    return this.#exclusive(() => this.#syncOnce());
  }

  async #syncOnce(): Promise<void> {
    if (!this.#slot) return;
    let active: ActivationEntry | null;
    try {
      active = await this.registry.active();
    } catch (e) {
      this.#lastError = `store unreachable: ${(e as Error).message}`;
      return;
    }
    if (active && active.id > this.#lastActivationId) {
      if (active.sha256 === this.#slot.current.sha256) this.#install(this.#slot.current, active.id);
      else {
        try {
          const version = await this.#loadForServing(active.sha256);
          const prev = this.#install(version, active.id);
          this.#log(`synced to ${version.revision} (was ${prev?.revision})`);
        } catch (e) {
          // The old version stays in force; the activation id is remembered so a bad bundle is not retried forever.
          this.#lastActivationId = active.id;
          this.#lastError = `activation ${active.id} (${active.revision}) refused here: ${(e as Error).message}`;
          this.#log(this.#lastError);
        }
      }
    } else this.#lastSync = new Date();
    await this.#syncShadow();
    await this.heartbeat().catch(() => {});
  }

  async #syncShadow(): Promise<void> {
    if (!this.#slot) return;
    let target: string | null;
    try {
      target = await this.registry.shadowTarget();
    } catch {
      return;
    }
    if ((this.#slot.shadow?.sha256 ?? null) === target) return;
    if (target === null) return this.#slot.setShadow(undefined);
    try {
      this.#slot.setShadow(await this.#loadChecked(target));
    } catch (e) {
      this.#lastError = `shadow ${target.slice(0, 12)} refused: ${(e as Error).message}`;
    }
  }

  #storeDifference(d: ShadowDifference): void {
    const shadow = this.#slot?.shadow;
    if (!shadow) return;
    if (this.#storedDiffs.sha256 !== shadow.sha256) this.#storedDiffs = { sha256: shadow.sha256, count: 0 };
    if (this.#storedDiffs.count >= (this.options.maxStoredDifferences ?? 10_000)) return;
    this.#storedDiffs.count++;
    const p = this.store
      .recordShadowDifference({
        replicaId: this.replicaId,
        method: d.method,
        enforcingRevision: d.enforcingRevision,
        shadowRevision: d.shadowRevision,
        shadowSha256: shadow.sha256,
        enforcing: jsonOf(d.enforcing),
        shadow: jsonOf(d.shadow),
        shadowError: d.shadowError ?? null,
        at: d.at,
      })
      .catch((e: unknown) => this.#log(`could not store a shadow difference: ${(e as Error).message}`))
      .finally(() => this.#pendingDiffs.delete(p));
    this.#pendingDiffs.add(p);
  }

  /** Waits until every stored shadow difference so far is written (tests, reports). */
  async flushShadow(): Promise<void> {
    await new Promise((r) => setImmediate(r));
    await Promise.allSettled([...this.#pendingDiffs]);
  }

  /**
   * Writes this replica's heartbeat row. Writes run one after another, each reading the state when it starts: a
   * periodic beat that read the old revision can never land after the beat of a newer activation.
   */
  heartbeat(): Promise<void> {
    const beat = this.#heartbeats.catch(() => {}).then(() => this.#writeHeartbeat());
    this.#heartbeats = beat;
    return beat;
  }

  #heartbeats: Promise<void> = Promise.resolve();

  async #writeHeartbeat(): Promise<void> {
    if (!this.#slot) return;
    const cur = this.#slot.current;
    await this.store.heartbeatReplica({
      replicaId: this.replicaId,
      hostname: hostname(),
      revision: cur.revision,
      bundleSha256: cur.sha256,
      shadowRevision: this.#slot.shadow?.revision ?? null,
      lastSync: this.#lastSync,
      lastError: this.#lastError,
      status: jsonOf(this.#statusExtra),
    });
  }

  local(): LocalStatus {
    const slot = this.engine;
    return {
      replicaId: this.replicaId,
      revision: slot.revision,
      sha256: slot.current.sha256,
      swaps: slot.swaps,
      lastSync: this.#lastSync,
      lastError: this.#lastError,
      shadow: slot.shadowStats,
    };
  }

  /** Every replica that heartbeats into this store; `stale` when silent for 3 heartbeat intervals. */
  async replicas(): Promise<ReplicaStatus[]> {
    return listReplicas(this.store, 3 * (this.options.heartbeatMs ?? 2000));
  }
}

export async function listReplicas(store: ReplicaStore, staleAfterMs = 6000): Promise<ReplicaStatus[]> {
  const { replicas, now } = await store.listReplicaHeartbeats();
  return replicas.map(({ status: _status, ...r }) => ({
    ...r,
    stale: now.getTime() - r.heartbeatAt.getTime() > staleAfterMs,
  }));
}

/** The bundle active before the current one (the newest earlier activation of a different bundle). */
export async function findRollbackTarget(registry: BundleRegistry): Promise<ActivationEntry> {
  const history = await registry.activations(1000);
  if (history.length === 0) throw new LifecycleError('nothing_to_roll_back', 'no activation recorded');
  const target = history.find((a) => a.sha256 !== history[0].sha256);
  if (!target) throw new LifecycleError('nothing_to_roll_back', `only ${history[0].revision} was ever active`);
  return target;
}

export interface ShadowReport {
  shadowRevision: string | null;
  shadowSha256: string | null;
  differences: number;
  byMethod: { method: string; enforcing: string | null; shadow: string | null; count: number }[];
  samples: {
    method: string;
    enforcingRevision: string;
    enforcing: unknown;
    shadow: unknown;
    shadowError: string | null;
    at: Date;
  }[];
}

/** Differences stored for the current shadow target (or a given sha256), grouped by method and decisions. */
export async function shadowReport(
  store: ShadowStore & Pick<DurableStore, 'getPolicyBundleInfo'>,
  sha256?: string,
  sampleLimit = 20,
): Promise<ShadowReport> {
  const target = sha256 ?? (await store.getShadowTarget());
  if (!target) return { shadowRevision: null, shadowSha256: null, differences: 0, byMethod: [], samples: [] };
  const rev = (await store.getPolicyBundleInfo(target))?.revision ?? null;
  const byMethod = await store.countShadowDifferences(target);
  const samples = await store.listShadowDifferences(target, sampleLimit);
  return {
    shadowRevision: rev,
    shadowSha256: target,
    differences: byMethod.reduce((a, b) => a + b.count, 0),
    byMethod,
    samples: samples.map((s) => ({
      method: s.method,
      enforcingRevision: s.enforcingRevision,
      enforcing: s.enforcing,
      shadow: s.shadow,
      shadowError: s.shadowError,
      at: s.at,
    })),
  };
}

/** A value as the JSON a jsonb column stores (undefined members dropped, as JSON.stringify drops them). */
function jsonOf(value: unknown): Json {
  const text = JSON.stringify(value);
  return text === undefined ? null : (JSON.parse(text) as Json);
}
