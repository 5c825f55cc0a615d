// Admin HTTP API (docs/admin-api.md), mounted by the server under /admin. Version 1 lives under /admin/v1: one
// folder per feature below, each an OpenAPI route list whose zod schemas validate requests and answers and make
// up the OpenAPI 3.1 document at /admin/v1/openapi.json. The unversioned paths of the first admin API (/status,
// /bundles…, /activations, /rollback, /shadow…, /replay…) are aliases of their v1 routes: same answers, same
// roles and audit. No token configured → the API is disabled (every route 404s, nothing is exposed).
import { getConnInfo } from '@hono/node-server/conninfo';
import { OpenAPIHono } from '@hono/zod-openapi';
import { type Context, Hono, type MiddlewareHandler } from 'hono';
import { packageVersion } from '../package-version.ts';
import type { SignatureRegistry } from '../crypto/index.ts';
import type { BundleSourceStatus } from '../lifecycle/bundle-service.ts';
import { LifecycleError, type LifecycleNode } from '../lifecycle/index.ts';
import { type AdminQueries, adminQueries } from '../store/admin/index.ts';
import { StoreError } from '../store/index.ts';
import type { DurableStore } from '../store/types.ts';
import { agbomRoutes } from './agbom/index.ts';
import { AdminError, type AdminDeps, type AdminEnv, type AuditSink, json, problem } from './api/index.ts';
import { auditRoutes } from './audit/index.ts';
import { FailureLimiter, TokenTable } from './auth/index.ts';
import { bundleRoutes } from './bundles/index.ts';
import { checkpointRoutes } from './checkpoints/index.ts';
import { dashboardRoutes } from './dashboard/index.ts';
import { decisionRoutes } from './decisions/index.ts';
import { keyRoutes } from './keys/index.ts';
import { addOpenApiDocument } from './openapi/index.ts';
import { replayRoutes } from './replay/index.ts';
import { sessionRoutes } from './sessions/index.ts';
import { tokenRoutes } from './tokens/index.ts';

export { TokenTable, TokenConfigError, ROLES, type Role, type Principal } from './auth/index.ts';
export { ROUTE_ROLES } from './api/index.ts';

/** The v1 features, each a list of routes. A new feature is one more entry. */
const FEATURES: ((deps: AdminDeps) => OpenAPIHono<AdminEnv>)[] = [
  dashboardRoutes,
  sessionRoutes,
  agbomRoutes,
  checkpointRoutes,
  decisionRoutes,
  bundleRoutes,
  replayRoutes,
  keyRoutes,
  auditRoutes,
  tokenRoutes,
];

/** The features whose routes the first, unversioned admin API had: also answered without /v1. */
const LEGACY_FEATURES = [bundleRoutes, replayRoutes];

export interface AdminAppOptions {
  node: LifecycleNode;
  /** One admin-role token; default process.env.GUARDIAN_ADMIN_TOKEN. More tokens and roles: GUARDIAN_ADMIN_TOKENS(_FILE). */
  token?: string;
  env?: Readonly<Record<string, string | undefined>>;
  /** Bundle-service sources to report in /status. */
  sources?: () => BundleSourceStatus[];
  /** Largest accepted bundle upload (default 64 MiB). */
  maxBundleBytes?: number;
  /**
   * Sub-apps behind the same authentication. The one at "/" is the replay jobs app (src/replay/http.ts, routes
   * starting with /replay): v1 publishes and guards its routes and hands requests to it.
   */
  mount?: Record<string, Hono>;
  /** The replay jobs app, when not given as mount["/"]. */
  replay?: Hono;
  /**
   * The AgBOM app (src/agbom/http.ts): published under /v1/sessions/{id}/agbom…, and answered as it is under
   * /agbom (the first admin API's paths), behind the same authentication.
   */
  agbom?: Hono;
  /** The Guardian's signature registry: /keys and checkpoint signature checks in chain verification. */
  signatures?: SignatureRegistry;
  /** The store (default node.store). */
  store?: DurableStore;
  /** Failed attempts allowed per client address (bad tokens) or token (forbidden calls) per minute (default 10). */
  maxFailuresPerMinute?: number;
  /** Live decision feed poll interval in ms (default 500). */
  feedPollMs?: number;
}

const LIFECYCLE_STATUS: Record<string, number> = {
  not_found: 404,
  ambiguous: 409,
  nothing_to_roll_back: 409,
  invalid_bundle: 400,
  signature_required: 422,
  signature_unexpected: 422,
  signature_invalid: 422,
  unknown_key: 422,
  smoke_failed: 422,
  load_failed: 422,
  bundle_service: 502,
};
const STORE_STATUS: Record<StoreError['code'], number> = {
  invalid_input: 400,
  not_found: 404,
  conflict: 409,
  unavailable: 503,
  busy: 503,
};

function errorAnswer(e: unknown): Response {
  if (e instanceof AdminError) return problem(e.status, e.code, e.message);
  if (e instanceof LifecycleError) return problem(LIFECYCLE_STATUS[e.code] ?? 400, e.code, e.message);
  if (e instanceof StoreError) return problem(STORE_STATUS[e.code], e.code, e.message);
  // Our bug or an unexpected failure: logged for operators, answered without internals.
  process.stderr.write(
    `${JSON.stringify({ admin: 'internal_error', error: e instanceof Error ? e.message : String(e) })}\n`,
  );
  return problem(500, 'internal', 'internal error');
}

const clientAddress = (c: Context<AdminEnv>): string => {
  try {
    return getConnInfo(c).remote.address ?? 'unknown';
  } catch {
    // app.request() in process: no socket.
    return 'in-process';
  }
};

const tooManyFailures = (seconds: number): Response =>
  json({ error: 'too_many_failures', reason: `retry after ${seconds} s` }, 429, { 'retry-after': String(seconds) });

/**
 * Who is calling, in front of every admin route: a bad or missing token counts against the TCP peer address (not
 * the presented token, which an attacker can change at will), so an address locked by its failures stays locked
 * whatever token it presents next; a token whose calls its role keeps forbidding (403) is locked on its own.
 */
function authenticate(
  tokens: TokenTable,
  limiter: FailureLimiter,
  audit: AuditSink | undefined,
): MiddlewareHandler<AdminEnv> {
  return async (c, next) => {
    const addressKey = `addr:${clientAddress(c)}`;
    const locked = limiter.retryAfter(addressKey);
    if (locked > 0) return tooManyFailures(locked);
    const m = /^Bearer\s+(\S+)\s*$/i.exec(c.req.header('authorization') ?? '');
    const principal = m ? tokens.authenticate(m[1]) : null;
    if (!principal) {
      limiter.fail(addressKey);
      return json({ error: 'unauthorized', reason: 'a valid bearer token is required' }, 401, {
        'www-authenticate': 'Bearer realm="guardian-admin"',
      });
    }
    const tokenKey = `token:${principal.name}`;
    const tokenLocked = limiter.retryAfter(tokenKey);
    if (tokenLocked > 0) return tooManyFailures(tokenLocked);
    c.set('principal', principal);
    c.set('audit', audit);
    await next();
    if (c.res.status === 403) limiter.fail(tokenKey);
  };
}

function createApiApp(
  deps: AdminDeps,
  limiter: FailureLimiter,
  audit: AuditSink | undefined,
  features: readonly ((deps: AdminDeps) => OpenAPIHono<AdminEnv>)[],
): OpenAPIHono<AdminEnv> {
  const v1 = new OpenAPIHono<AdminEnv>({
    defaultHook: (result) => {
      if (!result.success)
        return json(
          {
            error: 'invalid_request',
            reason: 'the request does not match its schema',
            issues: result.error.issues.slice(0, 20).map((i) => ({ path: i.path.join('.'), message: i.message })),
          },
          400,
        );
    },
  });
  if (features === FEATURES) addOpenApiDocument(v1, packageVersion());
  v1.use('*', authenticate(deps.tokens, limiter, audit));
  for (const feature of features) v1.route('/', feature(deps));
  v1.notFound(() => problem(404, 'not_found', 'no such admin route'));
  v1.onError((e) => errorAnswer(e));
  return v1;
}

export function createAdminApp(options: AdminAppOptions): Hono {
  const env = options.env ?? process.env;
  // A bad token file stops the start (TokenConfigError): running with fewer tokens than configured is not safe.
  const tokens = new TokenTable({ env, ...(options.token !== undefined ? { token: options.token } : {}) });
  const app = new Hono();
  if (!tokens.enabled) {
    app.all('*', () => json({ error: 'admin API disabled (set GUARDIAN_ADMIN_TOKEN)' }, 404));
    return app;
  }
  const store = options.store ?? options.node.store;
  let queries: AdminQueries | undefined;
  try {
    queries = adminQueries(store);
  } catch {
    queries = undefined;
  }
  const audit: AuditSink | undefined = queries
    ? async (entry) => {
        try {
          await queries.appendAdminAudit(entry);
        } catch (err) {
          // The call itself already happened: the failure to record it must reach the operator's log.
          process.stderr.write(
            `${JSON.stringify({ admin: 'audit_write_failed', action: entry.action, actor: entry.actor, status: entry.status, error: err instanceof Error ? err.message : String(err) })}\n`,
          );
        }
      }
    : undefined;
  const { '/': replayMount, ...otherMounts } = options.mount ?? {};
  const deps: AdminDeps = {
    node: options.node,
    store,
    queries,
    signatures: options.signatures,
    tokens,
    sources: options.sources ?? (() => []),
    maxBundleBytes: options.maxBundleBytes ?? 64 * 1024 * 1024,
    replay: options.replay ?? replayMount,
    agbom: options.agbom,
    feedPollMs: options.feedPollMs ?? 500,
  };
  const limiter = new FailureLimiter(options.maxFailuresPerMinute ?? 10, 60_000);
  app.route('/v1', createApiApp(deps, limiter, audit, FEATURES));
  // Read-only sub-apps (every role may read them), behind the same token check and failure limit. Mounted before
  // the aliases at "/", whose token check would otherwise run first and count each failure twice.
  const mounted = { ...otherMounts, ...(deps.agbom ? { '/agbom': deps.agbom } : {}) };
  for (const [path, sub] of Object.entries(mounted)) {
    const guarded = new Hono<AdminEnv>();
    guarded.use('*', authenticate(tokens, limiter, audit));
    guarded.route('/', sub);
    app.route(path, guarded);
  }
  // The aliases: the same route definitions (roles, validation, audit) without the version prefix.
  app.route('/', createApiApp(deps, limiter, audit, LEGACY_FEATURES));
  app.notFound(() => problem(404, 'not_found', 'no such admin route'));
  app.onError((e) => errorAnswer(e));
  return app;
}
