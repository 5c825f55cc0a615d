// A PGlite data directory that is already initialised and migrated, kept as one .tar.gz next to the migrations
// (built by `npm run prepare`, scripts/build-pglite-template.ts). A fresh data dir is seeded from it instead of
// running initdb and every migration at the first `serve`: extracting it is much cheaper than initdb in Wasm.
// The archive's first entry names what it was built from (PGlite version, migration files); an archive built
// from anything else is ignored and the store is initialised as before, so a stale template is never used.
import { createHash, randomUUID } from 'node:crypto';
import { createWriteStream, existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { mkdir, readdir, readFile, rename, rm, rmdir } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { dirname, join, relative, sep } from 'node:path';
import { pipeline } from 'node:stream/promises';
import { promisify } from 'node:util';
import { createGzip, gunzip } from 'node:zlib';
import type tar from 'tar-stream';
import { MIGRATIONS_FOLDER } from '../migrations-folder.ts';

/** Where `npm run prepare` writes the template and where a fresh data dir is seeded from. */
export const PGLITE_TEMPLATE_PATH = join(MIGRATIONS_FOLDER, 'pglite-template.tar.gz');

/** First entry of the archive: what the template was built from. */
const KEY_ENTRY = 'guardian-pglite-template.json';
/** Bump when the way the template is made changes. */
const TEMPLATE_FORMAT = 1;

function pgliteVersion(): string {
  const require = createRequire(import.meta.url);
  // The package's exports hide package.json; its entry point sits in dist/, one level below it.
  const entry = require.resolve('@electric-sql/pglite');
  const manifest = JSON.parse(readFileSync(join(dirname(entry), '..', 'package.json'), 'utf8')) as {
    version: string;
  };
  return manifest.version;
}

/** Identifies the inputs of a template: PGlite's version and every migration file, by content. */
export function pgliteTemplateKey(migrationsFolder: string = MIGRATIONS_FOLDER): string {
  const hash = createHash('sha256');
  hash.update(`format ${TEMPLATE_FORMAT}\npglite ${pgliteVersion()}\n`);
  const journal = readFileSync(join(migrationsFolder, 'meta', '_journal.json'));
  hash.update(journal);
  const sqlFiles = readdirSync(migrationsFolder)
    .filter((f) => f.endsWith('.sql'))
    .sort();
  for (const file of sqlFiles) {
    hash.update(`\n${file}\n`);
    hash.update(readFileSync(join(migrationsFolder, file)));
  }
  return hash.digest('hex');
}

async function* filesUnder(root: string, dir = root): AsyncGenerator<{ path: string; isDir: boolean }> {
  for (const entry of (await readdir(dir, { withFileTypes: true })).sort((a, b) => a.name.localeCompare(b.name))) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) {
      yield { path, isDir: true };
      yield* filesUnder(root, path);
    } else if (entry.isFile()) yield { path, isDir: false };
  }
}

/** Packs a closed (cleanly shut down) PGlite data directory as a template for the current migrations. */
export async function writePgliteTemplate(
  pgdata: string,
  outFile: string = PGLITE_TEMPLATE_PATH,
  migrationsFolder: string = MIGRATIONS_FOLDER,
): Promise<void> {
  // Loaded here: only the template build writes archives; seeding reads them without it.
  const { default: tarStream } = await import('tar-stream');
  const pack = tarStream.pack();
  const tmp = `${outFile}.${randomUUID()}.tmp`;
  const written = pipeline(pack, createGzip({ level: 9 }), createWriteStream(tmp));
  const add = (header: Partial<tar.Header> & { name: string }, data: Buffer = Buffer.alloc(0)): Promise<void> =>
    new Promise((resolve, reject) => pack.entry(header, data, (err) => (err ? reject(err) : resolve())));
  try {
    const key = JSON.stringify({ key: pgliteTemplateKey(migrationsFolder), builtAt: new Date().toISOString() });
    await add({ name: KEY_ENTRY, type: 'file', mode: 0o600 }, Buffer.from(key));
    for await (const { path, isDir } of filesUnder(pgdata)) {
      const name = relative(pgdata, path).split(sep).join('/');
      if (isDir) await add({ name, type: 'directory', mode: 0o700 });
      else await add({ name, type: 'file', mode: 0o600 }, await readFile(path));
    }
    pack.finalize();
    await written;
    await rename(tmp, outFile);
  } catch (err) {
    pack.destroy();
    await written.catch(() => {});
    await rm(tmp, { force: true });
    throw err;
  }
}

class StaleTemplate extends Error {}

const gunzipAsync = promisify(gunzip);

interface TemplateEntry {
  name: string;
  isDir: boolean;
  data: Uint8Array;
}

/** The entries of an uncompressed ustar archive as writePgliteTemplate makes them (files and directories). */
function* tarEntries(archive: Uint8Array): Generator<TemplateEntry> {
  const text = (from: number, length: number): string => {
    const field = archive.subarray(from, from + length);
    const end = field.indexOf(0);
    return Buffer.from(end < 0 ? field : field.subarray(0, end)).toString('utf8');
  };
  for (let at = 0; at + 512 <= archive.length; ) {
    if (archive[at] === 0) return; // the end-of-archive blocks
    const size = Number.parseInt(text(at + 124, 12).trim() || '0', 8);
    const type = String.fromCharCode(archive[at + 156] || 0x30);
    const prefix = text(at + 345, 155);
    const name = (prefix ? `${prefix}/` : '') + text(at, 100);
    if (type !== '0' && type !== '5') throw new StaleTemplate(`unexpected tar entry type ${type} for ${name}`);
    yield { name: name.replace(/\/$/, ''), isDir: type === '5', data: archive.subarray(at + 512, at + 512 + size) };
    at += 512 + Math.ceil(size / 512) * 512;
  }
}

/** The template's archive (uncompressed), if it was built for the current PGlite and migrations. */
async function currentTemplate(template: string): Promise<Uint8Array | undefined> {
  if (!existsSync(template)) return undefined;
  try {
    // Gunzipped on the thread pool: the event loop stays free meanwhile.
    const archive = await gunzipAsync(await readFile(template));
    const first = tarEntries(archive).next();
    if (first.done || first.value.name !== KEY_ENTRY) return undefined;
    const built = JSON.parse(Buffer.from(first.value.data).toString('utf8')) as { key?: string };
    return built.key === pgliteTemplateKey() ? archive : undefined;
  } catch {
    // Unreadable, not gzip, not our tar, or a key entry that is not JSON: no usable template, never a crash.
    return undefined;
  }
}

/** Whether the template exists and was built for the current PGlite version and migrations. */
export async function pgliteTemplateIsCurrent(template: string = PGLITE_TEMPLATE_PATH): Promise<boolean> {
  return (await currentTemplate(template)) !== undefined;
}

/**
 * Seeds `pgdata` from the template when `pgdata` holds no database yet (absent or an empty directory) and the
 * template was built for the current migrations. It is extracted beside `pgdata` and renamed into place, so an
 * interrupted seeding (kill -9) leaves no half data directory: the next start finds none and seeds again.
 * Returns false when nothing was seeded (no database needed, or no usable template: the caller then lets
 * PGlite initialise the directory as it would without a template).
 */
export async function seedFromPgliteTemplate(
  pgdata: string,
  template: string = PGLITE_TEMPLATE_PATH,
): Promise<boolean> {
  if (!existsSync(template)) return false;
  const existing = await readdir(pgdata).catch(() => undefined);
  if (existing && existing.length > 0) return false;
  const parent = dirname(pgdata);
  await mkdir(parent, { recursive: true });
  // Left by an interrupted seeding of this data dir.
  for (const name of await readdir(parent))
    if (name.startsWith(SEED_PREFIX)) await rm(join(parent, name), { recursive: true, force: true });
  const archive = await currentTemplate(template);
  if (!archive) return false;
  const staging = join(parent, `${SEED_PREFIX}${randomUUID()}`);
  await mkdir(staging, { mode: 0o700 });
  try {
    extractInto(archive, staging);
    if (existing) await rmdir(pgdata);
    await rename(staging, pgdata);
    return true;
  } catch {
    // A stale or unreadable template (or a data dir another process seeded meanwhile) only costs the initdb it
    // would have saved: PGlite then initialises or opens the directory as it does without a template.
    return false;
  } finally {
    await rm(staging, { recursive: true, force: true });
  }
}

const SEED_PREFIX = '.pgdata-seed-';

/** Writes the archive's entries (after the key) under `dir`. */
function extractInto(archive: Uint8Array, dir: string): void {
  let first = true;
  for (const entry of tarEntries(archive)) {
    if (first) {
      first = false;
      continue;
    }
    const target = join(dir, ...entry.name.split('/'));
    if (relative(dir, target).startsWith('..')) throw new StaleTemplate(`template entry ${entry.name} escapes`);
    if (entry.isDir) mkdirSync(target, { recursive: true, mode: 0o700 });
    else writeFileSync(target, entry.data, { mode: 0o600 });
  }
}
