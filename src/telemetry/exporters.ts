// The exporting half of telemetry: step records in, OTel spans (OTLP/HTTP through the official export delegate) and
// OCSF events (JSON lines to their sinks) out. It runs on the export thread (worker.ts) when the Guardian serves, so
// encoding OTLP and serialising and posting OCSF take no time from the event loop that answers requests; in
// process only for sinks handed over as objects (TelemetryOptions.sinks), which cannot cross to another thread.
import {
  createOcsfEmitter,
  ocsfEventsOf,
  sinkOf,
  type EventSink,
  type OcsfEmitter,
  type OcsfEvent,
} from './events/index.ts';
import { settlesBy } from './deadline.ts';
import type { OcsfProduct } from './events/ocsf.ts';
import type { SinkSettings } from './events/sinks.ts';
import type { StepRecord } from './record.ts';
import type { StepTracer, StepTracerOptions } from './traces/index.ts';

/** What the exporters are opened with: plain data, posted to the export thread as it is. */
export interface ExporterSettings {
  /** The tracer's options as data (its callbacks are the export thread's own). */
  otlp?: Required<Omit<StepTracerOptions, 'onDropped' | 'onFailed' | 'headers'>> & Pick<StepTracerOptions, 'headers'>;
  ocsf?: {
    sinks: SinkSettings[];
    queueSize: number;
    batchSize: number;
    flushIntervalMs: number;
  };
  product: OcsfProduct;
}

/** Items waiting per exporter (`otlp`, `ocsf_http`, …), for the queue-depth gauge. */
export type ExporterDepths = Record<string, number>;

export interface Exporters {
  /** Builds and queues the spans and events of `records`; never waits. */
  record(records: readonly StepRecord[]): void;
  depths(): ExporterDepths;
  /**
   * Exports what is queued and `last` (what the caller still held: its own bound limited it, so no queue here drops
   * it again), then stops the exporters; at `until` (epoch ms) gives up, counting what is left as dropped.
   */
  shutdown(last: readonly StepRecord[], until: number): Promise<void>;
}

export interface ExporterHooks {
  /** Telemetry lost: `exporter` is `otlp` or `ocsf_<sink>`. */
  dropped(exporter: string, count: number, why: string): void;
  /** A record no span or event could be built from (a bug, reported rather than thrown at the caller). */
  failed(message: string): void;
}

export async function openExporters(
  settings: ExporterSettings,
  hooks: ExporterHooks,
  /** Sinks given as objects (in process only); else those `settings.ocsf.sinks` describe. */
  sinkObjects?: EventSink[],
): Promise<Exporters> {
  const tracer: StepTracer | undefined = settings.otlp
    ? await (await import('./traces/index.ts')).openStepTracer({
        ...settings.otlp,
        onDropped: (n, why) => hooks.dropped('otlp', n, why),
        onFailed: (message) => hooks.failed(message),
      })
    : undefined;
  const ocsf = settings.ocsf;
  const sinks = sinkObjects ?? ocsf?.sinks.map(sinkOf) ?? [];
  const emitter: OcsfEmitter | undefined =
    sinks.length > 0
      ? createOcsfEmitter({
          sinks,
          queueSize: ocsf?.queueSize ?? 4096,
          batchSize: ocsf?.batchSize ?? 100,
          flushIntervalMs: ocsf?.flushIntervalMs ?? 1000,
          onDropped: (sink, n, why) => hooks.dropped(`ocsf_${sink}`, n, why),
        })
      : undefined;
  return {
    record(records) {
      for (const record of records) {
        try {
          tracer?.record(record);
          emitter?.emit(ocsfEventsOf(record, settings.product));
        } catch (err) {
          hooks.failed(err instanceof Error ? err.message : String(err));
        }
      }
    },
    depths() {
      const out: ExporterDepths = {};
      if (tracer) out.otlp = tracer.pending();
      for (const [kind, depth] of Object.entries(emitter?.depths() ?? {})) out[`ocsf_${kind}`] = depth;
      return out;
    },
    async shutdown(last, until) {
      const events: OcsfEvent[] = [];
      if (emitter)
        for (const record of last) {
          try {
            events.push(...ocsfEventsOf(record, settings.product));
          } catch (err) {
            hooks.failed(err instanceof Error ? err.message : String(err));
          }
        }
      const inTime = await settlesBy(Promise.all([emitter?.flush(events), tracer?.shutdown(last)]), until);
      if (!inTime) {
        tracer?.abandon();
        emitter?.abandon();
      }
      for (const sink of sinks) sink.close?.();
    },
  };
}
