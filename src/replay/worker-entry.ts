// Which file a replay worker thread starts from. Through tsx (worker-bootstrap.mjs) a worker transforms and
// links its ~230-module graph itself: ≈ 0.9 s of CPU per worker before it replays anything. Instead worker.ts
// and its graph are bundled once into one JS file (esbuild, the transformer tsx itself uses), cached under
// node_modules/.cache/guardian/ and reused while its inputs are byte-identical; a worker then starts in ≈ 0.2 s.
// Any failure (no esbuild, unwritable cache, build error) falls back to the tsx bootstrap: slower, same code.
import { createHash } from 'node:crypto';
import { access, mkdir, readdir, readFile, rename, stat, unlink, writeFile } from 'node:fs/promises';
import { join, relative, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

export const TSX_WORKER_BOOTSTRAP = new URL('./worker-bootstrap.mjs', import.meta.url);
const WORKER_SOURCE = fileURLToPath(new URL('./worker.ts', import.meta.url));
const PACKAGE_ROOT = fileURLToPath(new URL('../../', import.meta.url));
const DEFAULT_CACHE_DIR = join(PACKAGE_ROOT, 'node_modules', '.cache', 'guardian');
/** Bumped when the build options below change (the inputs' hash would not see it). */
const BUILD_VERSION = 1;

interface Manifest {
  version: number;
  /** Package-root-relative input paths, as esbuild's metafile lists them. */
  inputs: string[];
  /** SHA-256 over the inputs' paths and bytes. */
  inputsHash: string;
  bundle: string;
}

async function hashInputs(inputs: readonly string[]): Promise<string> {
  const h = createHash('sha256');
  h.update(`${BUILD_VERSION}\0${PACKAGE_ROOT}\0`);
  for (const input of inputs) {
    h.update(`${input}\0`);
    h.update(await readFile(join(PACKAGE_ROOT, input)));
    h.update('\0');
  }
  return h.digest('hex');
}

/** Written under a temporary name and renamed: a concurrent reader sees the old file or the new, never half. */
async function writeAtomically(path: string, text: string): Promise<void> {
  const tmp = `${path}.${process.pid}.${Date.now()}.tmp`;
  await writeFile(tmp, text);
  await rename(tmp, path);
}

async function cachedBundle(cacheDir: string): Promise<URL | null> {
  const manifest = JSON.parse(
    await readFile(join(cacheDir, 'replay-worker.json'), 'utf8').catch(() => 'null'),
  ) as Manifest | null;
  if (manifest?.version !== BUILD_VERSION || !Array.isArray(manifest.inputs) || typeof manifest.bundle !== 'string')
    return null;
  const bundle = join(cacheDir, manifest.bundle);
  const same = await hashInputs(manifest.inputs).then(
    (h) => h === manifest.inputsHash,
    () => false,
  );
  return same &&
    (await access(bundle).then(
      () => true,
      () => false,
    ))
    ? pathToFileURL(bundle)
    : null;
}

async function buildBundle(cacheDir: string): Promise<URL> {
  const esbuild = await import('esbuild');
  const result = await esbuild.build({
    entryPoints: [WORKER_SOURCE],
    absWorkingDir: PACKAGE_ROOT,
    bundle: true,
    platform: 'node',
    format: 'esm',
    target: 'node20',
    write: false,
    metafile: true,
    logLevel: 'silent',
    // opa-wasm is also loaded with require() by src/policy/engine.ts: kept external so both get one instance.
    external: ['@open-policy-agent/opa-wasm'],
    // Bundled CommonJS packages (ajv …) call require() for node built-ins, which ESM output lacks.
    banner: {
      js: "import { createRequire as __guardianCreateRequire } from 'node:module';\nconst require = __guardianCreateRequire(import.meta.url);",
    },
    plugins: [
      {
        name: 'source-import-meta-url',
        setup(build) {
          // Each module keeps its own import.meta.url (schemas and packages are found next to the sources).
          build.onLoad({ filter: /\.ts$/ }, async (args) => ({
            contents: (await readFile(args.path, 'utf8')).replaceAll(
              'import.meta.url',
              JSON.stringify(pathToFileURL(args.path).href),
            ),
            loader: 'ts',
          }));
        },
      },
    ],
  });
  const text = result.outputFiles[0].text;
  const inputs = Object.keys(result.metafile.inputs)
    .map((p) => relative(PACKAGE_ROOT, resolve(PACKAGE_ROOT, p)))
    .sort();
  const bundle = `replay-worker-${createHash('sha256').update(text).digest('hex').slice(0, 16)}.mjs`;
  await mkdir(cacheDir, { recursive: true });
  await writeAtomically(join(cacheDir, bundle), text);
  const manifest: Manifest = { version: BUILD_VERSION, inputs, inputsHash: await hashInputs(inputs), bundle };
  await writeAtomically(join(cacheDir, 'replay-worker.json'), JSON.stringify(manifest));
  await pruneOldBundles(cacheDir, bundle).catch(() => undefined);
  return pathToFileURL(join(cacheDir, bundle));
}

/** Bundles of older sources, once no process can still be starting workers from them. */
async function pruneOldBundles(cacheDir: string, keep: string): Promise<void> {
  const cutoff = Date.now() - 60 * 60 * 1000;
  for (const name of await readdir(cacheDir)) {
    if (name === keep || !/^replay-worker-[0-9a-f]{16}\.mjs$/.test(name)) continue;
    const path = join(cacheDir, name);
    if ((await stat(path)).mtimeMs < cutoff) await unlink(path).catch(() => undefined);
  }
}

/** The bundled worker, built into `cacheDir` unless a bundle of the current sources is there; throws on failure. */
export async function bundledReplayWorker(cacheDir = DEFAULT_CACHE_DIR): Promise<URL> {
  return (await cachedBundle(cacheDir)) ?? buildBundle(cacheDir);
}

let entry: Promise<URL> | undefined;

/**
 * The URL to start replay workers from (once per process). GUARDIAN_REPLAY_WORKER=tsx forces the tsx
 * bootstrap (A/B runs, or a read-only install without a cache).
 */
export function replayWorkerEntry(): Promise<URL> {
  entry ??=
    process.env.GUARDIAN_REPLAY_WORKER === 'tsx'
      ? Promise.resolve(TSX_WORKER_BOOTSTRAP)
      : bundledReplayWorker().catch(() => TSX_WORKER_BOOTSTRAP);
  return entry;
}
