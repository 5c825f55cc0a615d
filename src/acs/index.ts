// The ACS v0.1.0 Guardian front door: everything a transport or an embedding needs.
//   createGuardian({ store, engine, signatures }) → guardian.handle(bytes, 'http' | 'stdio') → response envelope
// Transports live in src/server/, the Observed-Agent SDK in src/client/.
export {
  createGuardian,
  resolveConfig,
  GUARDIAN_VERSION,
  type Guardian,
  type GuardianOptions,
  type AuditEvent,
} from './pipeline/index.ts';
export type { GuardianConfig } from './pipeline/config.ts';
export { AcsError, AcsErrorCode, ERROR_MESSAGES, type AcsErrorData } from './errors.ts';
export {
  STEP_METHODS,
  MCP_PERMITTED,
  DISPOSITIONS,
  routeMethod,
  isEvaluableMethod,
  type Disposition,
  type StepMethodSpec,
  type RoutedMethod,
} from './methods.ts';
export {
  finalizeDecision,
  evaluationFailed,
  modificationViolation,
  pointersOverlap,
  type AcsDecision,
  type DecisionContext,
  type FinalDecision,
  type Modifications,
  type PolicyReference,
} from './decisions/index.ts';
export {
  cryptoEnvelopeSignatures,
  hmacEnvelopeSignatures,
  signEnvelope,
  verifyEnvelope,
  signingInput,
  decodeSignatureValue,
  type EnvelopeSignatures,
  type CryptoSignatureRegistry,
  type SignatureLocation,
  type VerifyOutcome,
} from './signing/index.ts';
export { AcsValidator, sharedValidator, type SchemaViolation, type ValidationResult } from './validation/index.ts';
export { loadAcsSchemas, SCHEMA_BASE } from './schemas/index.ts';
export { negotiateVersion, methodsEvaluated } from './pipeline/handshake.ts';
export type * from './types.ts';
