// A directory of Rego sources (and an optional root data.json) compiled into a bundle: the bundle a Guardian
// starts with when no bundle file is given (runtime.ts), and each rebuild of `--watch` (watch.ts). The compiler is
// imported only when a directory is compiled, so a Guardian serving a built bundle never loads it.
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { CompiledBundle } from '../rego/index.ts';
import { readRegoDirectory } from '../rego/sources.ts';

export async function compileRegoDirectory(dir: string, entrypoints: string[]): Promise<CompiledBundle> {
  const rego = await import('../rego/index.ts');
  const dataPath = join(dir, 'data.json');
  const data = existsSync(dataPath)
    ? (JSON.parse(readFileSync(dataPath, 'utf8')) as Record<string, unknown>)
    : undefined;
  return rego.compileBundle({
    sources: readRegoDirectory(dir),
    entrypoints,
    ...(data ? { data } : {}),
  });
}
