// ACS §17 / §17.1 error table. Only these codes are ever emitted: the spec forbids minting other -320xx codes.

export const AcsErrorCode = {
  ParseError: -32700,
  InvalidRequest: -32600,
  MethodNotFound: -32601,
  InvalidParams: -32602,
  InternalError: -32603,
  SessionRefused: -32000,
  UnsupportedVersion: -32001,
  ProvenanceRequired: -32002,
  CapabilityNotNegotiated: -32003,
  SignatureInvalid: -32004,
  ReplayDetected: -32005,
  TimestampOutOfWindow: -32006,
  ChainMismatch: -32007,
} as const;
export type AcsErrorCode = (typeof AcsErrorCode)[keyof typeof AcsErrorCode];

/** The JSON-RPC `message` for each code: JSON-RPC names for the standard range, ACS names for §17.1. */
export const ERROR_MESSAGES: Record<AcsErrorCode, string> = {
  [AcsErrorCode.ParseError]: 'Parse error',
  [AcsErrorCode.InvalidRequest]: 'Invalid Request',
  [AcsErrorCode.MethodNotFound]: 'Method not found',
  [AcsErrorCode.InvalidParams]: 'Invalid params',
  [AcsErrorCode.InternalError]: 'Internal error',
  [AcsErrorCode.SessionRefused]: 'SESSION_REFUSED',
  [AcsErrorCode.UnsupportedVersion]: 'UNSUPPORTED_VERSION',
  [AcsErrorCode.ProvenanceRequired]: 'PROVENANCE_REQUIRED',
  [AcsErrorCode.CapabilityNotNegotiated]: 'CAPABILITY_NOT_NEGOTIATED',
  [AcsErrorCode.SignatureInvalid]: 'SIGNATURE_INVALID',
  [AcsErrorCode.ReplayDetected]: 'REPLAY_DETECTED',
  [AcsErrorCode.TimestampOutOfWindow]: 'TIMESTAMP_OUT_OF_WINDOW',
  [AcsErrorCode.ChainMismatch]: 'CHAIN_MISMATCH',
};

/** `error.data`: a machine `reason` and a human `message` (§17), plus the code-specific members. */
export interface AcsErrorData {
  reason: string;
  message: string;
  pointer?: string;
  method?: string;
  supported_versions?: string[];
  skew_window_ms?: number;
  [member: string]: unknown;
}

/**
 * A protocol fault answered with a JSON-RPC error. Thrown by pipeline stages and turned into an error
 * envelope by the responder; `authenticated` decides whether the answer is signed (ACS §10, §17; docs/conformance.md: parse errors,
 * -32600 and signature failures are unsigned, everything after verification is signed).
 */
export class AcsError extends Error {
  readonly code: AcsErrorCode;
  readonly data: AcsErrorData;
  constructor(
    code: AcsErrorCode,
    reason: string,
    message: string,
    extra: Omit<AcsErrorData, 'reason' | 'message'> = {},
  ) {
    super(message);
    this.name = 'AcsError';
    this.code = code;
    this.data = { reason, message, ...extra };
  }
}
