// The resolved configuration every stage reads. Built once by createGuardian().
import type { PolicyEngine } from '../../policy/types.ts';
import type { GuardianStore } from '../../store/types.ts';
import type { EnvelopeSignatures } from '../signing/index.ts';
import type { AcsValidator } from '../validation/index.ts';
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
