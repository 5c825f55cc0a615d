// Last stage — answers. Results and errors to authenticated requests are signed with the session key over the
// whole envelope (result.signature / error.signature, §10); unauthenticated answers are unsigned.
import { type AcsError, AcsErrorCode, ERROR_MESSAGES } from '../errors.ts';
import { signEnvelope, signEnvelopeText } from '../signing/index.ts';
import type { AcsResult, JsonRpcId, ResponseEnvelope, ServerHello } from '../types.ts';
import type { Authenticated } from './authenticate.ts';
import type { GuardianConfig } from './config.ts';

async function sign<T extends Record<string, unknown>>(
  config: GuardianConfig,
  envelope: T,
  location: 'result' | 'error',
  auth: Authenticated | null,
): Promise<T> {
  if (!auth) return envelope;
  return signEnvelope(envelope, location, config.signatures, {
    sessionId: auth.sessionId,
    keyId: auth.keyId,
    algorithm: auth.algorithm,
  });
}

export async function resultEnvelope(
  config: GuardianConfig,
  id: JsonRpcId,
  result: AcsResult | ServerHello,
  auth: Authenticated | null,
): Promise<ResponseEnvelope> {
  const envelope = { jsonrpc: '2.0' as const, id, result };
  return sign(config, envelope, 'result', auth);
}

/** A signed result envelope and the JCS text of its `result` (signature included), as the store records it. */
export async function signedResultEnvelope(
  config: GuardianConfig,
  id: JsonRpcId,
  result: AcsResult,
  auth: Authenticated,
): Promise<{ envelope: ResponseEnvelope; resultJcs(): string }> {
  const signed = await signEnvelopeText({ jsonrpc: '2.0' as const, id, result }, 'result', config.signatures, {
    sessionId: auth.sessionId,
    keyId: auth.keyId,
    algorithm: auth.algorithm,
  });
  return { envelope: signed.envelope, resultJcs: signed.memberJcs };
}

export async function errorEnvelope(
  config: GuardianConfig,
  id: JsonRpcId | null,
  err: AcsError,
  auth: Authenticated | null,
): Promise<ResponseEnvelope> {
  const envelope = {
    jsonrpc: '2.0' as const,
    id,
    error: { code: err.code, message: ERROR_MESSAGES[err.code], data: { ...err.data } },
  };
  return sign(config, envelope, 'error', auth);
}

/** An unexpected failure: -32603, unsigned, no detail that could leak internals or secrets. */
export function internalError(id: JsonRpcId | null): ResponseEnvelope {
  return {
    jsonrpc: '2.0',
    id,
    error: {
      code: AcsErrorCode.InternalError,
      message: ERROR_MESSAGES[AcsErrorCode.InternalError],
      data: { reason: 'internal_error', message: 'the Guardian failed to process the request' },
    },
  };
}
