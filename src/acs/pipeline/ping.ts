// system/ping (§11): always ALLOW regardless of policy, signature or session state; no ContextEntry, no chain, no
// replay slot, never an ACS-specific (-320xx) error. A correctly signed ping is answered signed.
import type { AcsRequest, AcsResult, ResponseEnvelope } from '../types.ts';
import { verifyEnvelope } from '../signing/index.ts';
import type { Authenticated } from './authenticate.ts';
import type { GuardianConfig } from './config.ts';
import { resultEnvelope } from './respond.ts';

export async function handlePing(config: GuardianConfig, request: AcsRequest): Promise<ResponseEnvelope> {
  const payload = request.params.payload;
  const result: AcsResult = {
    type: 'final',
    acs_version: config.supportedVersions[0],
    request_id: request.params.request_id,
    decision: 'allow',
    payload: {
      status: 'ok',
      ...('echo' in payload ? { echo: payload.echo } : {}),
      server_timestamp: config.now().toISOString(),
    },
  };
  let auth: Authenticated | null = null;
  if (request.params.signature !== undefined) {
    const sessionId = request.params.metadata.session_id;
    const outcome = await verifyEnvelope(config.signatures, request as unknown as Record<string, unknown>, 'params', {
      sessionId,
      agentId: request.params.metadata.agent_id,
    });
    if (outcome.ok) auth = { sessionId, keyId: outcome.signature.key_id, algorithm: outcome.signature.algorithm };
  }
  return resultEnvelope(config, request.id, result, auth);
}
