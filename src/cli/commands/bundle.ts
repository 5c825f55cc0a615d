// `guardian bundle …`: the policy bundle lifecycle from the command line (docs/bundle-lifecycle.md). Store from
// DATABASE_URL or PGlite under --data-dir, like `guardian serve`; running replicas pick activations up through
// the store (NOTIFY / polling). Signature verification from --verification-key or GUARDIAN_BUNDLE_VERIFY_*.
import { readFileSync, writeFileSync } from 'node:fs';
import { userInfo } from 'node:os';
import type { Command } from 'commander';
import { CliError, ExitCode } from '../exit-codes.ts';

interface StoreFlags {
  dataDir?: string;
  databaseUrl?: string;
  verificationKey?: string;
  verificationAlg?: string;
  verificationKeyId?: string;
  scope?: string;
  json?: boolean;
}

function readInput(file: string): Uint8Array {
  try {
    return new Uint8Array(readFileSync(file));
  } catch (e) {
    throw new CliError(`cannot read ${file}: ${(e as Error).message}`, ExitCode.Usage);
  }
}

function actor(): string {
  let name = 'unknown';
  try {
    name = userInfo().username;
  } catch {
    // no passwd entry (containers): keep "unknown"
  }
  return `cli:${name}`;
}

async function withNode<T>(
  flags: StoreFlags,
  run: (node: import('../../lifecycle/index.ts').LifecycleNode) => Promise<T>,
): Promise<T> {
  const [{ openStore }, { storeOptionsFrom, describeStoreLocation }, lifecycle] = await Promise.all([
    import('../../store/index.ts'),
    import('../../store/config.ts'),
    import('../../lifecycle/index.ts'),
  ]);
  const env: Record<string, string | undefined> = { ...process.env };
  if (flags.verificationKey) {
    env.GUARDIAN_BUNDLE_VERIFY_KEY = flags.verificationKey;
    if (flags.verificationAlg) env.GUARDIAN_BUNDLE_VERIFY_ALG = flags.verificationAlg;
    if (flags.verificationKeyId) env.GUARDIAN_BUNDLE_VERIFY_KEY_ID = flags.verificationKeyId;
    if (flags.scope) env.GUARDIAN_BUNDLE_VERIFY_SCOPE = flags.scope;
  }
  let verification;
  try {
    verification = lifecycle.verificationFromEnv(env);
  } catch (e) {
    throw new CliError(`verification key: ${(e as Error).message}`, ExitCode.Usage);
  }
  const options = storeOptionsFrom({ dataDir: flags.dataDir, databaseUrl: flags.databaseUrl });
  let store;
  try {
    store = await openStore(options);
  } catch (e) {
    throw new CliError(
      `cannot open the store (${describeStoreLocation(options)}): ${(e as Error).message}`,
      ExitCode.Unavailable,
    );
  }
  try {
    return await run(new lifecycle.LifecycleNode({ store, verification, replicaId: `cli-${process.pid}` }));
  } catch (e) {
    if (e instanceof lifecycle.LifecycleError)
      throw new CliError(`${e.code}: ${e.message}`, e.code === 'invalid_bundle' ? ExitCode.Usage : ExitCode.Failed);
    throw e;
  } finally {
    await store.close();
  }
}

const storeOptions = (cmd: Command): Command =>
  cmd
    .option('--data-dir <dir>', 'PGlite data directory (when DATABASE_URL is unset)', '.guardian')
    .option('--database-url <url>', 'Postgres URL (default: DATABASE_URL)')
    .option('--verification-key <file>', 'PEM public key (or HS* secret file) bundles must be signed with')
    .option('--verification-alg <alg>', 'JWS algorithm of the verification key (default RS256)')
    .option('--verification-key-id <id>', 'key id (pinned: the JWS kid header is not trusted)')
    .option('--scope <scope>', 'required signature scope')
    .option('--json', 'machine-readable output');

const out = (flags: StoreFlags, value: unknown, text: string): void => {
  process.stdout.write(flags.json ? JSON.stringify(value, null, 2) + '\n' : text + '\n');
};

/** Registers `guardian bundle push|activate|rollback|list|sign|verify|shadow`. */
export function registerBundleCommands(program: Command): void {
  const bundle = program
    .command('bundle')
    .description('Policy bundle registry, activation, rollback, signing and shadow mode');

  storeOptions(
    bundle
      .command('push <file>')
      .description('Store a bundle in the registry (content-addressed); --activate makes it live')
      .option('--activate', 'activate after storing'),
  ).action(async (file: string, flags: StoreFlags & { activate?: boolean }) => {
    const bytes = readInput(file);
    await withNode(flags, async (node) => {
      const r = await node.push(bytes, { source: `file:${file}`, activate: flags.activate, by: actor() });
      const act = r.activation
        ? `; activated (was ${r.activation.previousRevision ?? 'none'}, ${r.activation.smokeCases} smoke case(s), signature ${r.activation.signature}, ${r.activation.durationMs.toFixed(0)} ms)`
        : '';
      out(flags, r, `stored ${r.record.revision} sha256:${r.record.sha256}${act}`);
    });
  });

  storeOptions(
    bundle
      .command('activate <ref>')
      .description('Activate a registered bundle by revision or sha256 (prefix ≥ 8 hex digits)'),
  ).action(async (ref: string, flags: StoreFlags) => {
    await withNode(flags, async (node) => {
      const r = await node.activate(ref, actor());
      out(flags, r, `activated ${r.revision} sha256:${r.sha256} (was ${r.previousRevision ?? 'none'})`);
    });
  });

  storeOptions(
    bundle.command('rollback').description('Re-activate the bundle that was active before the current one'),
  ).action(async (flags: StoreFlags) => {
    await withNode(flags, async (node) => {
      const r = await node.rollback(actor());
      out(flags, r, `rolled back to ${r.revision} sha256:${r.sha256} (was ${r.previousRevision ?? 'none'})`);
    });
  });

  storeOptions(bundle.command('list').description('Registered bundles, activation history and replicas')).action(
    async (flags: StoreFlags) => {
      await withNode(flags, async (node) => {
        const [bundles, activations, active] = await Promise.all([
          node.registry.list(),
          node.registry.activations(20),
          node.registry.active(),
        ]);
        const { listReplicas } = await import('../../lifecycle/index.ts');
        const replicas = await listReplicas(node.store);
        const lines = bundles.map(
          (b) =>
            `${b.sha256 === active?.sha256 ? '*' : ' '} ${b.sha256.slice(0, 12)}  ${b.revision}  ${b.createdAt.toISOString()}  ${b.source ?? ''}`,
        );
        lines.push(
          '',
          'activations (newest first):',
          ...activations.map(
            (a) =>
              `  ${a.activatedAt.toISOString()}  ${a.revision}  ${a.sha256.slice(0, 12)}  by ${a.activatedBy ?? '?'}`,
          ),
        );
        if (replicas.length)
          lines.push(
            '',
            'replicas:',
            ...replicas.map(
              (r) =>
                `  ${r.replicaId}  ${r.revision}  last sync ${r.lastSync?.toISOString() ?? '-'}${r.stale ? '  (stale)' : ''}${r.lastError ? `  error: ${r.lastError}` : ''}`,
            ),
          );
        out(flags, { bundles, activations, replicas }, lines.join('\n'));
      });
    },
  );

  storeOptions(
    bundle
      .command('shadow [ref]')
      .description('Evaluate a candidate beside the enforcing bundle on every request (never enforced)')
      .option('--stop', 'stop shadow evaluation')
      .option('--report', 'print the differences report'),
  ).action(async (ref: string | undefined, flags: StoreFlags & { stop?: boolean; report?: boolean }) => {
    if (!ref && !flags.stop && !flags.report) throw new CliError('give a revision, --stop or --report', ExitCode.Usage);
    await withNode(flags, async (node) => {
      if (flags.report) {
        const { shadowReport } = await import('../../lifecycle/index.ts');
        const r = await shadowReport(node.store, ref ? (await node.registry.resolve(ref)).sha256 : undefined);
        const lines = [
          `shadow ${r.shadowRevision ?? '(none)'}: ${r.differences} difference(s)`,
          ...r.byMethod.map((g) => `  ${g.count}\t${g.method}\t${g.enforcing} → ${g.shadow}`),
        ];
        out(flags, r, lines.join('\n'));
        return;
      }
      const r = await node.setShadow(flags.stop ? null : (ref as string), actor());
      out(flags, r, r.revision ? `shadowing ${r.revision} sha256:${r.sha256}` : 'shadow stopped');
    });
  });

  bundle
    .command('sign <file>')
    .description("Write /.signatures.json (OPA format: JWS over the files' hashes)")
    .requiredOption('--key <file>', 'PEM private key (PKCS#8) or HS* secret file')
    .option('--alg <alg>', 'JWS algorithm', 'RS256')
    .option('--key-id <id>', 'key id written as kid')
    .option('--scope <scope>', 'signature scope')
    .option('-o, --output <file>', 'output (default: overwrite the input)')
    .action(
      async (file: string, flags: { key: string; alg: string; keyId?: string; scope?: string; output?: string }) => {
        const bytes = readInput(file);
        const keyBytes = readInput(flags.key);
        const { signBundle, LifecycleError } = await import('../../lifecycle/index.ts');
        try {
          const key = /^HS\d+$/.test(flags.alg) ? keyBytes : new TextDecoder().decode(keyBytes);
          const signed = await signBundle(bytes, {
            key: { algorithm: flags.alg, key },
            ...(flags.keyId ? { keyId: flags.keyId } : {}),
            ...(flags.scope ? { scope: flags.scope } : {}),
          });
          writeFileSync(flags.output ?? file, signed);
          process.stdout.write(
            `signed ${flags.output ?? file} (${flags.alg}${flags.keyId ? `, kid ${flags.keyId}` : ''})\n`,
          );
        } catch (e) {
          // Both inputs are the user's: a file that is not a bundle, or a key the algorithm cannot use.
          if (e instanceof LifecycleError) throw new CliError(`${e.code}: ${e.message}`, ExitCode.Usage);
          throw new CliError(`cannot sign: ${(e as Error).message}`, ExitCode.Usage);
        }
      },
    );

  bundle
    .command('verify <file>')
    .description("Check a bundle's signature with the configured verification key (exit 1 when refused)")
    .option('--verification-key <file>', 'PEM public key or HS* secret file (default GUARDIAN_BUNDLE_VERIFY_KEY)')
    .option('--verification-alg <alg>', 'JWS algorithm (default RS256)')
    .option('--verification-key-id <id>', 'pinned key id')
    .option('--scope <scope>', 'required scope')
    .action(async (file: string, flags: StoreFlags) => {
      const bytes = readInput(file);
      if (flags.verificationKey) readInput(flags.verificationKey);
      const { verificationFromEnv, verifyBundleSignature, LifecycleError } = await import('../../lifecycle/index.ts');
      const { BundleError, readBundle } = await import('../../rego/bundle/index.ts');
      const env: Record<string, string | undefined> = { ...process.env };
      if (flags.verificationKey) env.GUARDIAN_BUNDLE_VERIFY_KEY = flags.verificationKey;
      if (flags.verificationAlg) env.GUARDIAN_BUNDLE_VERIFY_ALG = flags.verificationAlg;
      if (flags.verificationKeyId) env.GUARDIAN_BUNDLE_VERIFY_KEY_ID = flags.verificationKeyId;
      if (flags.scope) env.GUARDIAN_BUNDLE_VERIFY_SCOPE = flags.scope;
      let parsed;
      try {
        parsed = readBundle(bytes);
      } catch (e) {
        if (e instanceof BundleError) throw new CliError(`${file}: not a bundle: ${e.message}`, ExitCode.Usage);
        throw e;
      }
      let verification;
      try {
        verification = verificationFromEnv(env);
      } catch (e) {
        throw new CliError(`verification key: ${(e as Error).message}`, ExitCode.Usage);
      }
      try {
        const r = await verifyBundleSignature(parsed, verification);
        process.stdout.write(
          r.status === 'verified' ? `verified (key ${r.keyId})\n` : 'unsigned (no verification configured)\n',
        );
      } catch (e) {
        if (e instanceof LifecycleError) throw new CliError(`refused: ${e.code}: ${e.message}`, ExitCode.Failed);
        throw new CliError(`refused: ${(e as Error).message}`, ExitCode.Failed);
      }
    });
}
