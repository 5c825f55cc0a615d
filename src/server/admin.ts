// The admin API `guardian serve` mounts under /admin (docs/admin-api.md): src/admin's v1 routes over the bundle
// lifecycle, with replay's job routes and the AgBOM routes beside them, behind the admin tokens. Composed here, at
// the root, so that src/lifecycle needs neither src/admin nor src/replay (both depend on it or on the store).
import type { Hono } from 'hono';
import { createAdminApp } from '../admin/index.ts';
import { createAgbomRoutes } from '../agbom/http.ts';
import type { SignatureRegistry } from '../crypto/index.ts';
import type { LifecycleRuntime } from '../lifecycle/index.ts';
import type { JobStatus } from '../replay/http.ts';
import type { DurableStore } from '../store/types.ts';
import { adminTokenConfigured } from './admin-tokens.ts';

export async function createAdminApi(
  lifecycle: LifecycleRuntime,
  store: DurableStore,
  env: Readonly<Record<string, string | undefined>>,
  signatures?: SignatureRegistry,
  hooks: { onReplayJob?(status: JobStatus): void; customBuiltinsModule?: string } = {},
): Promise<Hono> {
  const mount: Record<string, Hono> = {};
  let agbom: Hono | undefined;
  // Without a token the admin API refuses every request, so replay's routes (and the modules behind them) are
  // not loaded at all.
  if (adminTokenConfigured(env)) {
    const { createReplayAdminRoutes } = await import('../replay/http.ts');
    // Its routes start with /replay: mounted at the admin root they answer under /admin/replay.
    // Replay jobs evaluate with the deployment's custom builtins, as the live engine does.
    mount['/'] = createReplayAdminRoutes({
      store,
      ...(hooks.onReplayJob ? { onJob: hooks.onReplayJob } : {}),
      ...(hooks.customBuiltinsModule ? { customBuiltinsModule: hooks.customBuiltinsModule } : {}),
    });
    agbom = createAgbomRoutes({ store });
  }
  return createAdminApp({
    node: lifecycle.node,
    env,
    sources: () => lifecycle.pollers.map((p) => ({ ...p.status })),
    mount,
    ...(agbom ? { agbom } : {}),
    ...(signatures ? { signatures } : {}),
  });
}
