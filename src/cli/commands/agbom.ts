// `guardian agbom export | diff`: a session's AgBOM (ACS Inspect) as recorded with its chain, rendered into the
// canonical form or one of its serializations, and what changed between two chain entries (docs/agbom.md).
import { writeFileSync } from 'node:fs';
import type { Command } from 'commander';
import { AGBOM_SERIALIZATIONS, isAgbomSerialization } from '../../agbom/formats.ts';
import { AgbomNotFoundError, agbomChanges, agbomVersionAt } from '../../agbom/history.ts';
import { renderAgbom } from '../../agbom/renderers/index.ts';
import type { StoreLocationFlags } from '../../store/config.ts';
import { CliError, ExitCode } from '../exit-codes.ts';
import { packageVersion } from '../../package-version.ts';
import { openStoreForCli, withStoreLocation } from './db.ts';

function parseSeq(text: string, flag: string): number {
  if (!/^\d+$/.test(text) || !Number.isSafeInteger(Number(text)))
    throw new CliError(`${flag} must be a chain entry seq (0, 1, 2, …), not ${JSON.stringify(text)}`, ExitCode.Usage);
  return Number(text);
}

/** A missing session or AgBOM is the command's failure (exit 1), in one line. */
async function reportingMissing<T>(work: () => Promise<T>): Promise<T> {
  try {
    return await work();
  } catch (err) {
    if (err instanceof AgbomNotFoundError) throw new CliError(err.message, ExitCode.Failed);
    throw err;
  }
}

export function registerAgbomCommands(program: Command): void {
  const agbom = program
    .command('agbom')
    .description("A session's Agent Bill of Materials (ACS Inspect): export it, or diff two points of the chain");

  withStoreLocation(
    agbom.command('export').description('Render the AgBOM in force at a chain entry (default: the latest) in a format'),
  )
    .requiredOption('--session <id>', 'session whose AgBOM to export')
    .option('--at <seq>', 'the AgBOM as of this chain entry seq (default: the latest)')
    .option('--format <format>', `one of ${AGBOM_SERIALIZATIONS.join(', ')}`, 'canonical')
    .option('-o, --out <file>', 'write to a file instead of stdout')
    .action(async (flags: StoreLocationFlags & { session: string; at?: string; format: string; out?: string }) => {
      if (!isAgbomSerialization(flags.format))
        throw new CliError(
          `--format must be one of ${AGBOM_SERIALIZATIONS.join(', ')}, not ${JSON.stringify(flags.format)}`,
          ExitCode.Usage,
        );
      const format = flags.format;
      const at = flags.at === undefined ? undefined : parseSeq(flags.at, '--at');
      const store = await openStoreForCli(flags);
      let body: string;
      try {
        const version = await reportingMissing(() =>
          agbomVersionAt(store, flags.session, at, { name: 'acs-guardian', version: packageVersion() }),
        );
        body = renderAgbom(format, version).body;
      } finally {
        await store.close();
      }
      if (flags.out) {
        try {
          writeFileSync(flags.out, body);
        } catch (err) {
          throw new CliError(`cannot write ${flags.out}: ${(err as Error).message}`, ExitCode.Usage);
        }
      } else process.stdout.write(body);
    });

  withStoreLocation(
    agbom.command('diff').description('Components added, removed and changed between the AgBOM at two chain entries'),
  )
    .requiredOption('--session <id>', 'session whose AgBOM to compare')
    .requiredOption('--from <seq>', 'the earlier chain entry seq')
    .requiredOption('--to <seq>', 'the later chain entry seq')
    .option('--json', 'the comparison as JSON (added, removed, changed with both sides)')
    .action(async (flags: StoreLocationFlags & { session: string; from: string; to: string; json?: boolean }) => {
      const from = parseSeq(flags.from, '--from');
      const to = parseSeq(flags.to, '--to');
      const store = await openStoreForCli(flags);
      try {
        const d = await reportingMissing(() => agbomChanges(store, flags.session, from, to));
        if (flags.json) {
          process.stdout.write(`${JSON.stringify(d)}\n`);
          return;
        }
        const line = (sign: string, c: { id: string; type: string; version?: string }) =>
          `${sign} ${c.id} (${c.type}${c.version === undefined ? '' : ` ${c.version}`})\n`;
        let out = `AgBOM ${d.from ?? '(none)'} at seq ${from} → ${d.to ?? '(none)'} at seq ${to}\n`;
        for (const c of d.added) out += line('+', c);
        for (const c of d.removed) out += line('-', c);
        for (const c of d.changed)
          out += `~ ${c.id} (${c.to.type}${c.from.version !== c.to.version ? ` ${c.from.version ?? '?'} → ${c.to.version ?? '?'}` : ''})\n`;
        if (d.added.length + d.removed.length + d.changed.length === 0) out += 'no change\n';
        process.stdout.write(out);
      } finally {
        await store.close();
      }
    });
}
