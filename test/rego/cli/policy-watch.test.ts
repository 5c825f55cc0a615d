// `guardian policy build --watch` as a real process: a saved change rebuilds the bundle, a broken save keeps
// the last good bundle, and SIGTERM ends the watch cleanly.
import { describe, expect, it } from 'vitest';
import { spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { readBundle } from '../../../src/rego/bundle/index.ts';

const BIN = fileURLToPath(new URL('../../../bin/guardian.mjs', import.meta.url));

function revisionOf(path: string): string {
  return String(readBundle(new Uint8Array(readFileSync(path))).manifest.revision);
}

describe('guardian policy build --watch', () => {
  it('rebuilds on save, keeps the last good bundle on a broken save, stops on SIGTERM', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'policy-watch-'));
    const src = join(dir, 'src');
    const out = join(dir, 'bundle.tar.gz');
    const file = join(src, 'p.rego');
    mkdirSync(src, { recursive: true });
    writeFileSync(file, 'package w\n\nallow if input.n > 1\n');
    const child = spawn(process.execPath, [BIN, 'policy', 'build', src, '-e', 'w/allow', '-o', out, '--watch'], {
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const exited = new Promise<number | null>((resolve) => child.once('exit', (c) => resolve(c)));
    let stderr = '';
    const waiters: { pattern: RegExp; count: number; resolve: () => void }[] = [];
    child.stderr.on('data', (chunk: Buffer) => {
      stderr += chunk.toString();
      for (const w of waiters) if ((stderr.match(w.pattern) ?? []).length >= w.count) w.resolve();
    });
    const seen = (pattern: RegExp, count: number): Promise<void> =>
      new Promise((resolve, reject) => {
        if ((stderr.match(pattern) ?? []).length >= count) return resolve();
        const timer = setTimeout(
          () => reject(new Error(`timed out waiting for ${pattern} ×${count}; stderr:\n${stderr}`)),
          120_000,
        );
        waiters.push({ pattern, count, resolve: () => (clearTimeout(timer), resolve()) });
      });
    try {
      await seen(/watching /g, 1);
      const first = revisionOf(out);

      writeFileSync(file, 'package w\n\nallow if input.n > 2\n');
      await seen(/wrote .*bundle\.tar\.gz/g, 2);
      const second = revisionOf(out);
      expect(second).not.toBe(first);

      writeFileSync(file, 'package w\n\nallow if input.n >\n');
      await seen(/build failed; keeping the previous bundle/g, 1);
      expect(stderr).toMatch(/p\.rego:\d+:\d+: rego_parse_error/);
      expect(revisionOf(out)).toBe(second);
    } finally {
      child.kill('SIGTERM');
    }
    expect(await exited).toBe(0);
  });
});
