// What the request pipeline tells telemetry about one message: when each stage ended, the request once decoded,
// and the session state the evaluation produced. The pipeline only records (a clock read per stage); spans, OCSF
// events and metrics are built from the finished record afterwards, off the request path (ACS §Trace: trace
// events MUST NOT block enforcement).
import { performance } from 'node:perf_hooks';
import type { AcsRequest, ResponseEnvelope, TransportKind } from '../acs/types.ts';
import type { SessionState } from '../policy/index.ts';

/** The pipeline stages an operator sees as child spans and in the stage histogram. */
export const PIPELINE_STAGES = [
  'validate',
  'authenticate',
  'admit',
  'handshake',
  'evaluate',
  'sign',
  'commit',
] as const;
export type PipelineStage = (typeof PIPELINE_STAGES)[number];
const STAGE_INDEX = new Map<string, number>(PIPELINE_STAGES.map((s, i) => [s, i]));

/** W3C Trace Context headers of the transport message (HTTP), when the caller sent them. */
export interface TraceCarrier {
  traceparent?: string;
  tracestate?: string;
}

export class RequestObservation {
  readonly transport: TransportKind;
  readonly carrier: TraceCarrier | undefined;
  /** Wall clock (epoch ms) and monotonic clock at the message's arrival. */
  readonly startedAtEpochMs = Date.now();
  readonly startMs = performance.now();
  endMs = 0;
  /**
   * The stages in the order they ended, as pairs (index in PIPELINE_STAGES, performance.now() at the end); a stage
   * began where the previous one ended. Numbers only: no object per stage on the request path.
   */
  readonly marks: number[] = [];
  request: AcsRequest | undefined;
  /** The session state with this step folded in (provenance records with their lineage depth). */
  state: SessionState | undefined;
  envelope: ResponseEnvelope | undefined;

  constructor(transport: TransportKind, carrier: TraceCarrier | undefined) {
    this.transport = transport;
    this.carrier = carrier;
  }

  /** Marks the end of `stage`; it began where the previous stage ended. */
  stage(stage: PipelineStage): void {
    this.marks.push(STAGE_INDEX.get(stage) ?? 0, performance.now());
  }

  /** Epoch ms of a monotonic instant of this request. */
  epochMsOf(monotonicMs: number): number {
    return this.startedAtEpochMs + (monotonicMs - this.startMs);
  }
}

/** What the pipeline calls; absent (undefined) when nothing observes the Guardian. */
export interface PipelineTelemetry {
  begin(transport: TransportKind, carrier?: TraceCarrier): RequestObservation;
  /** Records the answer; never throws and never waits (the work is queued). */
  end(observation: RequestObservation, envelope: ResponseEnvelope): void;
  /** ServerHello `trace_emission` (ACS §4), or undefined when neither OTel nor OCSF is on. */
  readonly emission: TraceEmission | undefined;
}

export interface TraceEmission {
  otel_enabled: boolean;
  ocsf_enabled: boolean;
  otel_collector_endpoint?: string;
}
