// `npm run bench -- --help` prints its usage and the benchmarks it can run, and runs none of them.
import { execFileSync } from 'node:child_process';
import { readdirSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const root = fileURLToPath(new URL('../../', import.meta.url));

describe('npm run bench --help', () => {
  it('prints usage with every benchmark in bench/ and exits 0 without running one', () => {
    const out = execFileSync(process.execPath, ['bin/run-bench.mjs', '--help'], { cwd: root, encoding: 'utf8' });
    expect(out).toMatch(/^Usage: npm run bench \[name\.\.\.\]/);
    const names = readdirSync(`${root}bench`)
      .filter((f) => f.endsWith('.ts'))
      .map((f) => f.replace(/\.ts$/, ''))
      .sort();
    expect(/^Benchmarks: (.*)$/m.exec(out)?.[1].split(', ').sort()).toEqual(names);
    expect(out).not.toContain('=== bench/');
  });
});
