// The pieces every admin v1 route is built from (docs/admin-api.md): the Hono environment (who is calling, the
// audit sink), the error body, and `adminRoute`, which turns an OpenAPI route definition into one that checks the
// caller's role, validates the JSON it answers against the same schemas the OpenAPI document publishes, and
// writes a state-changing call (any method but GET) into the admin audit log with its result.
import { type RouteConfig, createRoute, z } from '@hono/zod-openapi';
import type { Context, Hono, MiddlewareHandler } from 'hono';
import type { SignatureRegistry } from '../../crypto/index.ts';
import type { BundleSourceStatus } from '../../lifecycle/bundle-service.ts';
import type { LifecycleNode } from '../../lifecycle/index.ts';
import type { AdminQueries, NewAdminAuditEntry } from '../../store/admin/index.ts';
import type { DurableStore } from '../../store/types.ts';
import { type Principal, type Role, type TokenTable, roleAllows } from '../auth/index.ts';

export interface AdminVariables {
  principal: Principal;
  /** Where this app's audit entries go (absent: not recorded, e.g. a store without the admin queries). */
  audit: AuditSink | undefined;
}
export interface AdminEnv {
  /** @hono/node-server's bindings (the socket, for the client address). */
  Bindings: object;
  Variables: AdminVariables;
}

/** Where audit entries go (the store's admin_audit table; a failure to write one is logged, never swallowed silently). */
export type AuditSink = (entry: NewAdminAuditEntry) => Promise<void>;

export const ErrorBody = z
  .object({
    error: z.string().openapi({ description: 'Machine-readable code', example: 'not_found' }),
    reason: z.string().optional().openapi({ description: 'What went wrong, for people' }),
    message: z.string().optional(),
    issues: z.array(z.object({ path: z.string(), message: z.string() })).optional(),
  })
  .openapi('Error');

export const errorResponse = (description: string) => ({
  description,
  content: { 'application/json': { schema: ErrorBody } },
});

/** The refusals every authenticated route can answer. */
const COMMON_ERRORS = {
  400: errorResponse('The request does not match its schema'),
  401: errorResponse('No or an unknown bearer token'),
  403: errorResponse("The token's role may not do this"),
  429: errorResponse('Too many failed attempts; see Retry-After'),
  500: errorResponse('Internal error (logged; no details are answered)'),
  503: errorResponse('A part this Guardian runs without (replay, keys) or the store is unavailable'),
} as const;

export const jsonContent = <T extends z.ZodType>(schema: T, description: string) => ({
  description,
  content: { 'application/json': { schema } },
});

/** A server-sent events answer (the live feeds, progress streams). */
export const eventStream = () => ({
  description: 'An event stream',
  content: { 'text/event-stream': { schema: z.string() } },
});

export const json = (body: unknown, status = 200, headers: Record<string, string> = {}): Response =>
  new Response(JSON.stringify(body), {
    status,
    headers: { 'content-type': 'application/json; charset=utf-8', ...headers },
  });

export const problem = (status: number, error: string, reason: string): Response => json({ error, reason }, status);

export interface AdminRouteMeta {
  /** The least role that may call it. */
  role: Role;
  /** What the audit log names as the call's target (a bundle ref, a job id). */
  target?: (c: Context) => string | undefined;
}

/** Route metadata by operationId, for the route × role tests and the docs table. */
export const ROUTE_ROLES = new Map<string, { method: string; path: string; role: Role }>();

function requireRole(role: Role): MiddlewareHandler<AdminEnv> {
  return async (c, next) => {
    const principal = c.get('principal');
    if (!roleAllows(principal.role, role))
      return problem(403, 'forbidden', `${principal.name} is ${principal.role}; this needs ${role}`);
    await next();
  };
}

/** Parses the JSON answered against the route's schema for its status; a mismatch is our bug: 500, never sent. */
function validateResponse(route: RouteConfig): MiddlewareHandler<AdminEnv> {
  return async (c, next) => {
    await next();
    const res = c.res;
    if (!(res.headers.get('content-type') ?? '').startsWith('application/json')) return;
    const declared = (route.responses[res.status] as { content?: Record<string, { schema?: z.ZodType }> } | undefined)
      ?.content?.['application/json']?.schema;
    // Every refusal is an Error body, whether or not the route lists its status.
    const schema = declared ?? (res.status >= 400 ? ErrorBody : undefined);
    const body: unknown = await res.clone().json();
    const checked = schema?.safeParse(body);
    if (!checked?.success) {
      const issues = checked ? checked.error.issues.slice(0, 3) : 'undeclared status';
      process.stderr.write(
        `${JSON.stringify({ admin: 'response_invalid', operation: route.operationId, status: res.status, issues })}\n`,
      );
      c.res = undefined;
      c.res = problem(500, 'response_invalid', 'the answer did not match the published schema');
    }
  };
}

function auditCall(route: RouteConfig, meta: AdminRouteMeta): MiddlewareHandler<AdminEnv> {
  return async (c, next) => {
    await next();
    const audit = c.get('audit');
    if (!audit) return;
    const principal = c.get('principal');
    const status = c.res.status;
    let detail: string | null = null;
    if (status >= 400 && (c.res.headers.get('content-type') ?? '').startsWith('application/json')) {
      const body = (await c.res
        .clone()
        .json()
        .catch(() => null)) as { error?: unknown; reason?: unknown; message?: unknown } | null;
      const why = body?.reason ?? body?.message;
      detail =
        [body?.error, why]
          .filter((s) => typeof s === 'string')
          .join(': ')
          .slice(0, 500) || null;
    }
    await audit({
      actor: principal.name,
      role: principal.role,
      method: c.req.method,
      path: new URL(c.req.url).pathname.slice(0, 500),
      action: route.operationId ?? `${route.method} ${route.path}`,
      target: meta.target?.(c)?.slice(0, 200) ?? null,
      status,
      outcome: status < 400 ? 'ok' : status >= 500 ? 'failed' : 'refused',
      detail,
    });
  };
}

/**
 * An OpenAPI route with the admin checks in front of its validators: the role check first (a viewer learns
 * nothing from a 400 on an operator route), the audit outermost so refusals are logged too.
 */
export function adminRoute<R extends RouteConfig & { operationId: string }>(config: R, meta: AdminRouteMeta) {
  ROUTE_ROLES.set(config.operationId, { method: config.method.toUpperCase(), path: config.path, role: meta.role });
  const stateChanging = config.method !== 'get';
  const withErrors = { ...config, responses: { ...COMMON_ERRORS, ...config.responses } };
  return createRoute({
    ...withErrors,
    description:
      `${config.description ?? config.summary ?? ''}\n\nRole: **${meta.role}** or above.${stateChanging ? ' Recorded in the admin audit log.' : ''}`.trim(),
    security: [{ bearer: [] }],
    middleware: [
      ...(stateChanging ? [auditCall(withErrors, meta)] : []),
      requireRole(meta.role),
      validateResponse(withErrors),
    ] as const,
  });
}

/** Query parameter: a page size. */
export const Limit = z.coerce.number().int().min(1).max(500).default(50).openapi({ description: 'Page size (1-500)' });
/** Query parameter: an opaque cursor from a previous page's next_cursor. */
export const Cursor = z.string().max(500).optional().openapi({ description: "A previous page's next_cursor" });
/** Query parameter: an RFC 3339 instant. */
export const Instant = z.iso
  .datetime({ offset: true })
  .optional()
  .transform((s) => (s === undefined ? undefined : new Date(s)));

/** What the feature routes are built over (createAdminApp assembles it). */
export interface AdminDeps {
  node: LifecycleNode;
  store: DurableStore;
  /** The operator queries (src/store/admin/); absent when the store is not one openStore() returned. */
  queries: AdminQueries | undefined;
  /** The Guardian's keys and checkpoint verification; absent → /keys answers 503 and checkpoint signatures go unchecked. */
  signatures: SignatureRegistry | undefined;
  tokens: TokenTable;
  sources: () => BundleSourceStatus[];
  maxBundleBytes: number;
  /** The replay jobs app (src/replay/http.ts), if replay is available. */
  replay: Hono | undefined;
  /** The AgBOM app (src/agbom/http.ts), if the store keeps AgBOMs. */
  agbom: Hono | undefined;
  /** How often the live feed polls the store (ms). */
  feedPollMs: number;
}

/** A refusal thrown from a handler; the v1 app's error handler answers it as an Error body. */
export class AdminError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    reason: string,
  ) {
    super(reason);
    this.name = 'AdminError';
  }
}

export function refuse(status: number, code: string, reason: string): never {
  throw new AdminError(status, code, reason);
}

export function unavailable(what: string): never {
  throw new AdminError(503, 'unavailable', `${what} is not available here`);
}

/** A value as it goes on the wire (Dates become ISO strings); the response validation checks the claimed type. */
export const wire = <T>(value: unknown): T => JSON.parse(JSON.stringify(value)) as T;

/**
 * An app some v1 routes hand their requests to once they have published the schemas and applied roles (replay's
 * jobs app, the AgBOM app): the one that also answers the unversioned /admin paths, so both share one
 * implementation. How its refusals read:
 */
export interface ForwardedApp {
  /** What it is, for people ("replay answered 500"). */
  name: string;
  /** The error code when its refusal names none. */
  failure: string;
  /** The member of its error body that says why. */
  reasonField: 'reason' | 'message';
}

/**
 * The forwarded app's JSON body: a refusal is rethrown as one (answered in the v1 error shape), a success re-sent
 * by the handler so the v1 response validation checks it.
 */
export async function forwardedBody<T>(from: ForwardedApp, res: Response): Promise<T> {
  const body = (await res.json()) as { error?: string; reason?: string; message?: string };
  if (!res.ok)
    refuse(res.status, body.error ?? from.failure, body[from.reasonField] ?? `${from.name} answered ${res.status}`);
  return wire<T>(body);
}

/** A success in another format than JSON (a rendered report or serialization): it goes out as the app made it. */
export function isRenderedAnswer(res: Response): boolean {
  return res.ok && !(res.headers.get('content-type') ?? '').startsWith('application/json');
}

/**
 * Who the lifecycle records as having acted (policy_activations.activated_by, lifecycle_audit): the token's name.
 * With the one shared GUARDIAN_ADMIN_TOKEN, X-Guardian-Actor names the person, as before named tokens existed.
 */
export function lifecycleActor(c: Context<AdminEnv>): string {
  const principal = c.get('principal');
  const header = c.req.header('x-guardian-actor');
  // Free text from the caller: bounded and printable, it lands in the audit tables.
  const name =
    principal.name === 'admin' && header ? header.replace(/[^\x20-\x7e]/g, '?').slice(0, 100) : principal.name;
  return `admin-api:${name}`;
}
