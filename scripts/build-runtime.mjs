// Builds the AssemblyScript Wasm runtime (src/rego/compiler/wasm/runtime/) into runtime.wasm once per
// install, so policy compilation only links generated code onto it (docs/wasm-abi.md, runtime build).
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { dirname, join } from 'node:path';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const builder = join(root, 'src/rego/compiler/wasm/runtime/build.mjs');
if (!existsSync(builder)) {
  console.log('build-runtime: no runtime sources yet, nothing to build');
} else {
  const { buildRuntime } = await import(builder);
  await buildRuntime({ log: (m) => console.log(`build-runtime: ${m}`) });
}
