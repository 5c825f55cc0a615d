// The options a Guardian is created with, and the resolved configuration every stage reads (resolveConfig fills
// in the defaults). Built once by createGuardian(), and by replay for its live-step evaluation.
import type { PolicyEngine } from '../../policy/types.ts';
import type { GuardianStore } from '../../store/types.ts';
import type { EnvelopeSignatures } from '../signing/index.ts';
import { sharedValidator, type AcsValidator } from '../validation/index.ts';
import type { PipelineTelemetry } from '../../telemetry/observation.ts';

export interface AuditEvent {
  sessionId: string;
  requestId: string;
  method: string;
  code: string;
  detail: string;
}

export interface GuardianOptions {
  store: GuardianStore;
  engine: PolicyEngine;
  /** Request verification and answer signing: cryptoEnvelopeSignatures(createSignatureRegistry(…)). */
  signatures: EnvelopeSignatures;
  /** §10.3 skew window in ms, advertised in ServerHello; default 300000. */
  skewWindowMs?: number;
  /** ACS versions spoken; default ['0.1.0']. */
  supportedVersions?: string[];
  /** Profiles implemented; default ['acs-core']. */
  profiles?: string[];
  /** §4 rule 3: refuse provenance_producer "none" with -32002. Default false. */
  policyRequiresProvenance?: boolean;
  /** Out-of-band client capabilities (§6.5, §9.2). Default both true. */
  client?: { modifyCapable: boolean; askCapable: boolean };
  /** §6: cascading deferrals bounded per session. Default 3. */
  maxDeferralsPerSession?: number;
  timeoutConfig?: { default_ms: number; per_method_ms?: Record<string, number> };
  onDecisionFailure?: 'proceed' | 'deny';
  /** Largest accepted message in bytes (transports enforce it). Default 1 MiB. */
  maxBodyBytes?: number;
  evaluatorVersion?: string;
  /** Clock, injectable for tests of the skew window. */
  now?: () => Date;
  /** Receives substitution/failure events that must be audited (§6.5, §9.2, fail-closed). */
  onAudit?: (event: AuditEvent) => void;
  /** Spans, OCSF events and metrics per message (src/telemetry); absent: nothing is observed. */
  telemetry?: PipelineTelemetry;
}

export interface GuardianConfig {
  store: GuardianStore;
  engine: PolicyEngine;
  signatures: EnvelopeSignatures;
  validator: AcsValidator;
  skewWindowMs: number;
  supportedVersions: string[];
  profiles: string[];
  policyRequiresProvenance: boolean;
  client: { modifyCapable: boolean; askCapable: boolean };
  maxDeferralsPerSession: number;
  timeoutConfig: { default_ms: number; per_method_ms?: Record<string, number> };
  onDecisionFailure: 'proceed' | 'deny';
  maxBodyBytes: number;
  evaluatorVersion: string;
  now: () => Date;
  onAudit: (event: AuditEvent) => void;
  telemetry: PipelineTelemetry | undefined;
}

export const GUARDIAN_VERSION = '0.1.0';

/** The options with their defaults filled in. */
export function resolveConfig(options: GuardianOptions): GuardianConfig {
  return {
    store: options.store,
    engine: options.engine,
    signatures: options.signatures,
    validator: sharedValidator(),
    skewWindowMs: options.skewWindowMs ?? 300_000,
    supportedVersions: options.supportedVersions ?? ['0.1.0'],
    profiles: options.profiles ?? ['acs-core'],
    policyRequiresProvenance: options.policyRequiresProvenance ?? false,
    client: options.client ?? { modifyCapable: true, askCapable: true },
    maxDeferralsPerSession: options.maxDeferralsPerSession ?? 3,
    timeoutConfig: options.timeoutConfig ?? { default_ms: 5000 },
    onDecisionFailure: options.onDecisionFailure ?? 'deny',
    maxBodyBytes: options.maxBodyBytes ?? 1024 * 1024,
    evaluatorVersion: options.evaluatorVersion ?? `acs-guardian/${GUARDIAN_VERSION}`,
    now: options.now ?? (() => new Date()),
    onAudit: options.onAudit ?? (() => {}),
    telemetry: options.telemetry,
  };
}
