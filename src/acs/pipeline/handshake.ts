// handshake/hello (§4): after params/ids and signature, in this order: timestamp → ClientHello
// schema → replay/renegotiation → version → transport → provenance → methods/profiles. The answer's `result`
// is the ServerHello itself, signed at result.signature.
import type { Json } from '../../json.ts';
import { AcsError, AcsErrorCode } from '../errors.ts';
import { routeMethod } from '../methods.ts';
import type { AcsRequest, ClientHello, ServerHello, TransportKind } from '../types.ts';
import type { Authenticated } from './authenticate.ts';
import type { GuardianConfig } from './config.ts';
import { checkTimestamp, rememberRequest } from './freshness.ts';
import { AGBOM_SERIALIZATIONS } from '../../agbom/formats.ts';

const major = (v: string): string => v.split('.')[0];
const semverKey = (v: string): number[] => v.split('.').map(Number);
function compareSemver(a: string, b: string): number {
  const x = semverKey(a);
  const y = semverKey(b);
  for (let i = 0; i < 3; i++) if (x[i] !== y[i]) return x[i] - y[i];
  return 0;
}

/** Rule 1: the highest supported version whose major the client offers; null when none. */
export function negotiateVersion(offered: string[], supported: string[]): string | null {
  const majors = new Set(offered.map(major));
  const candidates = supported.filter((v) => majors.has(major(v))).sort(compareSemver);
  return candidates.at(-1) ?? null;
}

/**
 * Whether an `agbom/*` method is negotiated under the accepted profiles (ACS Inspect, "Wire methods"):
 * `agbom/snapshot` with ACS-Inspect or ACS-Inspect-Dynamic, `agbom/changed` ("part of the ACS-Inspect-Dynamic
 * profile extension") with ACS-Inspect-Dynamic only. The profiles are those accepted, not those offered: a
 * Guardian that does not declare Inspect evaluates no AgBOM method (§17: -32003 for them).
 */
function agbomNegotiated(method: string, profilesAccepted: readonly string[]): boolean {
  const dynamic = profilesAccepted.includes('acs-inspect-dynamic');
  if (method === 'agbom/changed') return dynamic;
  return dynamic || profilesAccepted.includes('acs-inspect');
}

/**
 * Rule 4: client order kept; only methods this Guardian answers, MCP only as declared in wrapped_protocols,
 * `agbom/*` only under an accepted Inspect profile.
 */
export function methodsEvaluated(hello: ClientHello, profilesAccepted: readonly string[]): string[] {
  const mcpVersions = new Set(
    (hello.wrapped_protocols ?? []).filter((w) => w.protocol === 'MCP').map((w) => w.version),
  );
  const out: string[] = [];
  for (const method of new Set(hello.methods_implemented)) {
    let routed;
    try {
      routed = routeMethod(method);
    } catch {
      continue;
    }
    if (routed.kind === 'handshake') continue;
    if (routed.kind === 'mcp') {
      if (routed.version === null ? mcpVersions.size === 0 : !mcpVersions.has(routed.version)) continue;
    }
    if (routed.kind === 'step' && method.startsWith('agbom/') && !agbomNegotiated(method, profilesAccepted)) continue;
    out.push(method);
  }
  return out;
}

export interface NegotiatedHello {
  client: ClientHello;
  server: ServerHello;
}

export async function handleHello(
  config: GuardianConfig,
  request: AcsRequest,
  auth: Authenticated,
  transport: TransportKind,
): Promise<ServerHello> {
  const now = config.now();
  checkTimestamp(request, now, config.skewWindowMs);
  const check = config.validator.clientHello(request.params.payload);
  if (!check.ok) {
    // Rule 6: malformed ClientHello → -32602 (Python reference; docs/conformance.md, interop choices).
    throw new AcsError(AcsErrorCode.InvalidParams, 'client_hello_invalid', `ClientHello: ${check.violation.message}`, {
      pointer: '/params/payload' + check.violation.pointer,
      method: request.method,
    });
  }
  const hello = request.params.payload as unknown as ClientHello;
  await rememberRequest(config.store, request, now, config.skewWindowMs);
  const sessionId = request.params.metadata.session_id;
  if (await config.store.getSession(sessionId)) {
    throw new AcsError(
      AcsErrorCode.SessionRefused,
      'renegotiation_not_supported',
      'this session is already negotiated; ACS v0.1 has no renegotiation',
    );
  }
  const agentId = request.params.metadata.agent_id;
  if (agentId.length === 0 || agentId.length > 512) {
    throw new AcsError(
      AcsErrorCode.SessionRefused,
      'agent_id_invalid',
      'metadata.agent_id must be a non-empty string of at most 512 characters',
    );
  }
  const version = negotiateVersion(hello.acs_versions_supported, config.supportedVersions);
  if (version === null) {
    throw new AcsError(
      AcsErrorCode.UnsupportedVersion,
      'no_common_version',
      `no common ACS major version; this Guardian speaks ${config.supportedVersions.join(', ')}`,
      {
        supported_versions: config.supportedVersions,
      },
    );
  }
  if (!hello.transports_supported.includes(transport)) {
    throw new AcsError(
      AcsErrorCode.SessionRefused,
      'no_common_transport',
      `this connection is ${transport}; the client offered ${hello.transports_supported.join(', ')}`,
    );
  }
  if (config.policyRequiresProvenance && hello.provenance_producer === 'none') {
    throw new AcsError(
      AcsErrorCode.ProvenanceRequired,
      'provenance_required',
      'policy requires Provenance; re-handshake with provenance_producer "deterministic"',
    );
  }
  // ACS-Provenance is a deterministic producer's profile (conformance.md): a `none` producer is not offered it.
  const profilesAccepted = (hello.profiles_supported ?? []).filter(
    (p) => config.profiles.includes(p) && (p !== 'acs-provenance' || hello.provenance_producer === 'deterministic'),
  );
  const server: ServerHello = {
    negotiated_version: version,
    methods_evaluated: methodsEvaluated(hello, profilesAccepted),
    selected_transport: transport,
    timeout_config: config.timeoutConfig,
    signature_algorithms_supported: config.signatures.supportedAlgorithms(),
    on_decision_failure: config.onDecisionFailure,
    skew_window_ms: config.skewWindowMs,
    policy_requires_provenance: config.policyRequiresProvenance,
    profiles_accepted: profilesAccepted,
    ...(config.telemetry?.emission ? { trace_emission: config.telemetry.emission } : {}),
    // ACS Inspect: the serializations the canonical AgBOM renders into (src/agbom/renderers, docs/agbom.md);
    // handshake.json: a Guardian claiming ACS-Inspect includes them, one not claiming it for this session omits it.
    ...(profilesAccepted.some((p) => p === 'acs-inspect' || p === 'acs-inspect-dynamic')
      ? { agbom_serializations_supported: [...AGBOM_SERIALIZATIONS] }
      : {}),
  };
  await config.store.createSession({
    id: sessionId,
    tenantId: request.params.tenant_id ?? null,
    agentId: request.params.metadata.agent_id,
    keyId: auth.keyId,
    hello: { client: hello, server } as unknown as Json,
    intent: null,
    state: null,
    parentSessionId: null,
    createdAt: now,
  });
  return server;
}
