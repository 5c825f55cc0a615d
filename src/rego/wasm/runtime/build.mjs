// Compiles the AssemblyScript runtime (assembly/, unmanaged code only) to runtime.wasm, in-process with
// assemblyscript/asc. Called by scripts/build.mjs (npm run build, prepare); docs/wasm-abi.md, runtime build.
import { fileURLToPath } from 'node:url';
import { dirname, join } from 'node:path';
import { writeFile, mkdir, rename } from 'node:fs/promises';

const here = dirname(fileURLToPath(import.meta.url));

/** @param {{log?: (m: string) => void, outFile?: string, names?: boolean}} [opts] */
export async function buildRuntime(opts = {}) {
  const log = opts.log ?? (() => {});
  const outFile = opts.outFile ?? join(here, 'runtime.wasm');
  const asc = await import('assemblyscript/asc');
  const started = Date.now();
  const stdout = asc.createMemoryStream();
  const stderr = asc.createMemoryStream();
  let binary = null;
  const { error } = await asc.main(
    [
      'assembly/index.ts',
      '--baseDir',
      here,
      '--outFile',
      'runtime.wasm',
      '--runtime',
      'stub',
      '--importMemory',
      '--initialMemory',
      '1',
      '--noAssert',
      '--disableWarning',
      '--optimizeLevel',
      '3',
      '--shrinkLevel',
      '0',
      '--use',
      'abort=assembly/alloc/asAbort',
      '--disable',
      'reference-types,gc,multi-value',
      '--enable',
      'simd', // 16-byte string scans (indexOfBytes); Node has had Wasm SIMD on by default since 16.4
      // function names for CPU profiles (GUARDIAN_WASM_NAMES=1, runtime.ts); never in the shipped runtime
      ...(opts.names ? ['--debug'] : []),
    ],
    {
      stdout,
      stderr,
      writeFile(name, contents) {
        if (name.endsWith('.wasm')) binary = contents;
      },
    },
  );
  if (error || !binary) {
    throw new Error(
      `AssemblyScript runtime build failed: ${error ? error.message : 'no output'}\n${stderr.toString()}`,
    );
  }
  await mkdir(dirname(outFile), { recursive: true });
  // write-then-rename: parallel test workers may rebuild at the same time and must never read a torn file
  const tmp = `${outFile}.${process.pid}.tmp`;
  await writeFile(tmp, binary);
  await rename(tmp, outFile);
  log(`runtime.wasm ${binary.length} bytes in ${Date.now() - started} ms`);
  return binary;
}
