// Admin API for replay jobs, as a Hono sub-app the server mounts under /admin (authentication is the mount
// point's job). Jobs run in the background, in process:
//   POST   /replay                 {against, session?, agent?, since?, until?, method?, decision?, decided_by?}  → 202 job
//   GET    /replay                 jobs, newest first
//   GET    /replay/:id             status, progress, summary when done
//   GET    /replay/:id/events      progress as server-sent events; ends with `done` (or `failed`)
//   GET    /replay/:id/report      ?format=json|md|html|table (409 until the job finished)
//   DELETE /replay/:id             cancel a running job
// File and directory policies are refused unless `allowPaths` is set: an HTTP caller must not make the server
// read arbitrary paths.
import { randomUUID } from 'node:crypto';
import { Hono } from 'hono';
import { streamSSE } from 'hono/streaming';
import { isObject } from '../json.ts';
import type { DurableStore } from '../store/types.ts';
import { runReplay } from './engine.ts';
import type { ReplayProgress, ReplayReport } from './types.ts';
import { ReplayError } from './errors.ts';
import type { LiveSettings } from './live-step.ts';
import { resolveReplayPolicy } from './policy.ts';
import { REPORT_FORMATS, renderReport, type ReportFormat } from './report.ts';
import { parseSelection } from './selection.ts';

export interface ReplayAdminDeps {
  store: DurableStore;
  /** Accept bundle files and Rego directories as `against` (default false: registry revisions and "recorded" only). */
  allowPaths?: boolean;
  /** Base directory for relative paths when allowPaths is set. */
  cwd?: string;
  /** The deployment's custom builtins module (absolute path, `serve --builtins`): replayed policies get its builtins. */
  customBuiltinsModule?: string;
  /** Jobs running at once (default 1); more are refused with 429. */
  maxRunning?: number;
  /** Finished jobs kept for report download (default 20; the oldest finished job is dropped first). */
  keepFinished?: number;
  /** Live configuration facts the replay should assume (client capabilities, deferral bound). */
  live?: LiveSettings;
  /** Notable steps kept per report (default 10 000). */
  maxReportedSteps?: number;
  /** Told when a job starts (`running`) and how it ends (the replay job metrics). */
  onJob?(status: JobStatus): void;
}

export type JobStatus = 'running' | 'done' | 'failed' | 'cancelled';

interface Job {
  id: string;
  status: JobStatus;
  against: string;
  createdAt: string;
  finishedAt: string | null;
  progress: ReplayProgress | null;
  report: ReplayReport | null;
  error: { code: string; message: string } | null;
  abort: AbortController;
  listeners: Set<() => void>;
}

const REPORT_TYPES: Record<ReportFormat, string> = {
  json: 'application/json; charset=utf-8',
  md: 'text/markdown; charset=utf-8',
  html: 'text/html; charset=utf-8',
  table: 'text/plain; charset=utf-8',
};

function jobView(job: Job): Record<string, unknown> {
  return {
    id: job.id,
    status: job.status,
    against: job.against,
    created_at: job.createdAt,
    finished_at: job.finishedAt,
    progress: job.progress,
    summary: job.report?.summary ?? null,
    error: job.error,
  };
}

export function createReplayAdminRoutes(deps: ReplayAdminDeps): Hono {
  const app = new Hono();
  const jobs = new Map<string, Job>();
  const maxRunning = deps.maxRunning ?? 1;
  const keepFinished = deps.keepFinished ?? 20;

  const problem = (status: 400 | 404 | 409 | 429, code: string, message: string): Response =>
    new Response(JSON.stringify({ error: code, message }), {
      status,
      headers: { 'content-type': 'application/json; charset=utf-8' },
    });

  const notify = (job: Job): void => {
    for (const l of job.listeners) l();
  };

  const evict = (): void => {
    const finished = [...jobs.values()].filter((j) => j.status !== 'running');
    for (const j of finished.slice(0, Math.max(0, finished.length - keepFinished))) jobs.delete(j.id);
  };

  async function run(job: Job, selection: ReturnType<typeof parseSelection>): Promise<void> {
    try {
      const policy = await resolveReplayPolicy(deps.store, job.against, {
        allowPaths: deps.allowPaths === true,
        cwd: deps.cwd,
        ...(deps.customBuiltinsModule ? { customBuiltinsModule: deps.customBuiltinsModule } : {}),
      });
      job.report = await runReplay({
        store: deps.store,
        policy,
        selection,
        signal: job.abort.signal,
        maxReportedSteps: deps.maxReportedSteps,
        ...deps.live,
        onProgress: (p) => {
          job.progress = p;
          notify(job);
        },
      });
      job.status = 'done';
    } catch (err) {
      if (err instanceof ReplayError && err.code === 'cancelled' && job.abort.signal.aborted) job.status = 'cancelled';
      else job.status = 'failed';
      // Replay errors are written for operators; anything else is summarised without internals.
      job.error =
        err instanceof ReplayError
          ? { code: err.code, message: err.message }
          : { code: 'replay_failed', message: err instanceof Error ? err.message : String(err) };
    } finally {
      job.finishedAt = new Date().toISOString();
      deps.onJob?.(job.status);
      notify(job);
      evict();
    }
  }

  app.post('/replay', async (c) => {
    let body: unknown;
    try {
      body = await c.req.json();
    } catch {
      return problem(400, 'invalid_json', 'the request body must be a JSON object');
    }
    if (!isObject(body)) return problem(400, 'invalid_json', 'the request body must be a JSON object');
    const known = new Set(['against', 'session', 'agent', 'since', 'until', 'method', 'decision', 'decided_by']);
    const unknown = Object.keys(body).filter((k) => !known.has(k));
    if (unknown.length) return problem(400, 'invalid_selection', `unknown member(s): ${unknown.join(', ')}`);
    if (typeof body.against !== 'string' || body.against.trim().length === 0)
      return problem(400, 'invalid_selection', '`against` must name a revision (or "recorded")');
    let selection;
    try {
      selection = parseSelection({
        session: body.session,
        agent: body.agent,
        since: body.since,
        until: body.until,
        method: body.method,
        decision: body.decision,
        decidedBy: body.decided_by,
      });
    } catch (err) {
      if (err instanceof ReplayError) return problem(400, err.code, err.message);
      throw err;
    }
    const running = [...jobs.values()].filter((j) => j.status === 'running').length;
    if (running >= maxRunning) return problem(429, 'busy', `${running} replay job(s) already running`);
    const job: Job = {
      id: randomUUID(),
      status: 'running',
      against: body.against.trim(),
      createdAt: new Date().toISOString(),
      finishedAt: null,
      progress: null,
      report: null,
      error: null,
      abort: new AbortController(),
      listeners: new Set(),
    };
    jobs.set(job.id, job);
    deps.onJob?.('running');
    void run(job, selection);
    return c.json(
      {
        ...jobView(job),
        links: { self: `replay/${job.id}`, events: `replay/${job.id}/events`, report: `replay/${job.id}/report` },
      },
      202,
    );
  });

  app.get('/replay', (c) => c.json({ jobs: [...jobs.values()].reverse().map(jobView) }));

  app.get('/replay/:id', (c) => {
    const job = jobs.get(c.req.param('id'));
    return job ? c.json(jobView(job)) : problem(404, 'not_found', 'no such replay job');
  });

  app.get('/replay/:id/events', (c) => {
    const job = jobs.get(c.req.param('id'));
    if (!job) return problem(404, 'not_found', 'no such replay job');
    return streamSSE(c, async (stream) => {
      let wake: (() => void) | null = null;
      const listener = (): void => wake?.();
      job.listeners.add(listener);
      stream.onAbort(() => listener());
      try {
        let sent = -1;
        while (!stream.aborted) {
          const processed = job.progress?.processed ?? 0;
          if (job.progress && processed !== sent) {
            sent = processed;
            await stream.writeSSE({ event: 'progress', data: JSON.stringify(job.progress) });
          }
          if (job.status !== 'running') {
            await stream.writeSSE({
              event: job.status === 'done' ? 'done' : 'failed',
              data: JSON.stringify(jobView(job)),
            });
            return;
          }
          await new Promise<void>((resolve) => {
            wake = resolve;
            // Progress arrives once per page; a timer keeps a quiet job from holding the stream forever silent.
            setTimeout(resolve, 5000).unref();
          });
        }
      } finally {
        job.listeners.delete(listener);
      }
    });
  });

  app.get('/replay/:id/report', (c) => {
    const job = jobs.get(c.req.param('id'));
    if (!job) return problem(404, 'not_found', 'no such replay job');
    const format = (c.req.query('format') ?? 'json') as ReportFormat;
    if (!REPORT_FORMATS.includes(format))
      return problem(400, 'invalid_format', `format must be one of ${REPORT_FORMATS.join(', ')}`);
    if (!job.report)
      return problem(
        409,
        job.status === 'running' ? 'not_finished' : 'no_report',
        job.status === 'running' ? 'the job is still running' : `the job ${job.status}`,
      );
    return new Response(renderReport(job.report, format), {
      status: 200,
      headers: {
        'content-type': REPORT_TYPES[format],
        'x-content-type-options': 'nosniff',
        'content-security-policy': "default-src 'none'; style-src 'unsafe-inline'",
      },
    });
  });

  app.delete('/replay/:id', (c) => {
    const job = jobs.get(c.req.param('id'));
    if (!job) return problem(404, 'not_found', 'no such replay job');
    if (job.status !== 'running')
      return problem(409, 'not_running', `the job already ${job.status === 'done' ? 'finished' : job.status}`);
    job.abort.abort();
    return c.json(jobView(job), 202);
  });

  return app;
}
