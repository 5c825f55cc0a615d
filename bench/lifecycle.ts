// Bundle lifecycle figures: activation latency (verify → load → warm → smoke → record → swap) for a ~1 MB
// bundle, p50/p99, where the time goes (phases), the longest event-loop stall during activations, and
// evaluation throughput during a burst of swaps vs steady state (in-process, the slot the Guardian evaluates
// with). Every figure line ends with the load average (1 min) before and after it: on a shared machine the
// wall-clock figures mean little without it. Compile is not excluded by subtraction: the bench module is
// ~800 bytes (compile < 2 ms), so the figures are the rest of an activation.
// Run: `npm run bench lifecycle` (or `node --import tsx bench/lifecycle.ts`).
// BENCH_ACTIVATIONS (default 30), BENCH_SECONDS (default 3) per throughput window.
import { loadavg } from 'node:os';
import { constants as perfConstants, monitorEventLoopDelay, performance, PerformanceObserver } from 'node:perf_hooks';
import { BundleRegistry, LifecycleNode, type ActivationResult } from '../src/lifecycle/index.ts';
import { loadUnpacked } from '../src/lifecycle/slot.ts';
import { readBundleManifest, unpackBundle } from '../src/lifecycle/unpack.ts';
import { readBundle, writeBundle } from '../src/rego/bundle/index.ts';
import { openStore } from '../src/store/index.ts';
import type { PolicyInput } from '../src/policy/types.ts';
import { buildDecisionModule } from '../test/acs/fixtures/decision-module.ts';

const ACTIVATIONS = Number(process.env.BENCH_ACTIVATIONS ?? 30);
const SECONDS = Number(process.env.BENCH_SECONDS ?? 3);

const pct = (sorted: number[], p: number): number =>
  sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * p))] ?? NaN;
const median = (xs: number[]): number =>
  pct(
    [...xs].sort((x, y) => x - y),
    0.5,
  );

const load1 = (): string => loadavg()[0].toFixed(2);

/**
 * Runs `fn` `n` times; p50/p99/max wall time, process CPU, the longest event-loop stall (monitorEventLoopDelay)
 * meanwhile, the median of each activation phase (ActivationResult.phasesMs) and the load average.
 */
async function timed(
  n: number,
  fn: (i: number) => Promise<ActivationResult | { activation?: ActivationResult }>,
): Promise<string> {
  const latencies: number[] = [];
  const phases = new Map<string, number[]>();
  const loadBefore = load1();
  const loop = monitorEventLoopDelay({ resolution: 1 });
  loop.enable();
  // Pauses of the garbage collector on this thread: what the longest stalls are made of.
  const gc = { major: 0, minor: 0, ms: 0, maxMs: 0 };
  const gcObserver = new PerformanceObserver((list) => {
    for (const e of list.getEntries()) {
      if ((e as unknown as { detail?: { kind?: number } }).detail?.kind === perfConstants.NODE_PERFORMANCE_GC_MAJOR)
        gc.major++;
      else gc.minor++;
      gc.ms += e.duration;
      gc.maxMs = Math.max(gc.maxMs, e.duration);
    }
  });
  gcObserver.observe({ entryTypes: ['gc'] });
  const cpu0 = process.cpuUsage();
  for (let i = 0; i < n; i++) {
    const t = performance.now();
    const r = await fn(i);
    latencies.push(performance.now() - t);
    const activation = 'phasesMs' in r ? r : r.activation;
    for (const [name, ms] of Object.entries(activation?.phasesMs ?? {}))
      phases.set(name, [...(phases.get(name) ?? []), ms]);
  }
  const cpu = process.cpuUsage(cpu0);
  loop.disable();
  await new Promise((r) => setImmediate(r));
  gcObserver.disconnect();
  latencies.sort((x, y) => x - y);
  return (
    `p50 ${pct(latencies, 0.5).toFixed(1)} ms, p99 ${pct(latencies, 0.99).toFixed(1)} ms, max ${latencies[latencies.length - 1].toFixed(1)} ms, ` +
    `process cpu (all threads) ${((cpu.user + cpu.system) / 1000 / n).toFixed(1)} ms/activation, longest event-loop stall ${(loop.max / 1e6).toFixed(1)} ms ` +
    `(GC: ${gc.major} major + ${gc.minor} minor pauses, ${(gc.ms / n).toFixed(1)} ms/activation, longest ${gc.maxMs.toFixed(1)} ms); ` +
    `phase medians: ${[...phases].map(([name, xs]) => `${name} ${median(xs).toFixed(1)}`).join(', ')} ms; load average ${loadBefore} → ${load1()}`
  );
}

/** Where an activation's time goes, each phase alone, in this thread (median of 5). */
async function phases(store: Awaited<ReturnType<typeof openStore>>, bytes: Uint8Array, sha256: string): Promise<void> {
  const read: number[] = [];
  const getBundle: number[] = [];
  const unpack: number[] = [];
  const unpackText: number[] = [];
  const load: number[] = [];
  const manifestByReadBundle: number[] = [];
  const manifestOnly: number[] = [];
  for (let i = 0; i < 5; i++) {
    let t = performance.now();
    await new BundleRegistry(store).bytes(sha256);
    read.push(performance.now() - t);
    t = performance.now();
    await store.getPolicyBundle(sha256);
    getBundle.push(performance.now() - t);
    t = performance.now();
    const u = await unpackBundle(bytes, undefined);
    unpack.push(performance.now() - t);
    t = performance.now();
    // As an activation unpacks: a sole /data.json is left to the engine's parser.
    await unpackBundle(bytes, undefined, { soleDataAsText: true });
    unpackText.push(performance.now() - t);
    t = performance.now();
    await loadUnpacked(u, {}, bytes);
    load.push(performance.now() - t);
    // Registration without a manifest (start-up seeding, the CLI's registry, a push whose check failed).
    t = performance.now();
    void readBundle(bytes).manifest;
    manifestByReadBundle.push(performance.now() - t);
    t = performance.now();
    readBundleManifest(bytes);
    manifestOnly.push(performance.now() - t);
  }
  console.log(
    `phases (median of 5, this thread): store read ${median(read).toFixed(1)} ms (store.getPolicyBundle: ${median(getBundle).toFixed(1)} ms); ` +
      `unpack = gunzip + untar + JSON.parse of the data + sha256 + smoke cases (push) ${median(unpack).toFixed(1)} ms, ` +
      `the same without the data parse (activation, in the worker thread) ${median(unpackText).toFixed(1)} ms; ` +
      `engine load + warm-up + smoke (event loop) ${median(load).toFixed(1)} ms; ` +
      `the manifest for registration: readBundle ${median(manifestByReadBundle).toFixed(1)} ms, readBundleManifest ${median(manifestOnly).toFixed(1)} ms; load average ${load1()}`,
  );
}

async function megabyteBundle(revision: string): Promise<Uint8Array> {
  const wasm = await buildDecisionModule({ constant: { decision: 'allow', reasoning: revision } });
  // ~1 MB of data: 14 000 roles with members (incompressible-ish ids so the gzip stays near 1 MB).
  const roles: Record<string, string[]> = {};
  let seed = revision.length * 7919;
  const rnd = (): string => {
    seed = (seed * 1103515245 + 12345) & 0x7fffffff;
    return seed.toString(36);
  };
  for (let i = 0; i < 14000; i++) roles[`role_${i}_${rnd()}`] = Array.from({ length: 8 }, () => `${rnd()}${rnd()}`);
  return writeBundle({
    manifest: { revision, wasm: [{ entrypoint: 'acs/decision', module: '/policy.wasm' }] },
    wasm,
    data: { roles },
    sources: [
      {
        path: '/smoke.json',
        text: JSON.stringify({ cases: [{ name: 'allows', input: {}, expect: { decision: 'allow' } }] }),
      },
    ],
  });
}

const input: PolicyInput = {
  method: 'steps/toolCallRequest',
  params: { tool: { name: 'x' } },
  session: {},
  client: { modify_capable: true, ask_capable: true },
  guardian: { now: new Date().toISOString(), policy_version: '' },
};

async function throughput(
  node: LifecycleNode,
  seconds: number,
  during?: () => Promise<void>,
): Promise<{ evals: number; perSec: number; failures: number; maxGapMs: number }> {
  let evals = 0;
  let failures = 0;
  let stop = false;
  let last = performance.now();
  let maxGapMs = 0;
  const loop = async (): Promise<void> => {
    while (!stop) {
      try {
        await node.engine.evaluate(input);
        evals++;
        const now = performance.now();
        maxGapMs = Math.max(maxGapMs, now - last);
        last = now;
      } catch {
        failures++;
      }
      if (evals % 50 === 0) await new Promise((r) => setImmediate(r));
    }
  };
  const t0 = performance.now();
  const workers = [loop(), loop(), loop(), loop()];
  if (during) await during();
  else await new Promise((r) => setTimeout(r, seconds * 1000));
  stop = true;
  await Promise.all(workers);
  const elapsed = (performance.now() - t0) / 1000;
  return { evals, perSec: evals / elapsed, failures, maxGapMs };
}

/** Evaluations a window lost to its swaps, per swap, against the steady-state rate (faster swaps fit more in a window). */
function lostPerSwap(window: { evals: number; perSec: number }, swaps: number, steadyPerSec: number): string {
  const elapsed = window.evals / window.perSec;
  return `${Math.max(0, (steadyPerSec * elapsed - window.evals) / swaps).toFixed(0)} evaluations lost per swap`;
}

async function main(): Promise<void> {
  const store = await openStore({ inMemory: true });
  const a = await megabyteBundle('bench-a');
  const b = await megabyteBundle('bench-b');
  console.log(`bundle size: ${(a.length / 1024).toFixed(0)} KiB compressed`);
  const node = new LifecycleNode({ store, pollIntervalMs: 60_000, initialBundle: { bytes: a, source: 'bench' } });
  await node.start();
  const shaA = node.engine.current.sha256;
  const shaB = (await node.push(b, { source: 'bench', by: 'bench' })).record.sha256;

  await phases(store, b, shaB);
  // Back and forth between two bundles this replica loaded (rollback): their unpacked form is still held.
  console.log(
    `activation latency, back and forth between two bundles (rollback; ~1 MB, ${ACTIVATIONS} activations): ${await timed(ACTIVATIONS, (i) => node.activate(i % 2 === 0 ? shaB : shaA, 'bench'))}`,
  );
  // Bundles another process registered (CLI push, another replica) and this one has not read recently: bytes
  // from the store, full unpack in the worker every time (6 in turn, more than the registry keeps).
  const others: string[] = [];
  const cli = new BundleRegistry(store);
  for (let i = 0; i < 6; i++)
    others.push((await cli.register(await megabyteBundle(`bench-store-${i}`), 'bench')).sha256);
  console.log(
    `activation latency, bundles not read here recently (bytes from the store, full unpack; ~1 MB, ${ACTIVATIONS} activations over 6 bundles): ${await timed(ACTIVATIONS, (i) => node.activate(others[i % others.length], 'bench'))}`,
  );
  // A new bundle pushed with activation (guardian bundle push --activate, POST /admin/bundles?activate=true):
  // registration included, the bundle is unpacked once.
  const fresh: Uint8Array[] = [];
  const pushes = Math.min(ACTIVATIONS, 12);
  for (let i = 0; i < pushes; i++) fresh.push(await megabyteBundle(`bench-push-${i}`));
  console.log(
    `push + activate of a new bundle (~1 MB, registration included, ${pushes} bundles): ${await timed(pushes, (i) => node.push(fresh[i], { source: 'bench', activate: true, by: 'bench' }))}`,
  );

  const steady = await throughput(node, SECONDS);
  console.log(
    `steady state: ${steady.perSec.toFixed(0)} evaluations/s (${steady.evals} in ${SECONDS} s, ${steady.failures} failed, longest pause ${steady.maxGapMs.toFixed(1)} ms); load average ${load1()}`,
  );
  // A burst of 10 activations 200 ms apart (a CI pipeline pushing a series of bundles).
  let spaced = 0;
  const paced = await throughput(node, SECONDS, async () => {
    for (let i = 0; i < 10; i++) {
      await new Promise((r) => setTimeout(r, 200));
      await node.activate(i % 2 === 0 ? shaB : shaA, 'bench');
      spaced++;
    }
  });
  console.log(
    `burst of ${spaced} swaps 200 ms apart: ${paced.perSec.toFixed(0)} evaluations/s (${paced.evals} evaluations, ${paced.failures} failed, longest pause ${paced.maxGapMs.toFixed(1)} ms) = ${((paced.perSec / steady.perSec) * 100).toFixed(0)}% of steady state, ${lostPerSwap(paced, spaced, steady.perSec)}`,
  );
  const { burst, swaps } = await backToBackSwaps(node, shaA, shaB);
  console.log(
    `back-to-back swaps for ${SECONDS} s: ${burst.perSec.toFixed(0)} evaluations/s (${burst.evals} evaluations, ${swaps} swaps, ${burst.failures} failed, longest pause ${burst.maxGapMs.toFixed(1)} ms) = ${((burst.perSec / steady.perSec) * 100).toFixed(0)}% of steady state, ${lostPerSwap(burst, swaps, steady.perSec)}`,
  );
  // The same with bundles that need a full unpack each time (the 6 registered elsewhere, in turn).
  let coldSwaps = 0;
  const cold = await throughput(node, SECONDS, async () => {
    const end = performance.now() + SECONDS * 1000;
    while (performance.now() < end) await node.activate(others[coldSwaps++ % others.length], 'bench');
  });
  console.log(
    `back-to-back swaps, full unpack each, for ${SECONDS} s: ${cold.perSec.toFixed(0)} evaluations/s (${cold.evals} evaluations, ${coldSwaps} swaps, ${cold.failures} failed, longest pause ${cold.maxGapMs.toFixed(1)} ms) = ${((cold.perSec / steady.perSec) * 100).toFixed(0)}% of steady state, ${lostPerSwap(cold, coldSwaps, steady.perSec)}; load average ${load1()}`,
  );
  await node.stop();
  await store.close();
  await pooled(a, b);
  await fleet(a, b);
}

/** Evaluation throughput while the node swaps between two versions back to back for SECONDS. */
async function backToBackSwaps(
  node: LifecycleNode,
  shaA: string,
  shaB: string,
): Promise<{ burst: Awaited<ReturnType<typeof throughput>>; swaps: number }> {
  let swaps = 0;
  const burst = await throughput(node, SECONDS, async () => {
    const end = performance.now() + SECONDS * 1000;
    while (performance.now() < end) {
      await node.activate(swaps % 2 === 0 ? shaB : shaA, 'bench');
      swaps++;
    }
  });
  return { burst, swaps };
}

/** The same with a node serving from a 2-worker engine pool (every version also loaded into the pool workers). */
async function pooled(a: Uint8Array, b: Uint8Array): Promise<void> {
  const store = await openStore({ inMemory: true });
  const node = new LifecycleNode({
    store,
    poolSize: 2,
    pollIntervalMs: 60_000,
    engine: { timeoutMs: 5_000 },
    initialBundle: { bytes: a, source: 'bench' },
  });
  await node.start();
  const shaA = node.engine.current.sha256;
  const shaB = (await node.push(b, { source: 'bench', by: 'bench' })).record.sha256;
  const n = Math.max(4, Math.floor(ACTIVATIONS / 2));
  console.log(
    `pool (2 workers): activation latency, back and forth (~1 MB, ${n} activations): ${await timed(n, (i) => node.activate(i % 2 === 0 ? shaB : shaA, 'bench'))}`,
  );
  const steady = await throughput(node, SECONDS);
  const { burst, swaps } = await backToBackSwaps(node, shaA, shaB);
  console.log(
    `pool (2 workers): steady state ${steady.perSec.toFixed(0)} evaluations/s; back-to-back swaps ${burst.perSec.toFixed(0)} evaluations/s (${swaps} swaps, ${burst.failures} failed) = ${((burst.perSec / steady.perSec) * 100).toFixed(0)}% of steady state; load average ${load1()}`,
  );
  await node.stop();
  await store.close();
}

/** Two replicas on one Postgres: time from an activation on A until B serves it (LISTEN/NOTIFY path). */
async function fleet(a: Uint8Array, b: Uint8Array): Promise<void> {
  const url = process.env.TEST_DATABASE_URL ?? process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test';
  const schema = `bench_lifecycle_${process.pid}`;
  let s1;
  let s2;
  try {
    s1 = await openStore({ databaseUrl: url, schema, poolSize: 2 });
    s2 = await openStore({ databaseUrl: url, schema, poolSize: 2 });
  } catch (e) {
    console.log(`fleet convergence: skipped (Postgres unavailable: ${(e as Error).message})`);
    return;
  }
  const n1 = new LifecycleNode({
    store: s1,
    replicaId: 'bench-1',
    pollIntervalMs: 10_000,
    initialBundle: { bytes: a, source: 'bench' },
  });
  await n1.start();
  const n2 = new LifecycleNode({ store: s2, replicaId: 'bench-2', pollIntervalMs: 10_000 });
  await n2.start();
  const shaA = n1.engine.current.sha256;
  const shaB = (await n1.push(b, { source: 'bench', by: 'bench' })).record.sha256;
  const lags: number[] = [];
  for (let i = 0; i < 10; i++) {
    const sha = i % 2 === 0 ? shaB : shaA;
    await n1.activate(sha, 'bench');
    const t = performance.now();
    while (n2.engine.current.sha256 !== sha && performance.now() - t < 15_000)
      await new Promise((r) => setTimeout(r, 2));
    lags.push(performance.now() - t);
  }
  lags.sort((x, y) => x - y);
  console.log(
    `fleet convergence on Postgres (second replica serving the activation after the first recorded it, ~1 MB bundle, 10 activations): p50 ${pct(lags, 0.5).toFixed(0)} ms, max ${lags[lags.length - 1].toFixed(0)} ms; load average ${load1()}`,
  );
  await n1.stop();
  await n2.stop();
  await s1.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
  await s1.close();
  await s2.close();
}

await main();
