// Stage 2 — envelope validation (dispatch step 2): request-envelope.json + JCS-canonicalisable → else -32600.
// Stage 8 helpers live here too: payload schemas and the wrapped-MCP message shape → -32602.
import { AcsError, AcsErrorCode } from '../errors.ts';
import type { StepMethodSpec } from '../methods.ts';
import type { AcsRequest, JsonRpcId } from '../types.ts';
import type { AcsValidator } from '../validation/index.ts';

/** The id to echo in an error for this value, or null when it cannot be determined (JSON-RPC 2.0 §5). */
export function recoverableId(value: unknown): JsonRpcId | null {
  if (value === null || typeof value !== 'object' || Array.isArray(value)) return null;
  const id = (value as Record<string, unknown>).id;
  return typeof id === 'string' || (typeof id === 'number' && Number.isFinite(id)) ? id : null;
}

/**
 * Why RFC 8785 cannot canonicalise the value faithfully, or null. Non-finite numbers (1e400 parses to Infinity),
 * integers beyond 2^53 (their JCS text differs from what was signed) and lone surrogates (JCS requires
 * well-formed Unicode) are refused before any signature or policy work.
 */
const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;
const ANY_SURROGATE = /[\uD800-\uDFFF]/;
const isWellFormed = (s: string): boolean => !ANY_SURROGATE.test(s) || !LONE_SURROGATE.test(s);

export function canonicalisationProblem(value: unknown, pointer = ''): { pointer: string; message: string } | null {
  // The walk keeps the path as names; the pointer text is only built for the value that fails.
  const path: (string | number)[] = [];
  const message = problemAt(value, path);
  if (message === null) return null;
  return {
    pointer: pointer + path.map((p) => '/' + String(p).replace(/~/g, '~0').replace(/\//g, '~1')).join(''),
    message,
  };
}

/** The first problem under `value`, with `path` left pointing at it; null (and `path` unchanged) when none. */
function problemAt(value: unknown, path: (string | number)[]): string | null {
  if (typeof value === 'number') {
    if (!Number.isFinite(value)) return 'number is out of the IEEE-754 double range';
    if (Number.isInteger(value) && !Number.isSafeInteger(value) && Math.abs(value) < 1e21) {
      return 'integer beyond 2^53 cannot be canonicalised without losing precision';
    }
    return null;
  }
  if (typeof value === 'string') return isWellFormed(value) ? null : 'string contains a lone surrogate';
  if (Array.isArray(value)) {
    for (let i = 0; i < value.length; i++) {
      path.push(i);
      const problem = problemAt(value[i], path);
      if (problem) return problem;
      path.pop();
    }
    return null;
  }
  if (value !== null && typeof value === 'object') {
    for (const key in value) {
      if (!Object.hasOwn(value, key)) continue;
      path.push(key);
      if (!isWellFormed(key)) return 'member name contains a lone surrogate';
      const problem = problemAt((value as Record<string, unknown>)[key], path);
      if (problem) return problem;
      path.pop();
    }
  }
  return null;
}

export function validateEnvelope(value: unknown, validator: AcsValidator): AcsRequest {
  if (Array.isArray(value)) {
    // Batches are refused (ACS §3; documented in docs/conformance.md).
    throw new AcsError(
      AcsErrorCode.InvalidRequest,
      'batch_unsupported',
      'JSON-RPC batches are not supported by this Guardian; send one request per message',
    );
  }
  const check = validator.requestEnvelope(value);
  if (!check.ok) {
    throw new AcsError(
      AcsErrorCode.InvalidRequest,
      'envelope_invalid',
      `not a valid ACS request envelope: ${check.violation.message}`,
      { pointer: check.violation.pointer },
    );
  }
  const problem = canonicalisationProblem(value);
  if (problem) {
    throw new AcsError(
      AcsErrorCode.InvalidRequest,
      'not_canonicalizable',
      `the envelope cannot be canonicalised (RFC 8785): ${problem.pointer} ${problem.message}`,
      { pointer: problem.pointer },
    );
  }
  return value as AcsRequest;
}

/** Payload schema of a hook → -32602 with data.pointer (relative to the envelope) and data.method. */
export function validateStepPayload(request: AcsRequest, spec: StepMethodSpec, validator: AcsValidator): void {
  const check = validator.validate(spec.payloadSchema, request.params.payload);
  if (!check.ok) {
    throw new AcsError(
      AcsErrorCode.InvalidParams,
      'payload_invalid',
      `${request.method} payload: ${check.violation.message}`,
      {
        pointer: '/params/payload' + check.violation.pointer,
        method: request.method,
      },
    );
  }
}

/** The intact MCP JSON-RPC message carried in params.payload (ACS extend_mcp.md) → -32602 when malformed. */
export function validateMcpPayload(request: AcsRequest, mcpMethod: string): void {
  const p = request.params.payload;
  const fail = (pointer: string, message: string): never => {
    throw new AcsError(AcsErrorCode.InvalidParams, 'mcp_message_invalid', `wrapped MCP message: ${message}`, {
      pointer: '/params/payload' + pointer,
      method: request.method,
    });
  };
  if (p.jsonrpc !== '2.0') fail('/jsonrpc', 'jsonrpc must be "2.0"');
  if ('id' in p && !(typeof p.id === 'string' || (typeof p.id === 'number' && Number.isFinite(p.id))))
    fail('/id', 'id must be a string or a number');
  if ('method' in p) {
    if (p.method !== mcpMethod) fail('/method', `method must equal the wrapped method ${JSON.stringify(mcpMethod)}`);
    if ('result' in p || 'error' in p) fail('', 'a request carries no result or error');
    if ('params' in p && (p.params === null || typeof p.params !== 'object' || Array.isArray(p.params)))
      fail('/params', 'params must be an object');
  } else {
    if (!('id' in p)) fail('/id', 'a response must carry an id');
    const hasResult = 'result' in p;
    const hasError = 'error' in p;
    if (hasResult === hasError) fail('', 'a response carries exactly one of result or error');
    if (hasResult && (p.result === null || typeof p.result !== 'object' || Array.isArray(p.result)))
      fail('/result', 'result must be an object');
    if (hasError) {
      const e = p.error as Record<string, unknown> | null;
      if (e === null || typeof e !== 'object' || !Number.isInteger(e.code) || typeof e.message !== 'string')
        fail('/error', 'error must be {code: integer, message: string}');
    }
  }
}
