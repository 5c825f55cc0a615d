// Development loops: a rebuilt bundle dropped into the watched directory goes live; a broken one is reported
// and the old one kept; watchAndBuild compiles Rego sources into the bundle file the watcher follows.
import { mkdtempSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type LifecycleNode, watchAndBuild, watchBundleDirectory } from '../../src/lifecycle/index.ts';
import type { DurableStore } from '../../src/store/types.ts';
import { constantBundle, policyInput, startMemoryNode } from './fixtures.ts';

let dir: string;
let store: DurableStore;
let node: LifecycleNode;

async function until(cond: () => boolean, ms = 30_000): Promise<void> {
  const end = Date.now() + ms;
  while (!cond() && Date.now() < end) await new Promise((r) => setTimeout(r, 20));
}

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'bundle-watch-'));
  ({ store, node } = await startMemoryNode(await constantBundle('w-0')));
});
afterAll(async () => {
  await node.stop();
  await store.close();
  rmSync(dir, { recursive: true, force: true });
});

describe('directory watch', () => {
  it('a rebuilt bundle goes live; a broken one is refused with the reason and the old one stays', async () => {
    const bundles = join(dir, 'bundles');
    mkdirSync(bundles);
    const events: { outcome: string; detail: string }[] = [];
    const w = watchBundleDirectory(bundles, node, {
      file: 'acs.tar.gz',
      intervalMs: 200,
      debounceMs: 50,
      onEvent: (e) => events.push(e),
    });
    try {
      writeFileSync(join(bundles, 'acs.tar.gz'), await constantBundle('w-1'));
      await until(() => node.engine.revision === 'w-1');
      expect(node.engine.revision).toBe('w-1');
      writeFileSync(join(bundles, 'acs.tar.gz'), 'half-written garbage');
      await until(() => events.some((e) => e.outcome === 'refused'));
      expect(events.find((e) => e.outcome === 'refused')?.detail).toMatch(/gzip/);
      expect(node.engine.revision).toBe('w-1');
      writeFileSync(join(bundles, 'acs.tar.gz'), await constantBundle('w-2'));
      await until(() => node.engine.revision === 'w-2');
      expect(node.engine.revision).toBe('w-2');
      const last = (await node.registry.activations(1))[0];
      expect(last.activatedBy).toMatch(/^watch:.*acs\.tar\.gz$/);
    } finally {
      w.close();
    }
  });

  it("a file already present when watching starts is not activated (a restart keeps the registry's choice) unless activateExisting", async () => {
    const pre = join(dir, 'pre');
    mkdirSync(pre);
    writeFileSync(join(pre, 'acs.tar.gz'), await constantBundle('w-pre'));
    const before = node.engine.revision;
    const w = watchBundleDirectory(pre, node, { file: 'acs.tar.gz', intervalMs: 100, debounceMs: 20 });
    await w.scan();
    await new Promise((r) => setTimeout(r, 300));
    expect(node.engine.revision).toBe(before);
    w.close();
    const w2 = watchBundleDirectory(pre, node, {
      file: 'acs.tar.gz',
      intervalMs: 100,
      debounceMs: 20,
      activateExisting: true,
    });
    await w2.scan();
    expect(node.engine.revision).toBe('w-pre');
    w2.close();
    await node.activate(before, 'tester');
  });

  it('watchAndBuild compiles Rego on change into the watched bundle, which is activated', async () => {
    const src = join(dir, 'rego');
    const bundles = join(dir, 'built');
    mkdirSync(src);
    mkdirSync(bundles);
    const rule = (d: string) => `package acs\n\ndecision := {"decision": "${d}", "reasoning": "built ${d}"}\n`;
    writeFileSync(join(src, 'acs.rego'), rule('allow'));
    const builds: { ok: boolean }[] = [];
    const w = watchBundleDirectory(bundles, node, { file: 'acs.tar.gz', intervalMs: 200, debounceMs: 50 });
    const b = watchAndBuild(src, {
      entrypoints: ['acs/decision'],
      out: join(bundles, 'acs.tar.gz'),
      debounceMs: 50,
      onBuild: (e) => builds.push(e),
    });
    try {
      await b.build();
      expect(builds[0]).toMatchObject({ ok: true });
      await until(
        () =>
          node.engine.current.engine.manifest.wasm?.[0]?.entrypoint === 'acs/decision' &&
          node.engine.revision !== 'w-2',
      );
      const first = node.engine.revision;
      expect((await node.engine.evaluate(policyInput('x', ''))).decision).toEqual({
        decision: 'allow',
        reasoning: 'built allow',
      });
      writeFileSync(join(src, 'acs.rego'), rule('deny'));
      await until(() => node.engine.revision !== first, 60_000);
      expect((await node.engine.evaluate(policyInput('x', ''))).decision).toEqual({
        decision: 'deny',
        reasoning: 'built deny',
      });
    } finally {
      b.close();
      w.close();
    }
  }, 120_000);
});
