// The admin API `guardian serve` mounts under /admin: the bundle lifecycle's routes (src/admin) with replay's job
// routes beside them, behind the one bearer token (GUARDIAN_ADMIN_TOKEN). Composed here, at the root, so that
// src/lifecycle needs neither src/admin nor src/replay (both of which depend on it or on the store beneath it).
import type { Hono } from 'hono';
import { createAdminApp } from '../admin/index.ts';
import type { LifecycleRuntime } from '../lifecycle/index.ts';
import type { DurableStore } from '../store/types.ts';

export async function createAdminApi(
  lifecycle: LifecycleRuntime,
  store: DurableStore,
  env: Readonly<Record<string, string | undefined>>,
): Promise<Hono> {
  const mount: Record<string, Hono> = {};
  // Without a token the admin API refuses every request, so replay's routes (and the modules behind them) are
  // not loaded at all.
  if (env.GUARDIAN_ADMIN_TOKEN) {
    const { createReplayAdminRoutes } = await import('../replay/http.ts');
    // Its routes start with /replay: mounted at the admin root they answer under /admin/replay.
    mount['/'] = createReplayAdminRoutes({ store });
  }
  return createAdminApp({
    node: lifecycle.node,
    env,
    sources: () => lifecycle.pollers.map((p) => ({ ...p.status })),
    mount,
  });
}
