// App wiring for `guardian serve`, the composition root (ARCHITECTURE.md): store (DATABASE_URL → Postgres, else
// PGlite under the data dir), signature registry (HMAC IKM from GUARDIAN_HMAC_IKM, GUARDIAN_HMAC_IKM_FILE or a dev
// key generated once in the data dir, plus any key files src/crypto loads), policy (the bundle lifecycle on a
// durable store, else bundles/acs.tar.gz, else rego/ compiled at start) and the admin API over the lifecycle.
import { createHash, randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import type { Hono } from 'hono';
import {
  createSignatureRegistry,
  decodeBase64Strict,
  isSignatureAlgorithm,
  type SignatureRegistry,
} from '../crypto/index.ts';
import { createWasmPolicyEngine, importCustomBuiltinsModule } from '../policy/index.ts';
import type { PolicyEngine } from '../policy/types.ts';
import { openStore } from '../store/index.ts';
import { storeOptionsFrom } from '../store/config.ts';
import type { GuardianStore } from '../store/types.ts';
import {
  createGuardian,
  GUARDIAN_VERSION,
  type AuditEvent,
  type Guardian,
  type GuardianOptions,
} from '../acs/pipeline/index.ts';
import { cryptoEnvelopeSignatures } from '../acs/signing/index.ts';
import { sharedValidator } from '../acs/validation/index.ts';
import { isDurableStore, preloadBundleFile, startLifecycleRuntime, type LifecycleRuntime } from '../lifecycle/index.ts';
import { sharedUnpackThread } from '../lifecycle/unpack-thread.ts';
import { readRegoDirectory } from '../rego/sources.ts';
import { adminTokenConfigured } from './admin-tokens.ts';
import type { StartupTimings } from './startup-timings.ts';
import type { GuardianTelemetry, Logger } from '../telemetry/index.ts';
import { GUARDIAN_PROFILES } from '../agbom/formats.ts';

export interface HmacKeyMaterial {
  ikm: Uint8Array;
  source: 'env' | 'file' | 'data-dir' | 'generated';
  /** Where the key lives (file sources only). */
  path?: string;
  /** First 16 hex digits of SHA-256(IKM): identifies the key without revealing it. */
  fingerprint: string;
}

const fingerprint = (ikm: Uint8Array): string => createHash('sha256').update(ikm).digest('hex').slice(0, 16);

function decodeIkm(text: string, where: string): Uint8Array {
  const ikm = decodeBase64Strict(text.trim());
  if (!ikm) throw new Error(`${where}: HMAC IKM must be standard base64`);
  if (ikm.length < 16) throw new Error(`${where}: HMAC IKM must be at least 16 bytes`);
  return ikm;
}

/** GUARDIAN_HMAC_IKM (base64) → GUARDIAN_HMAC_IKM_FILE → <dataDir>/hmac-ikm.key (generated once, mode 0600). */
export function resolveHmacKey(env: NodeJS.ProcessEnv, dataDir: string): HmacKeyMaterial {
  if (env.GUARDIAN_HMAC_IKM) {
    const ikm = decodeIkm(env.GUARDIAN_HMAC_IKM, 'GUARDIAN_HMAC_IKM');
    return { ikm, source: 'env', fingerprint: fingerprint(ikm) };
  }
  if (env.GUARDIAN_HMAC_IKM_FILE) {
    const ikm = decodeIkm(readFileSync(env.GUARDIAN_HMAC_IKM_FILE, 'utf8'), env.GUARDIAN_HMAC_IKM_FILE);
    return { ikm, source: 'file', path: env.GUARDIAN_HMAC_IKM_FILE, fingerprint: fingerprint(ikm) };
  }
  const path = join(dataDir, 'hmac-ikm.key');
  if (existsSync(path)) {
    const ikm = decodeIkm(readFileSync(path, 'utf8'), path);
    return { ikm, source: 'data-dir', path, fingerprint: fingerprint(ikm) };
  }
  mkdirSync(dataDir, { recursive: true });
  const ikm = new Uint8Array(randomBytes(32));
  writeFileSync(path, Buffer.from(ikm).toString('base64') + '\n', { mode: 0o600, flag: 'wx' });
  return { ikm, source: 'generated', path, fingerprint: fingerprint(ikm) };
}

/** bundles/acs.tar.gz (or `bundlePath`) if present, else compile `regoDir` (default rego/) at start. */
export async function loadPolicyEngine(options: {
  bundlePath?: string;
  regoDir?: string;
  cwd?: string;
  evaluationTimeoutMs?: number;
  customBuiltinsModule?: string;
}): Promise<{ engine: PolicyEngine; source: string }> {
  const timeoutMs = options.evaluationTimeoutMs;
  const custom = options.customBuiltinsModule ? { customBuiltinsModule: options.customBuiltinsModule } : {};
  const cwd = options.cwd ?? process.cwd();
  const bundlePath = resolve(cwd, options.bundlePath ?? 'bundles/acs.tar.gz');
  if (existsSync(bundlePath)) {
    return {
      engine: await createWasmPolicyEngine({ bundle: new Uint8Array(readFileSync(bundlePath)), timeoutMs, ...custom }),
      source: bundlePath,
    };
  }
  if (options.bundlePath) throw new Error(`policy bundle ${bundlePath} not found`);
  const regoDir = resolve(cwd, options.regoDir ?? 'rego');
  if (!existsSync(regoDir)) throw new Error(`no policy: neither ${bundlePath} nor ${regoDir} exists`);
  // Loaded lazily: the Rego toolchain is only needed when no prebuilt bundle exists.
  const rego = await import('../rego/index.ts');
  const compiled = await rego.compileBundle({ sources: readRegoDirectory(regoDir), entrypoints: ['acs/decision'] });
  return {
    engine: await createWasmPolicyEngine({ bundle: compiled.bundle, timeoutMs, ...custom }),
    source: `${regoDir} (compiled at start)`,
  };
}

export interface GuardianRuntimeOptions extends Partial<Omit<GuardianOptions, 'store' | 'engine' | 'signatures'>> {
  dataDir?: string;
  databaseUrl?: string;
  env?: NodeJS.ProcessEnv;
  bundlePath?: string;
  regoDir?: string;
  cwd?: string;
  /** Policy evaluation deadline in ms (engine default 100); a late evaluation is DENY evaluation_failed. */
  evaluationTimeoutMs?: number;
  /**
   * The deployment's custom builtins module (default GUARDIAN_POLICY_BUILTINS; relative to the working
   * directory): loaded before anything opens, so a missing or malformed one stops the start.
   */
  customBuiltinsModule?: string;
  /** Ready-made parts (tests, embedding); each replaces the corresponding default. */
  store?: GuardianStore;
  engine?: PolicyEngine;
  /** Records the keys, store and bundle phases (GUARDIAN_STARTUP_TIMINGS). */
  timings?: StartupTimings;
  /** --stdio: stdout carries the protocol (no OCSF on stdout). */
  stdio?: boolean;
  /** Default: pino JSON on stderr at GUARDIAN_LOG_LEVEL (info). */
  logger?: Logger;
}

export interface GuardianRuntime {
  guardian: Guardian;
  store: GuardianStore;
  engine: PolicyEngine;
  registry: SignatureRegistry;
  key: HmacKeyMaterial;
  policySource: string;
  /** The custom builtins module in force (absolute path) and the builtin names it supplies. */
  customBuiltins?: { module: string; names: string[] };
  dataDir: string;
  /** Bundle lifecycle (registry, activation, fleet sync, shadow); absent with a provided engine. */
  lifecycle?: LifecycleRuntime;
  /** Admin API over the lifecycle (and replay jobs), to mount at /admin; present when `lifecycle` is and an admin token is configured. */
  admin?: Hono;
  /** Logs, metrics (/metrics), spans and OCSF events (docs/telemetry.md). */
  telemetry: GuardianTelemetry;
  logger: Logger;
  ready(): Promise<boolean>;
  /** Once serving: finishes, between requests, the preparation start-up left for later (the ACS schemas). */
  warm(): Promise<void>;
  /** Stops the lifecycle, lets pending commits and checkpoints finish, closes the store and keys; `progress` hears each stage. */
  close(progress?: (stage: string) => void): Promise<void>;
}

export async function openGuardianRuntime(options: GuardianRuntimeOptions = {}): Promise<GuardianRuntime> {
  const env = options.env ?? process.env;
  const dataDir = resolve(options.cwd ?? process.cwd(), options.dataDir ?? '.guardian');
  // Checked before anything is opened, so a bad setting leaves nothing to clean up.
  const every = (name: string): number | undefined => {
    const raw = env[name];
    if (raw === undefined || raw === '') return undefined;
    const n = Number(raw);
    if (!Number.isInteger(n) || n <= 0)
      throw new Error(`${name} must be a positive integer, got ${JSON.stringify(raw)}`);
    return n;
  };
  const everyEntries = every('GUARDIAN_CHECKPOINT_EVERY_ENTRIES');
  const everyMs = every('GUARDIAN_CHECKPOINT_EVERY_MS');
  const checkpointAlgorithm = env.GUARDIAN_CHECKPOINT_ALGORITHM || 'HMAC-SHA256';
  if (!isSignatureAlgorithm(checkpointAlgorithm))
    throw new Error(`GUARDIAN_CHECKPOINT_ALGORITHM: unknown algorithm ${JSON.stringify(checkpointAlgorithm)}`);
  const builtinsPath = options.customBuiltinsModule ?? (env.GUARDIAN_POLICY_BUILTINS || undefined);
  const cwd = options.cwd ?? process.cwd();
  const customBuiltinsModule = builtinsPath === undefined ? undefined : resolve(cwd, builtinsPath);
  const customBuiltinNames =
    builtinsPath === undefined ? [] : Object.keys(await importCustomBuiltinsModule(builtinsPath, cwd)).sort();
  const policyOptions = { ...options, ...(customBuiltinsModule ? { customBuiltinsModule } : {}) };
  const timings = options.timings;
  // Imported while the keys and the store open: pino and prom-client stay off the module-load path of `serve`.
  const telemetryModule = import('../telemetry/index.ts');
  // The lifecycle waits for its bundle unpack worker before serving. Started now, the worker boots on another
  // core while this thread reads the keys and opens the store (node.start then finds it answering).
  if (!options.engine && !options.store && env.GUARDIAN_LIFECYCLE !== 'off')
    sharedUnpackThread()
      .warm()
      .catch(() => {});
  const keysDone = timings?.begin('keys');
  const key = resolveHmacKey(env, dataDir);
  const registry = createSignatureRegistry({ hmacIkm: key.ikm, env: { ...env, GUARDIAN_HMAC_IKM: undefined } });
  const ownsStore = !options.store;
  const databaseUrl = options.databaseUrl ?? env.DATABASE_URL;
  // Signed checkpoints make a truncated tail or a consistently rewritten chain detectable by `audit verify`.
  // GUARDIAN_CHECKPOINT_ALGORITHM=ML-DSA-65 signs them asymmetrically (answers stay HMAC), so an auditor holding
  // only the public key can verify the log (ACS-Crypto).
  let checkpointSigner: ReturnType<SignatureRegistry['signer']>;
  try {
    checkpointSigner = registry.signer(checkpointAlgorithm, env.GUARDIAN_CHECKPOINT_KEY_ID || undefined);
  } catch (err) {
    await registry.close();
    throw err;
  }
  keysDone?.();
  const checkpoints = {
    signer: checkpointSigner,
    keyId: checkpointSigner.keyId,
    ...(everyEntries ? { everyEntries } : {}),
    ...(everyMs ? { everyMs } : {}),
  };
  // Same store location rules as the db/audit commands (DATABASE_URL, GUARDIAN_DB_SCHEMA, else PGlite in dataDir).
  const storeDone = timings?.begin('store');
  const storeOpened = options.store
    ? Promise.resolve(options.store)
    : openStore({ ...storeOptionsFrom({ databaseUrl, dataDir }, env), checkpoints });
  // The bundle file loads on this thread while the store opens (mostly on another thread, or in Postgres): on a
  // restart it is usually the active bundle, which the lifecycle then adopts instead of loading after the store.
  const preloaded =
    !options.engine && !options.store && env.GUARDIAN_LIFECYCLE !== 'off'
      ? preloadBundleFile({
          env,
          cwd: options.cwd,
          bundlePath: options.bundlePath,
          evaluationTimeoutMs: options.evaluationTimeoutMs,
          customBuiltinsModule,
        })
      : undefined;
  // The pipeline's schemas are read and registered meanwhile too (createGuardian takes the shared instance).
  sharedValidator();
  const store = await storeOpened;
  storeDone?.();
  const { openLogger, openTelemetry } = await telemetryModule;
  const bundleDone = timings?.begin('bundle');
  let engine: PolicyEngine;
  let telemetry: GuardianTelemetry;
  let policySource: string;
  let lifecycle: LifecycleRuntime | undefined;
  let admin: Hono | undefined;
  let logger: Logger;
  let opened: GuardianTelemetry | undefined;
  try {
    logger = options.logger ?? (await openLogger(env));
    // Opened before the lifecycle so its parts (store commits, replay jobs, shadow) report from the start; what
    // the metrics read of the engine and the lifecycle is read at scrape time.
    telemetry = await openTelemetry({
      env,
      logger,
      policyRevision: () => engine.revision,
      policySha256: () => lifecycle?.engine.current.sha256,
      shadow: () => lifecycle?.node.local().shadow,
      serviceVersion: GUARDIAN_VERSION,
      stdoutIsProtocol: options.stdio,
    });
    const commits = telemetry;
    opened = telemetry;
    store.observeCommits?.((kind, size, seconds) => commits.recordCommit(kind, size, seconds));
    if (options.engine) {
      engine = options.engine;
      policySource = 'provided';
    } else if (isDurableStore(store) && env.GUARDIAN_LIFECYCLE !== 'off') {
      // docs/bundle-lifecycle.md: the engine is the lifecycle's swappable slot (activations, fleet sync, shadow).
      lifecycle = await startLifecycleRuntime({
        store,
        env,
        cwd: options.cwd,
        bundlePath: options.bundlePath,
        regoDir: options.regoDir,
        evaluationTimeoutMs: options.evaluationTimeoutMs,
        customBuiltinsModule,
        log: (l) => logger.info(l),
        ...(preloaded ? { preloaded } : {}),
      });
      // Without a token the admin API would refuse every request: it (zod, OpenAPI, replay, the console) is not
      // loaded at all, and /admin is not mounted.
      if (adminTokenConfigured(env))
        admin = await (await import('./admin.ts')).createAdminApi(lifecycle, store, env, registry, {
          onReplayJob: (status) => commits.recordReplayJob(status),
          ...(customBuiltinsModule ? { customBuiltinsModule } : {}),
        });
      engine = lifecycle.engine;
      policySource = `bundle registry (${lifecycle.engine.current.sha256.slice(0, 12)}, replica ${lifecycle.node.replicaId})`;
    } else {
      ({ engine, source: policySource } = await loadPolicyEngine(policyOptions));
    }
  } catch (err) {
    await lifecycle?.close().catch(() => {});
    await opened?.close().catch(() => {});
    if (ownsStore) await store.close().catch(() => {});
    await registry.close().catch(() => {});
    throw err;
  }
  bundleDone?.();
  const onAudit =
    options.onAudit ??
    ((e: AuditEvent) => logger.warn({ audit: e, request_id: e.requestId, session_id: e.sessionId }, e.detail));
  // acs-crypto is accepted only when ML-DSA-65 can be both verified and signed here (docs/keys.md).
  const profiles = options.profiles ?? [
    ...GUARDIAN_PROFILES,
    ...(registry.acsCryptoAvailable() ? ['acs-crypto'] : []),
    ...telemetry.profiles,
  ];
  const guardianDone = timings?.begin('guardian');
  const guardian = createGuardian({
    ...options,
    profiles,
    store,
    engine,
    signatures: cryptoEnvelopeSignatures(registry),
    onAudit,
    telemetry,
  });
  guardianDone?.();
  return {
    guardian,
    store,
    engine,
    registry,
    key,
    policySource,
    ...(customBuiltinsModule ? { customBuiltins: { module: customBuiltinsModule, names: customBuiltinNames } } : {}),
    dataDir,
    ...(lifecycle ? { lifecycle } : {}),
    ...(admin ? { admin } : {}),
    telemetry,
    logger,
    async warm() {
      await Promise.all([guardian.config.validator.compileInBackground(), telemetry.warm()]);
    },
    async ready() {
      await store.getChainHead('00000000-0000-0000-0000-000000000000');
      return true;
    },
    async close(progress) {
      if (lifecycle) {
        progress?.('stopping the policy lifecycle');
        await lifecycle.close();
      }
      if (ownsStore) {
        progress?.('finishing pending commits and checkpoints, closing the store');
        await store.close();
      }
      progress?.('exporting the last spans and OCSF events');
      await telemetry.close();
      progress?.('closing the key registry');
      await registry.close();
    },
  };
}
