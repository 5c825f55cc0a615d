// Loads the prebuilt AssemblyScript runtime (runtime/runtime.wasm, built by `npm install` → prepare).
// Rebuilds it when missing or older than its sources (a pull that changed runtime/assembly after install).
import { readFile, readdir, stat } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { join } from 'node:path';

const runtimePath = fileURLToPath(new URL('./runtime/runtime.wasm', import.meta.url));
const sourceDir = fileURLToPath(new URL('./runtime/assembly/', import.meta.url));
let cached: Promise<Uint8Array> | undefined;

interface RuntimeBuilder {
  buildRuntime(opts: { log?: (m: string) => void }): Promise<Uint8Array>;
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
      await builder.buildRuntime({});
    }
    return new Uint8Array(await readFile(runtimePath));
  })();
  cached.catch(() => {
    cached = undefined;
  });
  return cached;
}
