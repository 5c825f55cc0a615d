// One Guardian replica's view of the bundle lifecycle: it owns the PolicySlot the Guardian evaluates with,
// follows the activations recorded in the store (Postgres LISTEN/NOTIFY through the store's own driver, polling
// always as the fallback; PGlite: polling plus an in-process signal), heartbeats its revision into the store,
// evaluates the shadow candidate and stores its differences. Activation = verify signature → load + warm +
// smoke-test locally → record in the store → swap; any failure leaves the old version in force and says why.
import { hostname } from 'node:os';
import { randomUUID } from 'node:crypto';
import { performance } from 'node:perf_hooks';
import type { DurableStore, StopListening } from '../../store/types.ts';
import { sha256Hex } from '../../chain/index.ts';
import { LifecycleError } from '../errors.ts';
import { BundleRegistry, type ActivationEntry, type RegisteredBundle } from '../registry.ts';
import { PolicySlot, type LoadedVersion, type ShadowDifference } from '../slot.ts';
import { sharedUnpackThread } from '../unpack-thread.ts';
import { jsonOf } from './json-column.ts';
import { listReplicas } from './replicas.ts';
import { findRollbackTarget } from './rollback.ts';
import { ShadowDifferenceWriter } from './shadow-differences.ts';
import { signalOf } from './signals.ts';
import type { ActivationResult, LifecycleNodeOptions, LocalStatus, ReplicaStatus } from './types.ts';
import { VersionLoader } from './version-loader.ts';

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
  #statusExtra: Record<string, unknown> = {};
  readonly #loader: VersionLoader;
  readonly #differences: ShadowDifferenceWriter;

  constructor(readonly options: LifecycleNodeOptions) {
    this.registry = new BundleRegistry(options.store);
    this.replicaId = options.replicaId ?? `${hostname()}-${randomUUID().slice(0, 8)}`;
    // Once the node serves, loads share the thread with evaluations: they unpack in the worker.
    this.#loader = new VersionLoader(this.registry, options, () => (this.#slot ? sharedUnpackThread() : undefined));
    this.#differences = new ShadowDifferenceWriter(options.store, this.replicaId, options, (line) => this.#log(line));
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
      if (preloaded?.sha256 !== sha256) return this.#loader.forServing(sha256, given);
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
    await this.#differences.settled();
    await this.#unlisten?.().catch(() => {});
    this.#unlisten = null;
    await this.#loader.close();
  }

  /** Extra per-replica status (e.g. bundle-service pollers) included in the heartbeat. */
  setStatusDetail(key: string, value: unknown): void {
    this.#statusExtra[key] = value;
  }

  /** A version loaded outside this node (LifecycleNodeOptions.preloaded), kept and pooled as forServing's. */
  #adopt(version: LoadedVersion): Promise<LoadedVersion> {
    this.registry.rememberUnpacked(version.unpacked);
    return this.#loader.intoPool(version);
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
        prepared?.sha256 === target.sha256
          ? await this.#loader.intoPool(prepared)
          : await this.#loader.forServing(target.sha256);
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
      const prepared = await this.#loader.prepare(bytes);
      if (prepared) {
        const record = await this.registry.register(bytes, options.source, prepared.unpacked.manifest, prepared.sha256);
        await this.#auditPush(record, options);
        return { record, activation: await this.#exclusive(() => this.#activate(record.sha256, options.by, prepared)) };
      }
      // Refused for a reason other than a malformed bundle (signature, smoke file, load): registered and refused
      // by the activation below, as before (the failure path only).
    }
    const { record, refusal } = await this.#loader.registerChecked(bytes, options.source);
    await this.#auditPush(record, options);
    if (!options.activate) {
      // Early feedback: a bundle that would be refused at activation (signature, smoke file) is flagged now; it
      // stays registered.
      if (refusal) throw refusal;
      return { record };
    }
    // A refused check is refused again (and audited) by the activation.
    return { record, activation: await this.activate(record.sha256, options.by) };
  }

  #auditPush(record: RegisteredBundle, options: { source: string | null; by: string }): Promise<void> {
    return this.registry.audit(
      options.by,
      'push',
      `${record.revision} ${record.sha256}`,
      'ok',
      options.source ?? undefined,
    );
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
      const version = await this.#loader.checked(target.sha256);
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
    // This replica's row says what it now serves before the change is announced or answered: a status read right
    // after an activation or rollback sees the new revision (a failed beat is retried by the timer).
    await this.heartbeat().catch(() => {});
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
          const version = await this.#loader.forServing(active.sha256);
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
      this.#slot.setShadow(await this.#loader.checked(target));
    } catch (e) {
      this.#lastError = `shadow ${target.slice(0, 12)} refused: ${(e as Error).message}`;
    }
  }

  #storeDifference(d: ShadowDifference): void {
    const shadow = this.#slot?.shadow;
    if (shadow) this.#differences.write(d, shadow.sha256);
  }

  /** Waits until every stored shadow difference so far is written (tests, reports). */
  async flushShadow(): Promise<void> {
    await new Promise((r) => setImmediate(r));
    await this.#differences.settled();
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
