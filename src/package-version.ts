import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const PACKAGE_NAME = 'acs-guardian';

/**
 * The version in acs-guardian's package.json, found by walking up from this module: the same code runs
 * from src/ under tsx and from dist/ when compiled, and a package.json on the way
 * that is not ours (dist/package.json, a workspace root) is skipped by its name.
 */
export function packageVersion(from: string = import.meta.url): string {
  let dir = dirname(fileURLToPath(from));
  for (;;) {
    let manifest: { name?: unknown; version?: unknown } | undefined;
    try {
      manifest = JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8')) as typeof manifest;
    } catch {
      manifest = undefined; // no (readable) package.json here: keep walking up
    }
    if (manifest?.name === PACKAGE_NAME && typeof manifest.version === 'string') return manifest.version;
    const parent = dirname(dir);
    if (parent === dir) throw new Error(`no package.json named ${PACKAGE_NAME} above ${fileURLToPath(from)}`);
    dir = parent;
  }
}
