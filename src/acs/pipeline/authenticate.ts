// Stage 3 — authentication (dispatch step 3): every request but system/ping carries a signature over the
// canonical envelope (§10); missing, malformed or wrong → -32004, answered unsigned (no key relationship yet).
import { AcsError, AcsErrorCode } from '../errors.ts';
import { verifyEnvelope, type EnvelopeSignatures } from '../signing/index.ts';
import type { AcsRequest } from '../types.ts';

/** Who a verified request came from: the answer is signed for the same session and key_id. */
export interface Authenticated {
  sessionId: string;
  keyId: string;
  algorithm: string;
  /** JCS(params) as received, signature included: canonicalised once for the check, hashed for request_hash. */
  paramsJcs?: string;
}

export async function authenticateRequest(request: AcsRequest, signatures: EnvelopeSignatures): Promise<Authenticated> {
  const sessionId = request.params.metadata.session_id;
  const outcome = await verifyEnvelope(signatures, request as unknown as Record<string, unknown>, 'params', {
    sessionId,
    agentId: request.params.metadata.agent_id,
  });
  if (!outcome.ok) throw new AcsError(AcsErrorCode.SignatureInvalid, outcome.reason, outcome.message);
  return {
    sessionId,
    keyId: outcome.signature.key_id,
    algorithm: outcome.signature.algorithm,
    paramsJcs: outcome.memberJcs,
  };
}
