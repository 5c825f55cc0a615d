// Wire types of the ACS v0.1.0 envelopes (request-envelope.json, response-envelope.json, handshake.json).
import type { EnvelopeSignature } from '../crypto/types.ts';
import type { AcsDecision } from './decisions/index.ts';

export type JsonRpcId = string | number;

export interface AcsMetadata {
  agent_id: string;
  session_id: string;
  agent_name?: string;
  turn_id?: string;
  parent_turn_id?: string;
  session_state?: { chain_hash?: string; [member: string]: unknown };
  environment?: 'development' | 'staging' | 'production';
  platform?: string;
  platform_version?: string;
  user_context?: { user_id?: string; roles?: string[]; authentication_method?: string };
  [member: string]: unknown;
}

export interface AcsParams {
  acs_version: string;
  request_id: string;
  timestamp: string;
  nonce?: string;
  tenant_id?: string;
  metadata: AcsMetadata;
  payload: Record<string, unknown>;
  signature?: EnvelopeSignature;
  [member: string]: unknown;
}

export interface AcsRequest {
  jsonrpc: '2.0';
  method: string;
  id: JsonRpcId;
  params: AcsParams;
}

export interface ResultMetadata {
  evaluator: 'deterministic' | 'agent' | 'composite';
  evaluator_version: string;
  evaluation_duration_ms: number;
  model_id?: string;
  confidence?: number;
}

export interface AcsResult extends AcsDecision {
  type: 'final';
  acs_version: string;
  request_id: string;
  payload?: Record<string, unknown>;
  chain_hash?: string;
  metadata?: ResultMetadata;
  signature?: EnvelopeSignature;
}

export interface JsonRpcErrorObject {
  code: number;
  message: string;
  data?: Record<string, unknown>;
  signature?: EnvelopeSignature;
}

export interface ClientHello {
  acs_versions_supported: string[];
  methods_implemented: string[];
  transports_supported: ('http' | 'https' | 'stdio')[];
  provenance_producer: 'deterministic' | 'none';
  max_payload_size_bytes?: number;
  wrapped_protocols?: { protocol: 'MCP' | 'A2A'; version: string }[];
  profiles_supported?: string[];
  [member: string]: unknown;
}

export interface ServerHello {
  negotiated_version: string;
  methods_evaluated: string[];
  selected_transport: 'http' | 'https' | 'stdio';
  timeout_config: { default_ms: number; per_method_ms?: Record<string, number> };
  signature_algorithms_supported?: string[];
  on_decision_failure?: 'proceed' | 'deny';
  skew_window_ms?: number;
  approver_types_supported?: ('human' | 'agent' | 'service')[];
  policy_requires_provenance?: boolean;
  agbom_serializations_supported?: string[];
  trace_emission?: { otel_enabled?: boolean; ocsf_enabled?: boolean; otel_collector_endpoint?: string };
  profiles_accepted?: string[];
  signature?: EnvelopeSignature;
}

/** A response envelope: `result` is an AcsResult, or the ServerHello for handshake/hello. */
export type ResponseEnvelope =
  | { jsonrpc: '2.0'; id: JsonRpcId; result: AcsResult | ServerHello }
  | { jsonrpc: '2.0'; id: JsonRpcId | null; error: JsonRpcErrorObject };

export type TransportKind = 'http' | 'https' | 'stdio';
