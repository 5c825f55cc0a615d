// Fleet sync: replicas on one Postgres converge on an activation (LISTEN/NOTIFY, polling fallback), a starting
// replica loads the active version, each heartbeats its revision; on PGlite replicas sharing a store follow
// in-process. A replica that cannot load an activated bundle keeps its version and reports why.
import { performance } from 'node:perf_hooks';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LifecycleNode, listReplicas } from '../../src/lifecycle/index.ts';
import { openStore } from '../../src/store/index.ts';
import type { DurableStore } from '../../src/store/types.ts';
import { dropSchema } from '../store/postgres-schema.ts';
import { constantBundle, startMemoryNode } from './fixtures.ts';

const PG = process.env.TEST_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test';
const SCHEMA = `lifecycle_replicas_${process.pid}`;

async function waitFor(cond: () => boolean, timeoutMs: number): Promise<number> {
  const t0 = performance.now();
  while (!cond()) {
    if (performance.now() - t0 > timeoutMs) break;
    await new Promise((r) => setTimeout(r, 10));
  }
  return performance.now() - t0;
}

describe('replicas on one Postgres', () => {
  const stores: DurableStore[] = [];
  const nodes: LifecycleNode[] = [];
  beforeAll(async () => {
    for (let i = 0; i < 2; i++) stores.push(await openStore({ databaseUrl: PG, schema: SCHEMA, poolSize: 3 }));
  });
  afterAll(async () => {
    for (const n of nodes) await n.stop();
    for (const s of stores) await s.close();
    await dropSchema(SCHEMA);
  });

  it('two replicas converge within 2 s of each activation (LISTEN/NOTIFY); /status data shows both', async () => {
    // Slow polling (10 s): convergence within 2 s proves the notification path.
    const a = new LifecycleNode({
      store: stores[0],
      replicaId: 'replica-a',
      pollIntervalMs: 10_000,
      heartbeatMs: 500,
      initialBundle: { bytes: await constantBundle('fleet-0'), source: 'test' },
    });
    nodes.push(a);
    await a.start();
    const b = new LifecycleNode({
      store: stores[1],
      replicaId: 'replica-b',
      pollIntervalMs: 10_000,
      heartbeatMs: 500,
    });
    nodes.push(b);
    await b.start();
    // A starting replica loads the active version.
    expect(b.engine.revision).toBe('fleet-0');

    for (const rev of ['fleet-1', 'fleet-2', 'fleet-3']) {
      await a.push(await constantBundle(rev), { source: 'test', activate: true, by: 'ops' });
      expect(a.engine.revision).toBe(rev);
      const took = await waitFor(() => b.engine.revision === rev, 2000);
      expect(b.engine.revision).toBe(rev);
      expect(took).toBeLessThan(2000);
    }
    await b.heartbeat();
    await a.heartbeat();
    const fleet = await listReplicas(stores[0]);
    expect(fleet.map((r) => [r.replicaId, r.revision, r.stale])).toEqual([
      ['replica-a', 'fleet-3', false],
      ['replica-b', 'fleet-3', false],
    ]);
    expect(fleet.every((r) => r.lastSync instanceof Date && r.lastError === null)).toBe(true);
  }, 120_000);

  it('without LISTEN the polling fallback converges; rollback on one replica reaches the other', async () => {
    const c = new LifecycleNode({
      store: stores[1],
      replicaId: 'replica-c',
      listen: false,
      pollIntervalMs: 300,
      heartbeatMs: 500,
    });
    nodes.push(c);
    await c.start();
    expect(c.engine.revision).toBe('fleet-3');
    await nodes[0].rollback('ops');
    expect(nodes[0].engine.revision).toBe('fleet-2');
    const took = await waitFor(() => c.engine.revision === 'fleet-2', 2000);
    expect(c.engine.revision).toBe('fleet-2');
    expect(took).toBeLessThan(2000);
  }, 60_000);
});

describe('replicas sharing a PGlite store', () => {
  let store: DurableStore;
  const nodes: LifecycleNode[] = [];
  beforeAll(async () => {
    store = await openStore({ inMemory: true });
  });
  afterAll(async () => {
    for (const n of nodes) await n.stop();
    await store.close();
  });

  it('follow each other in-process; a replica that cannot load the bundle keeps its version and reports the reason', async () => {
    const a = new LifecycleNode({
      store,
      replicaId: 'p-a',
      pollIntervalMs: 60_000,
      initialBundle: { bytes: await constantBundle('pg-0'), source: 'test' },
    });
    nodes.push(a);
    await a.start();
    const b = new LifecycleNode({ store, replicaId: 'p-b', pollIntervalMs: 60_000 });
    nodes.push(b);
    await b.start();
    await a.push(await constantBundle('pg-1'), { source: 'test', activate: true, by: 'ops' });
    await waitFor(() => b.engine.revision === 'pg-1', 2000);
    expect(b.engine.revision).toBe('pg-1');

    const strict = new LifecycleNode({ store, replicaId: 'p-strict', pollIntervalMs: 60_000 });
    nodes.push(strict);
    await strict.start();
    // A misconfigured replica: it starts on pg-1, then requires signatures, so it refuses the unsigned pg-2.
    (strict.options as { verification?: unknown }).verification = {
      keys: { k: { algorithm: 'HS256', key: new Uint8Array(32) } },
    };
    await a.push(await constantBundle('pg-2'), { source: 'test', activate: true, by: 'ops' });
    await waitFor(() => b.engine.revision === 'pg-2', 2000);
    await strict.sync();
    expect(b.engine.revision).toBe('pg-2');
    expect(strict.engine.revision).toBe('pg-1');
    expect(strict.local().lastError).toMatch(/activation \d+ \(pg-2\) refused here: bundle is not signed/);
    const rows = await listReplicas(store);
    expect(rows.find((r) => r.replicaId === 'p-strict')).toMatchObject({ revision: 'pg-1' });
    expect(rows.find((r) => r.replicaId === 'p-strict')?.lastError).toMatch(/refused here/);
  });
});

describe('concurrent activations on one replica', () => {
  let store: DurableStore;
  let node: LifecycleNode;
  beforeAll(async () => {
    ({ store, node } = await startMemoryNode(await constantBundle('cc-0')));
  });
  afterAll(async () => {
    await node.stop();
    await store.close();
  });

  it('activations issued at once are applied one at a time; the replica ends on the newest recorded activation', async () => {
    const shas: string[] = [];
    for (let i = 1; i <= 5; i++)
      shas.push((await node.push(await constantBundle(`cc-${i}`), { source: 'test', by: 't' })).record.sha256);
    const results = await Promise.all(shas.map((sha) => node.activate(sha, 't')));
    expect(results.map((r) => r.revision)).toEqual(['cc-1', 'cc-2', 'cc-3', 'cc-4', 'cc-5']);
    expect(results.map((r) => r.previousRevision)).toEqual(['cc-0', 'cc-1', 'cc-2', 'cc-3', 'cc-4']);
    expect((await node.registry.active())?.revision).toBe('cc-5');
    await node.sync();
    expect(node.engine.revision).toBe('cc-5');
  });
});
