// The export thread: step records arrive in batches from the thread that answers requests; spans are encoded
// and exported over OTLP/HTTP, OCSF events serialised and sent to their sinks, all here (exporters.ts).
// Each batch is answered with the exporters' queue depths (the parent bounds what it has sent and not had answered);
// drops and failures are told to the parent as notices, where they are counted and logged. Drops during the
// shutdown go back with its answer instead: the parent counts either them or, when no answer comes by its
// deadline, what this thread last said it held, never both (export-channel.ts).
import { noticeParent, serveRequests } from '../worker-thread/index.ts';
import { openExporters, type ExporterDepths, type Exporters, type ExporterSettings } from './exporters.ts';
import type { StepRecord } from './record.ts';

/** Telemetry the exporters lost: how many items of `exporter` (`otlp` in spans, `ocsf_<sink>` in events) and why. */
export interface DropNotice {
  kind: 'dropped';
  exporter: string;
  count: number;
  why: string;
}

export type ExportProtocol = {
  open: { request: ExporterSettings; response: null };
  records: { request: StepRecord[]; response: ExporterDepths };
  /**
   * The records the parent still held, and when (epoch ms) to give up what is left; answered once everything is
   * exported or given up, with the drops of the shutdown.
   */
  shutdown: { request: { records: StepRecord[]; until: number }; response: DropNotice[] };
};

/** A notice of the export thread: telemetry dropped, or a record nothing could be built from. */
export type ExportNotice = DropNotice | { kind: 'failed'; message: string };

/** The drops of the shutdown under way, answered with it (null before the shutdown). */
let shutdownDrops: DropNotice[] | null = null;

function notice(body: ExportNotice): void {
  if (body.kind === 'dropped' && shutdownDrops) shutdownDrops.push(body);
  else noticeParent('telemetry', body);
}

let exporters: Exporters | undefined;

serveRequests<ExportProtocol>(
  {
    async open(settings) {
      exporters = await openExporters(settings, {
        dropped: (exporter, count, why) => notice({ kind: 'dropped', exporter, count, why }),
        failed: (message) => notice({ kind: 'failed', message }),
      });
      return null;
    },
    records(records) {
      if (!exporters) throw new Error('telemetry export thread not opened');
      exporters.record(records);
      return exporters.depths();
    },
    async shutdown({ records, until }) {
      shutdownDrops = [];
      await exporters?.shutdown(records, until);
      return shutdownDrops;
    },
  },
  // open before the first batch, the last batch before shutdown.
  { ordered: true },
);
