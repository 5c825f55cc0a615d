// Where the telemetry records go once read off the request path: the export thread (worker.ts), or exporters on
// this thread when sinks are handed over as objects, which cannot cross threads. Either way `send` never blocks:
// what the thread cannot take waits in the caller's backlog, and a crashed thread is started again.
import { WorkerThread } from '../worker-thread/index.ts';
import type { EventSink } from './events/index.ts';
import { openExporters, type ExporterDepths, type ExporterHooks, type ExporterSettings } from './exporters.ts';
import type { StepRecord } from './facts.ts';
import type { Logger } from './logging/index.ts';
import type { ExportNotice, ExportProtocol } from './worker.ts';

/** Export threads started again after a crash, at most, before the exporters are given up (everything dropped). */
const MAX_RESTARTS = 3;

/** Where records go: the export thread, or exporters on this thread (sinks given as objects). */
export interface ExportChannel {
  /** Records can be sent now (false while the export thread holds its window of unanswered records). */
  ready(): boolean;
  send(records: StepRecord[]): void;
  /** Items waiting per exporter, and the records sent and not yet answered. */
  depths(): ExporterDepths;
  inFlight(): number;
  /**
   * Exports what is queued and `last` (the caller's backlog), then stops; gives up at `until` (epoch ms), counting
   * what is left as dropped. The caller also bounds the wait (kill).
   */
  close(last: StepRecord[], until: number): Promise<void>;
  /** Stops at once, whatever is left (what the exporters last reported holding is counted as dropped). */
  kill(): Promise<void>;
}

export async function inProcessChannel(
  settings: ExporterSettings,
  hooks: ExporterHooks,
  sinks: EventSink[],
): Promise<ExportChannel> {
  const exporters = await openExporters(settings, hooks, sinks);
  return {
    ready: () => true,
    send: (records) => exporters.record(records),
    depths: () => exporters.depths(),
    inFlight: () => 0,
    close: (last, until) => exporters.shutdown(last, until),
    kill: async () => {},
  };
}

/**
 * The export thread (worker.ts). At most `window` records are sent and not yet answered; beyond, they wait in the
 * backlog (and past its bound are dropped). A crashed thread loses what it held (counted) and is started again.
 */
export async function threadChannel(
  settings: ExporterSettings,
  hooks: ExporterHooks,
  window: number,
  logger: Logger,
  onReady: () => void,
): Promise<ExportChannel> {
  let depths: ExporterDepths = {};
  if (settings.otlp) depths.otlp = 0;
  for (const sink of settings.ocsf?.sinks ?? []) depths[`ocsf_${sink.kind}`] = 0;
  let inFlight = 0;
  let thread: WorkerThread<ExportProtocol> | null = null;
  let closing = false;
  /** The export thread answered the shutdown (it exported everything, or counted what it gave up). */
  let closed = false;
  /** Records handed over with the shutdown (the backlog), which the exporters' depths do not include yet. */
  let handedAtClose = 0;
  let restarts = 0;
  const onNotice = (_: string, body: unknown): void => {
    const n = body as ExportNotice;
    if (n.kind === 'dropped') hooks.dropped(n.exporter, n.count, n.why);
    else hooks.failed(n.message);
  };
  async function start(): Promise<void> {
    const t = new WorkerThread<ExportProtocol>(new URL('./worker.ts', import.meta.url), {
      name: 'telemetry export thread',
      // Held open only while a batch is unanswered, like the exporters' own timers (unref'd) before it.
      unrefWhenIdle: true,
      onNotice,
      onCrash(err) {
        // A thread that never opened fails its `open` request instead (openTelemetry reports it).
        if (thread !== t) return;
        thread = null;
        if (closing) return;
        logger.error({ err: err.message }, 'telemetry: the export thread died');
        if (restarts++ >= MAX_RESTARTS) {
          logger.error('telemetry: export thread given up; spans and OCSF events are dropped from now on');
          return;
        }
        start().then(onReady, (e: unknown) =>
          logger.error({ err: e instanceof Error ? e.message : String(e) }, 'telemetry: export thread restart failed'),
        );
      },
    });
    try {
      await t.request('open', settings);
    } catch (err) {
      await t.terminate().catch(() => {});
      throw err;
    }
    thread = t;
  }
  await start();
  return {
    ready: () => thread !== null && inFlight < window,
    send(records) {
      const t = thread;
      if (!t) return hooks.dropped('pipeline', records.length, 'telemetry export thread unavailable');
      inFlight += records.length;
      t.request('records', records).then(
        (answer) => {
          depths = answer;
          inFlight -= records.length;
          onReady();
        },
        (err: unknown) => {
          inFlight -= records.length;
          hooks.dropped('pipeline', records.length, err instanceof Error ? err.message : String(err));
          onReady();
        },
      );
    },
    depths: () => depths,
    inFlight: () => inFlight,
    async close(last, until) {
      closing = true;
      const t = thread;
      if (!t) return hooks.dropped('pipeline', last.length, 'telemetry export thread unavailable');
      handedAtClose = last.length;
      try {
        await t.request('shutdown', { records: last, until });
        closed = true;
      } finally {
        await t.terminate().catch(() => {});
      }
    },
    async kill() {
      closing = true;
      const t = thread;
      await t?.terminate().catch(() => {});
      // The thread did not answer by the caller's deadline (it gives up before it, and counts what it held, so
      // this is a thread stuck past it): what it last said it held is lost, as are the records it never took.
      if (!t || closed) return;
      const why = 'export thread stopped at the shutdown deadline';
      for (const [exporter, depth] of Object.entries(depths)) if (depth > 0) hooks.dropped(exporter, depth, why);
      if (handedAtClose > 0) hooks.dropped('pipeline', handedAtClose, why);
    },
  };
}
