import type { Command } from 'commander';
import { CliError, ExitCode } from '../exit-codes.ts';
import { openStore } from '../../store/index.ts';
import { describeStoreLocation, storeOptionsFrom, type StoreLocationFlags } from '../../store/config.ts';
import type { DurableStore } from '../../store/types.ts';

/** Adds the flags that say where the store is (shared by `db` and `audit`). */
export function withStoreLocation(command: Command): Command {
  return command
    .option(
      '--data-dir <dir>',
      'PGlite data directory root (default .guardian, or GUARDIAN_DATA_DIR); ignored when a database URL is set',
    )
    .option('--database-url <url>', 'Postgres connection string (default DATABASE_URL)')
    .option('--schema <name>', 'Postgres schema holding the tables (default GUARDIAN_DB_SCHEMA, else search_path)');
}

/** Opens the store the flags name; an unreachable database is exit code 4, never a stack trace. */
export async function openStoreForCli(flags: StoreLocationFlags, migrate = true): Promise<DurableStore> {
  const options = storeOptionsFrom(flags);
  try {
    return await openStore({ ...options, skipMigrations: !migrate });
  } catch (err) {
    const reason = err instanceof Error ? err.message : String(err);
    throw new CliError(`cannot open the store (${describeStoreLocation(options)}): ${reason}`, ExitCode.Unavailable);
  }
}

/** Registers `guardian db migrate` and `guardian db status`. */
export function registerDbCommands(program: Command): void {
  const db = program.command('db').description('Database schema and status');
  withStoreLocation(
    db.command('migrate').description('Apply pending schema migrations (idempotent; safe with several replicas)'),
  ).action(async (flags: StoreLocationFlags) => {
    const store = await openStoreForCli(flags, false);
    try {
      await store.migrate();
      process.stdout.write(`migrations applied (${describeStoreLocation(storeOptionsFrom(flags))})\n`);
    } catch (err) {
      throw new CliError(`migration failed: ${err instanceof Error ? err.message : String(err)}`, ExitCode.Unavailable);
    } finally {
      await store.close();
    }
  });
  withStoreLocation(db.command('status').description('Show the store location and row counts'))
    .option('--json', 'print JSON')
    .action(async (flags: StoreLocationFlags & { json?: boolean }) => {
      const store = await openStoreForCli(flags);
      try {
        const counts = await store.countRows();
        const status = { store: describeStoreLocation(storeOptionsFrom(flags)), driver: store.driver, counts };
        process.stdout.write(
          flags.json
            ? `${JSON.stringify(status)}\n`
            : `${status.store}\n${Object.entries(counts)
                .map(([t, n]) => `  ${t.padEnd(16)} ${n}`)
                .join('\n')}\n`,
        );
      } finally {
        await store.close();
      }
    });
}
