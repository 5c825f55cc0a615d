// Loads the prebuilt AssemblyScript runtime (runtime/runtime.wasm, built by `npm install` → prepare).
// Rebuilds it when missing or older than its sources (a pull that changed runtime/assembly after install).
import { readFile, readdir, stat } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { join } from 'node:path';

// GUARDIAN_WASM_NAMES=1: a runtime and policy modules with function names, for CPU profiles; built apart
// (under node_modules/.cache) so the shipped runtime.wasm stays nameless.
export const WASM_NAMES = process.env.GUARDIAN_WASM_NAMES === '1';
const runtimePath = WASM_NAMES
  ? fileURLToPath(new URL('../../../node_modules/.cache/guardian/runtime-names.wasm', import.meta.url))
  : fileURLToPath(new URL('./runtime/runtime.wasm', import.meta.url));
const sourceDir = fileURLToPath(new URL('./runtime/assembly/', import.meta.url));
let cached: Promise<Uint8Array> | undefined;

interface RuntimeBuilder {
  buildRuntime(opts: { log?: (m: string) => void; outFile?: string; names?: boolean }): Promise<Uint8Array>;
}

async function isStale(): Promise<boolean> {
  const built = await stat(runtimePath).catch(() => undefined);
  if (!built) return true;
  const names = await readdir(sourceDir).catch(() => [] as string[]);
  for (const name of names) {
    const s = await stat(join(sourceDir, name));
    if (s.mtimeMs > built.mtimeMs) return true;
  }
  return false;
}

/** The runtime module bytes (built on first use if absent or stale). */
export function loadRuntimeWasm(): Promise<Uint8Array> {
  cached ??= (async () => {
    if (await isStale()) {
      const builder = (await import(new URL('./runtime/build.mjs', import.meta.url).href)) as RuntimeBuilder;
      await builder.buildRuntime(WASM_NAMES ? { outFile: runtimePath, names: true } : {});
    }
    return new Uint8Array(await readFile(runtimePath));
  })();
  cached.catch(() => {
    cached = undefined;
  });
  return cached;
}
