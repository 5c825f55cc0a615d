// The policy-engine seam: the pipeline hands a policy input (ACS input contract, docs/policy-authoring.md)
// and gets back the raw decision object the Rego entrypoint produced. The pipeline validates that object
// (fail closed) before it becomes an ACS answer.
import type { Json } from '../json.ts';

/**
 * Key of the optional JSON text of `input.params` a PolicyInput may carry (buildPolicyInput attaches it when the
 * caller has the params' JCS text): the engine splices it into the serialised input instead of stringifying
 * params again. A symbol, so JSON.stringify and structured clone (the worker pool) ignore it.
 */
export const POLICY_PARAMS_JSON: unique symbol = Symbol('acs.policyParamsJson');

export interface PolicyInput {
  method: string;
  params: Json;
  session: Json;
  client: { modify_capable: boolean; ask_capable: boolean };
  guardian: { now: string; policy_version: string };
  /** The session's AgBOM facts (docs/agbom.md); absent when the store keeps no AgBOM. */
  agbom?: Json;
  /** JSON text of exactly `params` (must parse to an equal value); set only by buildPolicyInput. */
  [POLICY_PARAMS_JSON]?: string;
}

/** What a policy's `acs/decision` returns (validated by the pipeline, never trusted blindly). */
export interface RawPolicyDecision {
  decision?: unknown;
  reasoning?: unknown;
  reason_codes?: unknown;
  policy_references?: unknown;
  policy_data?: unknown;
  modifications?: unknown;
  ask_details?: unknown;
  defer_details?: unknown;
  cited_provenance_ids?: unknown;
  [member: string]: unknown;
}

export interface PolicyEvaluation {
  /** Undefined when the entrypoint produced no value. */
  decision: RawPolicyDecision | undefined;
  /** The bundle revision that decided (goes into every policy_reference as policy_version). */
  revision: string;
  durationMs: number;
}

export interface PolicyEngine {
  /** The revision currently in force. */
  readonly revision: string;
  /** Evaluates the entrypoint (default `acs/decision`). Rejects on evaluation errors: the caller fails closed. */
  evaluate(input: PolicyInput, options?: { entrypoint?: string; now?: Date }): Promise<PolicyEvaluation>;
}
