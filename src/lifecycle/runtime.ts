// Lifecycle wiring for `guardian serve` (src/server/app.ts calls this): one LifecycleNode per process on the
// Guardian's store, its PolicySlot as the Guardian's engine, and the configured bundle-service poller and
// directory watcher. The admin API over it is mounted by src/server (the composition root), not here.
// Environment:
//   GUARDIAN_REPLICA_ID                       replica name in /admin/status (default hostname-random)
//   GUARDIAN_BUNDLE_SERVICE_URL               OPA bundle service resource URL to poll
//   GUARDIAN_BUNDLE_SERVICE_TOKEN             bearer token sent to the bundle service
//   GUARDIAN_BUNDLE_SERVICE_LONG_POLL_S       long polling timeout (seconds; 0/absent = short polling)
//   GUARDIAN_BUNDLE_SERVICE_MIN_DELAY_S / _MAX_DELAY_S   short polling delay range (default 60 / 120)
//   GUARDIAN_BUNDLE_WATCH_DIR                 directory whose newest *.tar.gz is activated on change; default on
//                                             PGlite without --bundle: bundles/acs.tar.gz (GUARDIAN_BUNDLE_WATCH=off)
//   GUARDIAN_BUNDLE_VERIFY_*                  signature verification (src/lifecycle/config.ts)
//   GUARDIAN_POLICY_WORKERS                   serve from a worker-thread engine pool of N workers (default 0: in-process)
//   DATABASE_URL                              also used to LISTEN for activations
import { createHash } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { writeBundle } from '../rego/bundle/index.ts';
import type { DurableStore, GuardianStore } from '../store/types.ts';
import { sha256Hex } from '../chain/index.ts';
import { BundleServicePoller } from './bundle-service.ts';
import { verificationFromEnv } from './config.ts';
import { compileRegoDirectory } from './rego-directory.ts';
import { LifecycleNode } from './node/index.ts';
import { type EngineSettings, type LoadedVersion, loadVersion, type PolicySlot } from './slot.ts';
import { watchBundleDirectory, type DirectoryWatch } from './watch.ts';

export interface LifecycleRuntimeOptions {
  store: GuardianStore;
  env?: Readonly<Record<string, string | undefined>>;
  cwd?: string;
  /** Initial bundle when the store has none active: this file (default bundles/acs.tar.gz), else regoDir compiled. */
  bundlePath?: string;
  regoDir?: string;
  evaluationTimeoutMs?: number;
  /** A deployment's custom builtins module (WasmPolicyEngineOptions.customBuiltinsModule), for every version loaded. */
  customBuiltinsModule?: string;
  log?: (line: string) => void;
  /** preloadBundleFile's result, started before the store opened; served when it is the bundle to serve. */
  preloaded?: Promise<LoadedVersion | undefined>;
}

export interface LifecycleRuntime {
  node: LifecycleNode;
  engine: PolicySlot;
  /** The bundle-service pollers started from the environment (their status feeds /admin/status). */
  pollers: BundleServicePoller[];
  close(): Promise<void>;
}

/** Whether the store says it is a DurableStore (GuardianStore.durable). */
export function isDurableStore(store: GuardianStore): store is DurableStore {
  return store.durable === true;
}

/** A bare Wasm module (`serve --bundle policy.wasm`) wrapped as a bundle; the revision the engine gives it unwrapped. */
function wrapBareWasm(bytes: Uint8Array): Uint8Array {
  if (!(bytes[0] === 0x00 && bytes[1] === 0x61 && bytes[2] === 0x73 && bytes[3] === 0x6d)) return bytes;
  const revision = 'sha256:' + createHash('sha256').update(bytes).update('{}').digest('hex');
  return writeBundle({
    manifest: { revision, wasm: [{ entrypoint: 'acs/decision', module: '/policy.wasm' }] },
    wasm: bytes,
    data: {},
    sources: [],
  });
}

async function initialBundle(
  options: LifecycleRuntimeOptions,
): Promise<{ bytes: Uint8Array; source: string } | undefined> {
  const cwd = options.cwd ?? process.cwd();
  const path = resolve(cwd, options.bundlePath ?? 'bundles/acs.tar.gz');
  if (existsSync(path)) return { bytes: wrapBareWasm(new Uint8Array(readFileSync(path))), source: `file:${path}` };
  if (options.bundlePath) throw new Error(`policy bundle ${path} not found`);
  const regoDir = resolve(cwd, options.regoDir ?? 'rego');
  if (!existsSync(regoDir)) return undefined;
  const compiled = await compileRegoDirectory(regoDir, ['acs/decision']);
  return { bytes: compiled.bundle, source: `rego:${regoDir}` };
}

/** What every version is loaded with: the node's settings, and the preload's, so that one can stand for the other. */
function engineSettings(options: Omit<LifecycleRuntimeOptions, 'store'>): EngineSettings {
  return {
    ...(options.evaluationTimeoutMs ? { timeoutMs: options.evaluationTimeoutMs } : {}),
    ...(options.customBuiltinsModule ? { customBuiltinsModule: options.customBuiltinsModule } : {}),
  };
}

/**
 * Loads the bundle file serve would seed or activate (--bundle, else bundles/acs.tar.gz) — verified and smoke-tested
 * as any activation — while the store is still opening: on a restart that file is usually the active bundle, and
 * its load then overlaps the store's start instead of following it. Undefined when there is no such file or it does
 * not load; the lifecycle then loads what it serves itself and reports any refusal.
 */
export async function preloadBundleFile(
  options: Omit<LifecycleRuntimeOptions, 'store'>,
): Promise<LoadedVersion | undefined> {
  const path = resolve(options.cwd ?? process.cwd(), options.bundlePath ?? 'bundles/acs.tar.gz');
  if (!existsSync(path)) return undefined;
  try {
    const bytes = wrapBareWasm(new Uint8Array(readFileSync(path)));
    return await loadVersion(bytes, engineSettings(options), verificationFromEnv(options.env ?? process.env));
  } catch {
    return undefined;
  }
}

/** Starts the lifecycle on a durable store; the returned engine is what the Guardian evaluates with. */
export async function startLifecycleRuntime(options: LifecycleRuntimeOptions): Promise<LifecycleRuntime> {
  if (!isDurableStore(options.store)) throw new Error('the bundle lifecycle needs a durable store (openStore)');
  const env = options.env ?? process.env;
  const store = options.store;
  const num = (v: string | undefined, d: number): number =>
    v !== undefined && v !== '' && Number.isFinite(Number(v)) ? Number(v) : d;
  const node = new LifecycleNode({
    store,
    ...(env.GUARDIAN_REPLICA_ID ? { replicaId: env.GUARDIAN_REPLICA_ID } : {}),
    engine: engineSettings(options),
    ...(num(env.GUARDIAN_POLICY_WORKERS, 0) > 0 ? { poolSize: Math.floor(num(env.GUARDIAN_POLICY_WORKERS, 0)) } : {}),
    verification: verificationFromEnv(env),
    log: options.log,
  });
  // An explicit --bundle is what the operator asked to serve: activate it (verified, smoke-tested) unless it
  // already is; otherwise the store's active version wins and the default bundle only seeds an empty store.
  const active = await store.getActivePolicyBundle();
  if (options.bundlePath) {
    const explicit = await initialBundle(options);
    if (explicit && active?.bundleSha256 !== sha256Hex(explicit.bytes))
      await node.push(explicit.bytes, { source: explicit.source, activate: true, by: 'serve --bundle' });
  } else if (!active) {
    const seed = await initialBundle(options);
    if (seed) node.options.initialBundle = seed;
  }
  const preloaded = await options.preloaded;
  if (preloaded) node.options.preloaded = preloaded;
  const engine = await node.start();
  const pollers: BundleServicePoller[] = [];
  if (env.GUARDIAN_BUNDLE_SERVICE_URL) {
    const p = new BundleServicePoller({
      name: 'bundle-service',
      url: env.GUARDIAN_BUNDLE_SERVICE_URL,
      longPollSeconds: num(env.GUARDIAN_BUNDLE_SERVICE_LONG_POLL_S, 0),
      minDelayMs: num(env.GUARDIAN_BUNDLE_SERVICE_MIN_DELAY_S, 60) * 1000,
      maxDelayMs: num(env.GUARDIAN_BUNDLE_SERVICE_MAX_DELAY_S, 120) * 1000,
      ...(env.GUARDIAN_BUNDLE_SERVICE_TOKEN
        ? { headers: { authorization: `Bearer ${env.GUARDIAN_BUNDLE_SERVICE_TOKEN}` } }
        : {}),
      onBundle: async (bytes, meta) => {
        // Every replica polls: the first to download a change activates it, the others just follow.
        const active = await node.registry.active();
        if (active?.sha256 === sha256Hex(bytes)) {
          await node.sync();
          return { revision: active.revision };
        }
        const r = await node.push(bytes, { source: meta.source, activate: true, by: 'bundle-service' });
        return { revision: r.activation?.revision ?? r.record.revision };
      },
      onStatus: (s) => node.setStatusDetail('bundle_service', { ...s }),
    });
    p.start();
    pollers.push(p);
  }
  let watcher: DirectoryWatch | undefined;
  // Development default: on PGlite without an explicit --bundle, a rebuilt bundles/acs.tar.gz goes live.
  const devDir = resolve(options.cwd ?? process.cwd(), 'bundles');
  const watchDir =
    env.GUARDIAN_BUNDLE_WATCH_DIR ||
    (store.driver === 'pglite' &&
    !options.bundlePath &&
    env.GUARDIAN_BUNDLE_WATCH !== 'off' &&
    existsSync(join(devDir, 'acs.tar.gz'))
      ? devDir
      : undefined);
  if (watchDir) {
    watcher = watchBundleDirectory(watchDir, node, {
      ...(env.GUARDIAN_BUNDLE_WATCH_DIR ? {} : { file: 'acs.tar.gz' }),
      onEvent: (e) => options.log?.(`bundle watch: ${e.file}: ${e.outcome} ${e.detail}`),
    });
  }
  return {
    node,
    engine,
    pollers,
    async close() {
      watcher?.close();
      await Promise.all(pollers.map((p) => p.stop()));
      await node.stop();
    },
  };
}
