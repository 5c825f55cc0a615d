// Loads the prebuilt AssemblyScript runtime (runtime/runtime.wasm, built by `npm install` → prepare).
import { readFile } from 'node:fs/promises';
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

const runtimePath = fileURLToPath(new URL('./runtime/runtime.wasm', import.meta.url));
let cached: Promise<Uint8Array> | undefined;

interface RuntimeBuilder {
  buildRuntime(opts: { log?: (m: string) => void }): Promise<Uint8Array>;
}

/** The runtime module bytes; builds it on first use if `npm install` did not (e.g. a fresh checkout). */
export function loadRuntimeWasm(): Promise<Uint8Array> {
  cached ??= (async () => {
    if (!existsSync(runtimePath)) {
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
