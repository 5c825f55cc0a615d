import { createWriteStream, existsSync, openSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { once } from 'node:events';
import type { Command } from 'commander';
import { CliError, ExitCode } from '../exit-codes.ts';
import {
  exportSession,
  verifyAllChains,
  verifyChain,
  registryCheckpointCheck,
  type ChainReport,
} from '../../audit/index.ts';
import { DEFAULT_DATA_DIR, storeOptionsFrom, type StoreLocationFlags } from '../../store/config.ts';
import { openStore } from '../../store/index.ts';
import { createSignatureRegistry, type SignatureRegistry } from '../../crypto/index.ts';
import { openStoreForCli, withStoreLocation } from './db.ts';

interface KeyFlags {
  keyDir?: string;
  /** Public key files (`<key_id>.pub.json`): what a third-party auditor holds. */
  publicKey?: string[];
}

/** Reads public key files given with --public-key; a file with secret material is refused (an auditor needs none). */
function readPublicKeyFiles(paths: readonly string[]): unknown[] {
  return paths.map((path) => {
    let key: unknown;
    try {
      key = JSON.parse(readFileSync(path, 'utf8'));
    } catch (err) {
      throw new CliError(`--public-key ${path}: ${err instanceof Error ? err.message : String(err)}`, ExitCode.Usage);
    }
    if (JSON.stringify(key).includes('"private_key"')) {
      throw new CliError(
        `--public-key ${path}: the file holds secret key material; give the .pub.json file`,
        ExitCode.Usage,
      );
    }
    return key;
  });
}

/**
 * The HMAC IKM `guardian serve` signs with, looked up the same way but never generated:
 * GUARDIAN_HMAC_IKM (base64) → GUARDIAN_HMAC_IKM_FILE → <data dir>/hmac-ikm.key.
 */
function servedHmacIkm(dataDir: string): Uint8Array | undefined {
  const fromText = (text: string, where: string): Uint8Array => {
    const ikm = Buffer.from(text.trim(), 'base64');
    if (ikm.length < 16 || !/^[A-Za-z0-9+/]+={0,2}$/.test(text.trim()))
      throw new CliError(`${where}: HMAC IKM must be base64 of at least 16 bytes`, ExitCode.Unavailable);
    return new Uint8Array(ikm);
  };
  if (process.env.GUARDIAN_HMAC_IKM) return fromText(process.env.GUARDIAN_HMAC_IKM, 'GUARDIAN_HMAC_IKM');
  const file = process.env.GUARDIAN_HMAC_IKM_FILE || join(dataDir, 'hmac-ikm.key');
  if (!existsSync(file)) return undefined;
  return fromText(readFileSync(file, 'utf8'), file);
}

/** Checkpoint signatures are checked with the deployment's keys (HMAC IKM as above, GUARDIAN_KEY_DIR, --key-dir). */
function openRegistry(flags: KeyFlags & StoreLocationFlags): SignatureRegistry {
  const hmacIkm = servedHmacIkm(flags.dataDir ?? (process.env.GUARDIAN_DATA_DIR || DEFAULT_DATA_DIR));
  const publicKeys = flags.publicKey?.length ? readPublicKeyFiles(flags.publicKey) : undefined;
  try {
    return createSignatureRegistry({
      env: { ...process.env, GUARDIAN_HMAC_IKM: undefined },
      ...(hmacIkm ? { hmacIkm } : {}),
      ...(flags.keyDir ? { dir: flags.keyDir } : {}),
      ...(publicKeys ? { keys: publicKeys } : {}),
      workerPool: false,
    });
  } catch (err) {
    throw new CliError(`cannot load keys: ${err instanceof Error ? err.message : String(err)}`, ExitCode.Unavailable);
  }
}

function printReport(report: ChainReport, json: boolean): void {
  if (json) {
    process.stdout.write(`${JSON.stringify(report)}\n`);
    return;
  }
  const state = report.ok ? 'ok' : 'BROKEN';
  const extra = report.pruned ? ' (pruned)' : '';
  process.stdout.write(
    `${report.sessionId}: ${state}${extra}, ${report.entries} entries, ${report.checkpointsVerified}/${report.checkpoints} checkpoints verified\n`,
  );
  if (report.firstBreak) {
    const b = report.firstBreak;
    process.stdout.write(`  first break: ${b.kind}${b.seq === null ? '' : ` at seq ${b.seq}`}: ${b.message}\n`);
  }
  for (const w of report.warnings.slice(0, 3)) process.stdout.write(`  warning: ${w}\n`);
}

function parseDate(text: string): Date {
  const d = new Date(text);
  if (Number.isNaN(d.getTime()))
    throw new CliError(`not a date: ${JSON.stringify(text)} (use ISO 8601, e.g. 2026-01-31)`, ExitCode.Usage);
  return d;
}

/** Registers `guardian audit verify | export | show | prune`. */
export function registerAuditCommands(program: Command): void {
  const audit = program
    .command('audit')
    .description('Verify, export, inspect and prune the hash-chained audit log (ACS §8)');

  withStoreLocation(
    audit.command('verify').description('Recompute hash chains and check signed checkpoints; exit 1 on a break'),
  )
    .option('--session <id>', 'verify one session')
    .option('--all', 'verify every chain')
    .option(
      '--key-dir <dir>',
      'key files for checkpoint signatures (default GUARDIAN_KEY_DIR); the HMAC key is the one `serve` uses (GUARDIAN_HMAC_IKM, GUARDIAN_HMAC_IKM_FILE, <data dir>/hmac-ikm.key)',
    )
    .option(
      '--public-key <file...>',
      'public key file(s) to check checkpoint signatures with (an auditor holding only the public key)',
    )
    .option('--json', 'one JSON report per line')
    .action(async (flags: StoreLocationFlags & KeyFlags & { session?: string; all?: boolean; json?: boolean }) => {
      if (Boolean(flags.session) === Boolean(flags.all))
        throw new CliError('give exactly one of --session ID or --all', ExitCode.Usage);
      const registry = openRegistry(flags);
      const store = await openStoreForCli(flags);
      try {
        const options = { checkpointSignature: registryCheckpointCheck(registry) };
        if (flags.session) {
          const report = await verifyChain(store, flags.session, options);
          if (report.headSeq < 0 && report.entries === 0 && report.checkpoints === 0)
            throw new CliError(`no chain for session ${flags.session}`, ExitCode.Failed);
          printReport(report, Boolean(flags.json));
          if (!report.ok) process.exitCode = ExitCode.Failed;
        } else {
          const summary = await verifyAllChains(store, options, (r) => {
            if (!r.ok || flags.json) printReport(r, Boolean(flags.json));
          });
          if (!flags.json)
            process.stdout.write(`${summary.chains} chains, ${summary.entries} entries, ${summary.broken} broken\n`);
          if (summary.broken > 0) process.exitCode = ExitCode.Failed;
        }
      } finally {
        await store.close();
        await registry.close();
      }
    });

  withStoreLocation(
    audit
      .command('export')
      .description('JSONL of a session: ContextEntries in the spec form, params, decisions, checkpoints'),
  )
    .requiredOption('--session <id>', 'session to export')
    .option('-o, --out <file>', 'write to a file instead of stdout')
    .action(async (flags: StoreLocationFlags & { session: string; out?: string }) => {
      let fd: number | undefined;
      if (flags.out) {
        try {
          fd = openSync(flags.out, 'w');
        } catch (err) {
          throw new CliError(`cannot write ${flags.out}: ${(err as Error).message}`, ExitCode.Usage);
        }
      }
      const store = await openStoreForCli(flags);
      const out = fd !== undefined ? createWriteStream('', { fd }) : process.stdout;
      try {
        for await (const line of exportSession(store, flags.session)) {
          if (!out.write(`${line}\n`)) await once(out, 'drain');
        }
      } catch (err) {
        if (err instanceof Error && err.message.startsWith('no session'))
          throw new CliError(err.message, ExitCode.Failed);
        throw err;
      } finally {
        if (flags.out) await new Promise<void>((resolve) => (out as ReturnType<typeof createWriteStream>).end(resolve));
        await store.close();
      }
    });

  withStoreLocation(audit.command('show').description("List chains, or one session's entries and decisions"))
    .option('--session <id>', 'show one session')
    .option('--limit <n>', 'rows to show', '50')
    .action(async (flags: StoreLocationFlags & { session?: string; limit: string }) => {
      const limit = Number(flags.limit);
      if (!Number.isInteger(limit) || limit < 1)
        throw new CliError('--limit must be a positive integer', ExitCode.Usage);
      const store = await openStoreForCli(flags);
      try {
        if (!flags.session) {
          for (const c of await store.listChains({ limit })) {
            process.stdout.write(
              `${c.sessionId}  seq ${c.seq}  head ${c.headHash ?? '-'}${c.prunedAt ? '  pruned' : ''}\n`,
            );
          }
          return;
        }
        const session = await store.getSession(flags.session);
        const chain = await store.getChain(flags.session);
        if (!session && !chain) throw new CliError(`no session ${flags.session}`, ExitCode.Failed);
        if (session)
          process.stdout.write(
            `session ${session.id} agent ${session.agentId} created ${session.createdAt.toISOString()}${session.closedAt ? ` closed ${session.closedAt.toISOString()}` : ''}\n`,
          );
        if (chain)
          process.stdout.write(`head seq ${chain.seq} ${chain.headHash ?? '-'}${chain.prunedAt ? ' (pruned)' : ''}\n`);
        for (const e of await store.listContextEntries(flags.session, { limit })) {
          const decision = (e.result as { decision?: unknown } | null)?.decision;
          process.stdout.write(
            `${String(e.seq).padStart(6)}  ${e.content.timestamp ?? '-'}  ${e.content.step_type.padEnd(28)} ${String(decision ?? '-').padEnd(7)} ${e.entryHash.slice(0, 16)}…\n`,
          );
        }
      } finally {
        await store.close();
      }
    });

  withStoreLocation(
    audit.command('prune').description("Delete whole sessions closed before a date; keeps each chain's signed head"),
  )
    .requiredOption('--before <date>', 'ISO 8601 date; sessions closed before it are pruned')
    .action(async (flags: StoreLocationFlags & { before: string }) => {
      const before = parseDate(flags.before);
      const registry = openRegistry(flags);
      let signer: ReturnType<SignatureRegistry['signer']> | undefined;
      try {
        signer = registry.signer(registry.signingAlgorithms().includes('ML-DSA-65') ? 'ML-DSA-65' : 'HMAC-SHA256');
      } catch {
        // No signing key: sessions whose head has no checkpoint yet are skipped, not pruned unsigned.
      }
      let store;
      try {
        store = await openStore({
          ...storeOptionsFrom(flags),
          ...(signer ? { checkpoints: { signer, keyId: signer.keyId, everyMs: 0 } } : {}),
        });
      } catch (err) {
        await registry.close();
        throw new CliError(
          `cannot open the store: ${err instanceof Error ? err.message : String(err)}`,
          ExitCode.Unavailable,
        );
      }
      try {
        const result = await store.pruneClosedSessions(before);
        process.stdout.write(`pruned ${result.sessions} sessions (${result.entries} entries)\n`);
        if (result.skipped.length) {
          process.stdout.write(
            `skipped ${result.skipped.length} sessions with no signed head and no signing key: ${result.skipped.slice(0, 10).join(', ')}\n`,
          );
          process.exitCode = ExitCode.Failed;
        }
      } finally {
        await store.close();
        await registry.close();
      }
    });
}
