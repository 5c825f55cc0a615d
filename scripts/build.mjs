// `npm run build` (also `prepare` and `npm start`): the AssemblyScript runtime (runtime.wasm), then dist/ —
// the sources compiled by tsc (tsconfig.build.json: ESM, .d.ts, source maps) plus the non-TypeScript files the
// code reads beside itself at run time (ACS schemas, runtime.wasm). dist/ mirrors src/ at the same depth, so
// paths from a module to repo-root assets (migrations/, bundles/, rego/) resolve the same from both.
//
// A stamp (dist/.build-inputs) holds a hash of every input; when it matches, nothing is rebuilt, so running
// this before every start costs a hash of src/ instead of a compile. `--check` only reports staleness (exit 1).
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import {
  copyFileSync,
  existsSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const src = join(root, 'src');
const dist = join(root, 'dist');
const stampFile = join(dist, '.build-inputs');
const runtimeDir = join(src, 'rego/wasm/runtime');
const log = (m) => console.error(`build: ${m}`);

/** Files under `dir`, repo-relative with forward slashes, sorted. */
function filesUnder(dir) {
  const out = [];
  const visit = (d) => {
    for (const entry of readdirSync(d, { withFileTypes: true })) {
      const path = join(d, entry.name);
      if (entry.isDirectory()) visit(path);
      else if (entry.isFile()) out.push(relative(root, path).split('\\').join('/'));
    }
  };
  visit(dir);
  return out.sort();
}

/** The runtime's AssemblyScript sources and builder are build inputs, not run-time files. */
const isRuntimeSource = (file) =>
  file.startsWith('src/rego/wasm/runtime/assembly/') || file === 'src/rego/wasm/runtime/build.mjs';
/** The console's browser sources: bundled by esbuild (buildConsole), not copied. */
const isConsoleSource = (file) => file.startsWith('src/console/ui/');
/** Non-TypeScript files copied beside the compiled modules (read through import.meta.url). */
const isAsset = (file) => !file.endsWith('.ts') && !isRuntimeSource(file) && !isConsoleSource(file);

function inputsHash() {
  const h = createHash('sha256');
  const typescript = JSON.parse(
    readFileSync(createRequire(import.meta.url).resolve('typescript/package.json'), 'utf8'),
  );
  h.update(`typescript ${typescript.version}\0`);
  for (const file of [...filesUnder(src), 'tsconfig.json', 'tsconfig.build.json', 'scripts/build.mjs']) {
    h.update(`${file}\0`);
    h.update(readFileSync(join(root, file)));
    h.update('\0');
  }
  return h.digest('hex');
}

/** The operator console (docs/console.md): Preact + htm and the stylesheet, one ES module and one CSS file. */
async function buildConsole() {
  const { build } = await import('esbuild');
  await build({
    entryPoints: { app: join(src, 'console/ui/main.js') },
    bundle: true,
    format: 'esm',
    target: 'es2022',
    minify: true,
    legalComments: 'none',
    outdir: join(dist, 'console/assets'),
    logLevel: 'warning',
  });
}

async function buildRuntimeWasm() {
  const { buildRuntime } = await import(join(runtimeDir, 'build.mjs'));
  await buildRuntime({ log: (m) => log(`runtime: ${m}`) });
}

/** Removes compiled files and assets whose source is gone (tsc never deletes). */
function pruneOrphans(sources) {
  const expected = new Set();
  for (const file of sources) {
    const rel = file.slice('src/'.length);
    if (file.endsWith('.ts') && !isRuntimeSource(file)) {
      const base = rel.slice(0, -'.ts'.length);
      for (const ext of ['.js', '.js.map', '.d.ts', '.d.ts.map']) expected.add(base + ext);
    } else if (isAsset(file)) expected.add(rel);
  }
  for (const file of filesUnder(dist)) {
    const rel = file.slice('dist/'.length);
    if (!rel.startsWith('.') && !expected.has(rel)) rmSync(join(root, file));
  }
}

/** runtime.wasm is missing or older than one of its AssemblyScript sources. */
function runtimeStale(runtimeWasm) {
  if (!existsSync(runtimeWasm)) return true;
  const built = statSync(runtimeWasm).mtimeMs;
  return filesUnder(join(runtimeDir, 'assembly')).some((file) => statSync(join(root, file)).mtimeMs > built);
}

const check = process.argv.includes('--check');
if (runtimeStale(join(runtimeDir, 'runtime.wasm'))) {
  if (check) {
    log('runtime.wasm is missing or stale: run `npm run build`');
    process.exit(1);
  }
  await buildRuntimeWasm();
}
const hash = inputsHash();
const stamp = existsSync(stampFile) ? readFileSync(stampFile, 'utf8').trim() : '';
if (stamp === hash) {
  if (!check) log('dist/ is up to date');
} else if (check) {
  log('dist/ is older than the sources: run `npm run build`');
  process.exit(1);
} else {
  const started = Date.now();
  rmSync(stampFile, { force: true });
  const tsc = createRequire(import.meta.url).resolve('typescript/bin/tsc');
  const run = spawnSync(process.execPath, [tsc, '-p', join(root, 'tsconfig.build.json')], { stdio: 'inherit' });
  if (run.status !== 0) {
    log(`tsc failed (exit ${run.status ?? run.signal})`);
    process.exit(1);
  }
  const sources = filesUnder(src);
  for (const file of sources.filter(isAsset)) {
    const to = join(dist, file.slice('src/'.length));
    mkdirSync(dirname(to), { recursive: true });
    copyFileSync(join(root, file), to);
  }
  pruneOrphans(sources);
  await buildConsole();
  // Hashed again: a source edited while tsc ran leaves the stamp behind, and the next run rebuilds.
  writeFileSync(stampFile, `${hash === inputsHash() ? hash : 'edited during build'}\n`);
  log(`dist/ built in ${((Date.now() - started) / 1000).toFixed(1)} s`);
}
