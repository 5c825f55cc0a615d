// The OpenRPC description of the ACS JSON-RPC API (served at GET /acs/openrpc.json and answered for
// `rpc.discover`; docs/admin-api.md "OpenRPC"). Built from the method table (src/acs/methods.ts) and the shipped
// ACS schemas: every method's params are the members of the request envelope's AcsParams (ACS §5), by name, with
// `payload` pointing at the method's hook schema; results point at the response envelope's AcsResult
// (ServerHello for handshake/hello). References use the schemas' `$id`s, which are the published ACS schema URLs
// the Guardian validates against.
import { packageVersion } from '../../package-version.ts';
import { AcsErrorCode, ERROR_MESSAGES } from '../errors.ts';
import type { JsonRpcErrorObject, JsonRpcId } from '../types.ts';
import { STEP_METHODS } from '../methods.ts';
import { SCHEMA_BASE, type JsonSchema, loadAcsSchemas } from '../schemas/index.ts';

export interface OpenRpcDocument {
  openrpc: string;
  info: { title: string; version: string; description: string };
  servers: { name: string; url: string }[];
  methods: JsonSchema[];
  components: { errors: Record<string, { code: number; message: string }> };
}

const ref = (path: string): JsonSchema => ({ $ref: `${SCHEMA_BASE}${path}` });

export function buildOpenRpcDocument(version: string): OpenRpcDocument {
  const envelope = loadAcsSchemas().get('request-envelope.json') as {
    $defs: { AcsParams: { properties: Record<string, JsonSchema>; required: string[] } };
  };
  const acsParams = envelope.$defs.AcsParams;
  const params = (payload: JsonSchema): JsonSchema[] =>
    Object.keys(acsParams.properties).map((name) => ({
      name,
      required: acsParams.required.includes(name),
      schema: name === 'payload' ? payload : ref(`request-envelope.json#/$defs/AcsParams/properties/${name}`),
    }));
  const errors = Object.fromEntries(
    Object.entries(ERROR_MESSAGES).map(([code, message]) => [
      message.replace(/[^A-Za-z0-9_]/g, '_'),
      { code: Number(code), message },
    ]),
  );
  const errorRefs = Object.keys(errors).map((name) => ({ $ref: `#/components/errors/${name}` }));
  const method = (name: string, summary: string, payload: JsonSchema, result: JsonSchema): JsonSchema => ({
    name,
    summary,
    paramStructure: 'by-name',
    params: params(payload),
    result: { name: 'result', schema: result },
    errors: errorRefs,
  });
  const decision = ref('response-envelope.json#/$defs/AcsResult');
  return {
    openrpc: '1.3.2',
    info: {
      title: 'ACS Guardian (Agent Control Standard v0.1.0)',
      version,
      description:
        'Each step an agent takes is one JSON-RPC 2.0 request to POST /acs; the answer is a signed decision. protocols/MCP/<method> and wrapped:mcp-<version>/<method> wrap MCP messages (payload and result as for a step).',
    },
    servers: [{ name: 'guardian', url: '/acs' }],
    methods: [
      {
        // OpenRPC's service discovery method: unsigned, outside the ACS envelope (its name has no ACS prefix).
        name: DISCOVER,
        summary: 'This document (OpenRPC service discovery); no params, no signature',
        params: [],
        result: { name: 'OpenRPC document', schema: { $ref: 'https://meta.open-rpc.org/' } },
      },
      method(
        'handshake/hello',
        'Negotiate version, methods, profiles and signature algorithms (ACS §4)',
        ref('handshake.json#/$defs/ClientHello'),
        ref('handshake.json#/$defs/ServerHello'),
      ),
      method(
        'system/ping',
        'Liveness; always allow, no chain entry (ACS §11)',
        ref('hooks/system-ping.json'),
        decision,
      ),
      ...[...STEP_METHODS.values()].map((spec) =>
        method(
          spec.method,
          `Decide a ${spec.method} step (permits ${spec.permitted.join(', ')})`,
          ref(spec.payloadSchema),
          decision,
        ),
      ),
    ],
    components: { errors },
  };
}

const DISCOVER = 'rpc.discover';

let built: OpenRpcDocument | undefined;
/** The document of this package's version, built once. */
export function acsOpenRpcDocument(): OpenRpcDocument {
  built ??= buildOpenRpcDocument(packageVersion());
  return built;
}

export type DiscoveryAnswer =
  | { jsonrpc: '2.0'; id: JsonRpcId; result: OpenRpcDocument }
  | { jsonrpc: '2.0'; id: JsonRpcId; error: JsonRpcErrorObject };

const DISCOVER_BYTES = Buffer.from(DISCOVER);

/**
 * The transports' answer to an `rpc.discover` request (OpenRPC service discovery), or null for every other
 * message, which goes to the ACS pipeline. The method is not an ACS method (the request envelope's method
 * pattern refuses it), so it is answered before the pipeline, unsigned, like GET /acs/openrpc.json. A body
 * without the method's name in it is passed on unparsed; a notification (no id) is passed on too, and the
 * pipeline refuses it as it refuses any envelope without an id.
 */
export function discoveryAnswer(body: Uint8Array | string): DiscoveryAnswer | null {
  const mentions =
    typeof body === 'string'
      ? body.includes(DISCOVER)
      : Buffer.from(body.buffer, body.byteOffset, body.byteLength).includes(DISCOVER_BYTES);
  if (!mentions) return null;
  let message: unknown;
  try {
    message = JSON.parse(typeof body === 'string' ? body : Buffer.from(body).toString('utf8'));
  } catch {
    return null;
  }
  if (message === null || typeof message !== 'object' || Array.isArray(message)) return null;
  const { jsonrpc, method, id, params } = message as Record<string, unknown>;
  if (jsonrpc !== '2.0' || method !== DISCOVER || (typeof id !== 'string' && typeof id !== 'number')) return null;
  const empty =
    params === undefined ||
    (Array.isArray(params) && params.length === 0) ||
    (params !== null && typeof params === 'object' && Object.keys(params).length === 0);
  if (!empty)
    return {
      jsonrpc: '2.0',
      id,
      error: {
        code: AcsErrorCode.InvalidParams,
        message: ERROR_MESSAGES[AcsErrorCode.InvalidParams],
        data: { reason: 'params_not_allowed', message: `${DISCOVER} takes no params` },
      },
    };
  return { jsonrpc: '2.0', id, result: acsOpenRpcDocument() };
}
