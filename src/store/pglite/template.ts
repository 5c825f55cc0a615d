// A PGlite data directory that is already initialised and migrated, kept as one .tar.gz next to the migrations
// (built by `npm run prepare`, scripts/build-pglite-template.ts). A fresh data dir is seeded from it instead of
// running initdb and every migration at the first `serve`: extracting it is much cheaper than initdb in Wasm.
// The archive's first entry names what it was built from (PGlite version, migration files); an archive built
// from anything else is ignored and the store is initialised as before, so a stale template is never used.
import { createHash, randomUUID } from 'node:crypto';
import { createReadStream, createWriteStream, existsSync, readdirSync, readFileSync } from 'node:fs';
import { mkdir, readdir, readFile, rename, rm, rmdir, writeFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { dirname, join, relative, sep } from 'node:path';
import { pipeline } from 'node:stream/promises';
import { createGunzip, createGzip } from 'node:zlib';
import tar from 'tar-stream';
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
export async function writePgliteTemplate(pgdata: string, outFile: string = PGLITE_TEMPLATE_PATH): Promise<void> {
  const pack = tar.pack();
  const tmp = `${outFile}.${randomUUID()}.tmp`;
  const written = pipeline(pack, createGzip({ level: 9 }), createWriteStream(tmp));
  const add = (header: Partial<tar.Header> & { name: string }, data: Buffer = Buffer.alloc(0)): Promise<void> =>
    new Promise((resolve, reject) => pack.entry(header, data, (err) => (err ? reject(err) : resolve())));
  try {
    const key = JSON.stringify({ key: pgliteTemplateKey(), builtAt: new Date().toISOString() });
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

/** The key the template at `template` was built for, or undefined when there is none (or it is unreadable). */
async function builtKey(template: string): Promise<string | undefined> {
  if (!existsSync(template)) return undefined;
  const extract = tar.extract();
  let key: string | undefined;
  extract.on('entry', (header, stream) => {
    const chunks: Buffer[] = [];
    stream.on('data', (c: unknown) => chunks.push(c as Buffer));
    stream.on('end', () => {
      if (header.name === KEY_ENTRY) key = (JSON.parse(Buffer.concat(chunks).toString('utf8')) as { key?: string }).key;
      // Only the first entry matters: stop reading the archive.
      extract.destroy();
    });
  });
  await pipeline(createReadStream(template), createGunzip(), extract).catch(() => {});
  return key;
}

/** Whether the template exists and was built for the current PGlite version and migrations. */
export async function pgliteTemplateIsCurrent(template: string = PGLITE_TEMPLATE_PATH): Promise<boolean> {
  return (await builtKey(template)) === pgliteTemplateKey();
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
  const staging = join(parent, `${SEED_PREFIX}${randomUUID()}`);
  await mkdir(staging, { mode: 0o700 });
  try {
    await extractTemplate(template, staging);
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

/** Extracts the template into `dir`; StaleTemplate when it was built from other inputs. */
async function extractTemplate(template: string, dir: string): Promise<void> {
  const expected = pgliteTemplateKey();
  const extract = tar.extract();
  let first = true;
  extract.on('entry', (header, stream, next) => {
    const done = (err?: unknown): void => {
      if (err) extract.destroy(err as Error);
      else next();
    };
    const chunks: Buffer[] = [];
    stream.on('data', (c: unknown) => chunks.push(c as Buffer));
    stream.on('error', done);
    stream.on('end', () => {
      if (first) {
        first = false;
        const built =
          header.name === KEY_ENTRY ? (JSON.parse(Buffer.concat(chunks).toString('utf8')) as { key?: string }) : {};
        done(built.key === expected ? undefined : new StaleTemplate());
        return;
      }
      const target = join(dir, ...header.name.split('/'));
      if (relative(dir, target).startsWith('..')) return done(new Error(`template entry ${header.name} escapes`));
      const work =
        header.type === 'directory'
          ? mkdir(target, { recursive: true, mode: 0o700 })
          : mkdir(dirname(target), { recursive: true, mode: 0o700 }).then(() =>
              writeFile(target, Buffer.concat(chunks), { mode: 0o600 }),
            );
      work.then(() => done(), done);
    });
  });
  await pipeline(createReadStream(template), createGunzip(), extract);
  if (first) throw new StaleTemplate();
}
