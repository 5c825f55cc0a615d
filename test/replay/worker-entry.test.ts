// The bundled replay worker (src/replay/worker-entry.ts): built once into a cache, reused while its inputs are
// unchanged, rebuilt when they are not. That it replays exactly as the tsx worker and in-process replay do is
// checked by the replay suite (replay-suite.ts, worker threads).
import { mkdtempSync, readFileSync, rmSync, statSync, utimesSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { bundledReplayWorker, replayWorkerEntry, TSX_WORKER_BOOTSTRAP } from '../../src/replay/worker-entry.ts';

describe('replay worker entry', () => {
  const dir = mkdtempSync(join(tmpdir(), 'replay-worker-entry-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('builds one JS file of the worker graph, then reuses it while the inputs hash the same', async () => {
    const built = await bundledReplayWorker(dir);
    const file = fileURLToPath(built);
    const text = readFileSync(file, 'utf8');
    // No TypeScript left to transform, and every import is a node built-in or the one external package.
    expect(text).toContain('// src/replay/worker.ts');
    const imports = [...text.matchAll(/^import .* from "([^"]+)";$/gm)].map((m) => m[1]);
    expect(imports.filter((s) => !s.startsWith('node:') && s !== '@open-policy-agent/opa-wasm')).toEqual([]);
    const manifest = JSON.parse(readFileSync(join(dir, 'replay-worker.json'), 'utf8')) as {
      inputs: string[];
      inputsHash: string;
    };
    expect(manifest.inputs).toContain('src/replay/worker.ts');
    expect(manifest.inputs).toContain('src/policy/input.ts');
    const mtime = statSync(file).mtimeMs;

    expect(String(await bundledReplayWorker(dir))).toBe(String(built));
    expect(statSync(file).mtimeMs).toBe(mtime);

    // Inputs that no longer hash as recorded (an edited source): rebuilt, not reused.
    utimesSync(file, new Date(2020, 0, 1), new Date(2020, 0, 1));
    writeFileSync(join(dir, 'replay-worker.json'), JSON.stringify({ ...manifest, inputsHash: '0'.repeat(64) }));
    expect(String(await bundledReplayWorker(dir))).toBe(String(built));
    expect(statSync(file).mtimeMs).toBeGreaterThan(Date.parse('2021-01-01'));
    expect(JSON.parse(readFileSync(join(dir, 'replay-worker.json'), 'utf8')).inputsHash).toBe(manifest.inputsHash);
  }, 60_000);

  it('replay uses the bundle by default, not the tsx fallback', async () => {
    const entry = await replayWorkerEntry();
    expect(String(entry)).not.toBe(String(TSX_WORKER_BOOTSTRAP));
    expect(String(entry)).toMatch(/\/node_modules\/\.cache\/guardian\/replay-worker-[0-9a-f]{16}\.mjs$/);
  }, 60_000);
});
