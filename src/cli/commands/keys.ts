// `guardian keys …`: generate, list and retire signing keys (docs/keys.md). Output never contains secret
// material: only key ids, algorithms, paths and public-key fingerprints.
import { existsSync, statSync } from 'node:fs';
import { randomBytes } from 'node:crypto';
import type { Command } from 'commander';
import { CliError, ExitCode } from '../exit-codes.ts';
import {
  generateKeyFile,
  isSignatureAlgorithm,
  KeyFileError,
  loadKeyFile,
  loadKeyring,
  publicKeyFingerprint,
  retireKeyFile,
  SIGNATURE_ALGORITHMS,
  writeKeyFiles,
  type KeyringEntrySummary,
  type SignatureAlgorithm,
} from '../../crypto/index.ts';

interface GenerateOptions {
  algorithm: string;
  out: string;
  keyId?: string;
  agentId?: string;
  rsaBits?: string;
  json?: boolean;
}

interface ListOptions {
  dir?: string;
  json?: boolean;
}

function defaultKeyId(algorithm: SignatureAlgorithm, now: Date): string {
  const day = now.toISOString().slice(0, 10).replace(/-/g, '');
  return `${algorithm.toLowerCase().replace('+', '_')}-${day}-${randomBytes(3).toString('hex')}`;
}

function keyError(err: unknown): never {
  if (err instanceof KeyFileError) throw new CliError(err.message, ExitCode.Failed);
  throw err;
}

function generate(opts: GenerateOptions): void {
  if (!isSignatureAlgorithm(opts.algorithm)) {
    throw new CliError(
      `unknown algorithm "${opts.algorithm}"; one of: ${SIGNATURE_ALGORITHMS.join(', ')}`,
      ExitCode.Usage,
    );
  }
  const algorithm = opts.algorithm;
  let rsaModulusBits: number | undefined;
  if (opts.rsaBits !== undefined) {
    rsaModulusBits = Number(opts.rsaBits);
    if (!Number.isInteger(rsaModulusBits))
      throw new CliError(`--rsa-bits must be an integer, got "${opts.rsaBits}"`, ExitCode.Usage);
  }
  const now = new Date();
  const keyId = opts.keyId ?? defaultKeyId(algorithm, now);
  try {
    const file = generateKeyFile(algorithm, {
      keyId,
      createdAt: now,
      ...(opts.agentId !== undefined ? { agentId: opts.agentId } : {}),
      ...(rsaModulusBits !== undefined ? { rsaModulusBits } : {}),
    });
    const written = writeKeyFiles(opts.out, file);
    const fingerprint = publicKeyFingerprint(loadKeyFile(file, 'generated'));
    const summary = {
      key_id: keyId,
      algorithm,
      fingerprint,
      private_key_file: written.privatePath,
      public_key_file: written.publicPath,
    };
    if (opts.json) {
      process.stdout.write(JSON.stringify(summary) + '\n');
      return;
    }
    process.stdout.write(`generated ${algorithm} key ${keyId}\n`);
    if (written.privatePath) process.stdout.write(`  private: ${written.privatePath} (mode 0600)\n`);
    if (written.publicPath) process.stdout.write(`  public:  ${written.publicPath}\n`);
    process.stdout.write(`  fingerprint: ${fingerprint}\n`);
  } catch (err) {
    keyError(err);
  }
}

function list(opts: ListOptions): void {
  const dir = opts.dir ?? process.env.GUARDIAN_KEY_DIR;
  if (!dir) throw new CliError('no key directory: pass --dir DIR or set GUARDIAN_KEY_DIR', ExitCode.Usage);
  if (!existsSync(dir)) throw new CliError(`key directory ${dir}: no such directory`, ExitCode.Usage);
  let summaries: KeyringEntrySummary[];
  try {
    summaries = loadKeyring({ dir }).summaries();
  } catch (err) {
    keyError(err);
  }
  // A private key file readable by group/others is reported (not fixed: the operator decides).
  const warnings = summaries
    .filter((s) => s.canSign && s.source.endsWith('.json') && (statSync(s.source).mode & 0o077) !== 0)
    .map((s) => `warning: ${s.source} holds secret key material and is readable by group/others (chmod 600)`);
  if (opts.json) {
    process.stdout.write(JSON.stringify(summaries) + '\n');
  } else if (summaries.length === 0) {
    process.stdout.write(`no keys in ${dir}\n`);
  } else {
    const rows = summaries.map((s) => [
      s.keyId,
      s.algorithm,
      s.status,
      s.canSign && s.status === 'active' ? 'sign+verify' : 'verify',
      s.createdAt,
      s.agentId ?? '-',
      s.fingerprint,
    ]);
    const header = ['KEY ID', 'ALGORITHM', 'STATUS', 'USE', 'CREATED', 'AGENT', 'FINGERPRINT'];
    const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i].length)));
    for (const r of [header, ...rows])
      process.stdout.write(
        r
          .map((c, i) => c.padEnd(widths[i]))
          .join('  ')
          .trimEnd() + '\n',
      );
  }
  for (const w of warnings) process.stderr.write(w + '\n');
}

function retire(keyId: string, opts: { dir?: string }): void {
  const dir = opts.dir ?? process.env.GUARDIAN_KEY_DIR;
  if (!dir) throw new CliError('no key directory: pass --dir DIR or set GUARDIAN_KEY_DIR', ExitCode.Usage);
  if (!existsSync(dir)) throw new CliError(`key directory ${dir}: no such directory`, ExitCode.Usage);
  try {
    const changed = retireKeyFile(dir, keyId);
    process.stdout.write(`retired ${keyId}: it still verifies old signatures but no longer signs\n`);
    for (const p of changed) process.stdout.write(`  updated ${p}\n`);
  } catch (err) {
    keyError(err);
  }
}

/** Registers `guardian keys generate|list|retire`. */
export function registerKeysCommands(program: Command): void {
  const keys = program.command('keys').description('manage signature keys (ACS §10.1 algorithms; see docs/keys.md)');
  keys
    .command('generate')
    .description('generate a key: <key_id>.key.json (secret, mode 0600) and <key_id>.pub.json (public)')
    .requiredOption('--algorithm <alg>', `one of ${SIGNATURE_ALGORITHMS.join(', ')}`)
    .requiredOption('--out <dir>', 'directory to write the key files to (created 0700 if missing)')
    .option('--key-id <id>', 'key id (default <algorithm>-<yyyymmdd>-<random>)')
    .option('--agent-id <id>', 'bind the key to one agent_id (requests from other agents will not verify with it)')
    .option('--rsa-bits <n>', 'RSA modulus for RSA-PSS-SHA256 and its hybrid (2048..8192, default 3072)')
    .option('--json', 'print a JSON summary')
    .action((opts: GenerateOptions) => generate(opts));
  keys
    .command('list')
    .description('list the keys of a directory (never prints secret material)')
    .option('--dir <dir>', 'key directory (default $GUARDIAN_KEY_DIR)')
    .option('--json', 'print JSON')
    .action((opts: ListOptions) => list(opts));
  keys
    .command('retire')
    .description('rotation: mark a key verify-only; the newest active key of its algorithm signs from now on')
    .argument('<key-id>', 'key to retire')
    .option('--dir <dir>', 'key directory (default $GUARDIAN_KEY_DIR)')
    .action((keyId: string, opts: { dir?: string }) => retire(keyId, opts));
}
