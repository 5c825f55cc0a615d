// Reading a policy directory: every `.rego` module below it except `*_test.rego`, with paths relative to the
// directory and in code-point order, so the same tree always compiles to the same bundle.
import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';

export interface RegoSourceFile {
  /** Path relative to the directory (used in error locations and inside the bundle). */
  file: string;
  text: string;
}

export function readRegoDirectory(dir: string): RegoSourceFile[] {
  const out: RegoSourceFile[] = [];
  const walk = (d: string): void => {
    for (const e of readdirSync(d, { withFileTypes: true })) {
      const p = join(d, e.name);
      if (e.isDirectory()) walk(p);
      else if (e.name.endsWith('.rego') && !e.name.endsWith('_test.rego'))
        out.push({ file: relative(dir, p), text: readFileSync(p, 'utf8') });
    }
  };
  walk(dir);
  return out.sort((a, b) => (a.file < b.file ? -1 : a.file > b.file ? 1 : 0));
}
