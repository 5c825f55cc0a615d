// ACS Observed-Agent SDK (`acs-guardian/client`): handshake, request signing (HMAC-SHA256 baseline, §10),
// fresh request ids and nonces, response-signature verification, chain-head tracking with local recomputation
// of every published chain_hash (§8.2, §8.6), and the §6.4 decision-failure posture (fail open or closed, with
// every failure recorded for audit).
import { randomBytes, randomUUID } from 'node:crypto';
import { computeEntryHash, computeRequestHash } from '../chain/index.ts';
import { entriesCarryProvenanceSummary, entryProvenanceSummary } from '../chain/provenance-summary.ts';
import { hmacEnvelopeSignatures, signEnvelope, verifyEnvelope, type EnvelopeSignatures } from '../acs/signing/index.ts';
import type {
  AcsRequest,
  AcsResult,
  ClientHello,
  JsonRpcErrorObject,
  ResponseEnvelope,
  ServerHello,
} from '../acs/types.ts';

export type {
  AcsRequest,
  AcsResult,
  ClientHello,
  JsonRpcErrorObject,
  ResponseEnvelope,
  ServerHello,
} from '../acs/types.ts';

/** Sends one framed message and returns the answer text. */
export type AcsTransport = (message: string) => Promise<string>;

/** POST /acs over HTTP(S) with fetch. */
export function httpTransport(url: string, options: { timeoutMs?: number } = {}): AcsTransport {
  return async (message) => {
    const res = await fetch(url, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: message,
      signal: AbortSignal.timeout(options.timeoutMs ?? 10_000),
    });
    return res.text();
  };
}

export interface AcsClientOptions {
  transport: AcsTransport;
  agentId: string;
  /** HMAC input keying material shared with the Guardian (or pass `signatures`). */
  ikm?: Uint8Array;
  signatures?: EnvelopeSignatures;
  sessionId?: string;
  /** key_id sent on every request; default "default". */
  keyId?: string;
  acsVersion?: string;
  /** §6.4 posture when no usable decision arrives; default: the ServerHello's on_decision_failure, else "proceed". */
  onDecisionFailure?: 'proceed' | 'deny';
  now?: () => Date;
  /** Send metadata.session_state.chain_hash with each step (§8.6 cross-check). Default true. */
  sendChainHint?: boolean;
  /**
   * The negotiated ServerHello of a session this client did not open with hello(), such as a subagent's (its
   * session inherits its parent's terms): which entry members the published chain head commits to depends on it.
   */
  serverHello?: ServerHello;
}

/** A JSON-RPC error answered by the Guardian (refusals at handshake are decisions, §4.1). */
export class AcsRpcError extends Error {
  constructor(readonly error: JsonRpcErrorObject) {
    super(`${error.code} ${error.message}${typeof error.data?.reason === 'string' ? ` (${error.data.reason})` : ''}`);
    this.name = 'AcsRpcError';
  }
}

export type DecisionFailureReason =
  | 'transport_failed'
  | 'malformed_response'
  | 'error_response'
  | 'signature_invalid'
  | 'chain_head_mismatch'
  | 'request_id_mismatch';

export interface StepOutcome {
  /** The decision to enforce: the Guardian's verified result, or the posture's synthetic one on failure. */
  decision: AcsResult['decision'];
  result: AcsResult | null;
  /** Set when no usable decision arrived (§6.4); the posture was applied and the event audited. */
  failure?: { reason: DecisionFailureReason; detail: string; error?: JsonRpcErrorObject };
}

export interface StepOptions {
  turnId?: string;
  metadata?: Record<string, unknown>;
  /** Overrides for params members (tests use it to send stale timestamps, fixed ids, …). */
  params?: Record<string, unknown>;
  nonce?: boolean;
}

const CONTENT_BEARING = /^(steps\/|agbom\/|protocols\/MCP\/|wrapped:mcp-)/i;

export class AcsClient {
  readonly sessionId: string;
  readonly agentId: string;
  readonly keyId: string;
  readonly #transport: AcsTransport;
  readonly #signatures: EnvelopeSignatures;
  readonly #version: string;
  readonly #now: () => Date;
  readonly #sendHint: boolean;
  #posture: 'proceed' | 'deny' | undefined;
  #nextId = 1;
  #chainHash: string | null = null;
  serverHello: ServerHello | null = null;
  /** Every decision failure and every fail-open proceed (§6.4: MUST be audited). */
  readonly audit: {
    at: string;
    method: string;
    reason: DecisionFailureReason;
    detail: string;
    applied: 'allow' | 'deny';
  }[] = [];

  constructor(options: AcsClientOptions) {
    if (!options.signatures && !options.ikm) throw new Error('AcsClient needs ikm or signatures');
    this.#transport = options.transport;
    this.#signatures = options.signatures ?? hmacEnvelopeSignatures(options.ikm!);
    this.agentId = options.agentId;
    this.sessionId = options.sessionId ?? randomUUID();
    this.keyId = options.keyId ?? 'default';
    this.#version = options.acsVersion ?? '0.1.0';
    this.#now = options.now ?? (() => new Date());
    this.#posture = options.onDecisionFailure;
    this.#sendHint = options.sendChainHint ?? true;
    this.serverHello = options.serverHello ?? null;
  }

  /** The chain head as verified locally (null before the first content-bearing step). */
  get chainHash(): string | null {
    return this.#chainHash;
  }

  /** Builds and signs a request envelope. */
  async buildRequest(method: string, payload: Record<string, unknown>, options: StepOptions = {}): Promise<AcsRequest> {
    const metadata: Record<string, unknown> = {
      agent_id: this.agentId,
      session_id: this.sessionId,
      ...(options.turnId ? { turn_id: options.turnId } : {}),
    };
    if (this.#sendHint && this.#chainHash !== null && CONTENT_BEARING.test(method))
      metadata.session_state = { chain_hash: this.#chainHash };
    Object.assign(metadata, options.metadata);
    const params: Record<string, unknown> = {
      acs_version: this.#version,
      request_id: randomUUID(),
      timestamp: this.#now().toISOString(),
      ...(options.nonce === false ? {} : { nonce: randomBytes(16).toString('hex') }),
      metadata,
      payload,
      ...options.params,
    };
    const envelope = { jsonrpc: '2.0' as const, method, id: this.#nextId++, params };
    const signed = await signEnvelope(envelope, 'params', this.#signatures, {
      sessionId: String(metadata.session_id),
      keyId: this.keyId,
    });
    return signed as unknown as AcsRequest;
  }

  /**
   * Sends an envelope and parses the answer (no interpretation). Throws on transport failure or non-JSON. The chain
   * head is not taken from the answer (step() does that), so with chain hints on, later buildRequest() hints go stale
   * and the Guardian refuses those steps `chain_mismatch`.
   */
  async exchange(request: AcsRequest | string): Promise<ResponseEnvelope> {
    const text = await this.#transport(typeof request === 'string' ? request : JSON.stringify(request));
    return JSON.parse(text) as ResponseEnvelope;
  }

  /** True when the answer's signature verifies for this session (result.signature or error.signature). */
  async verifyResponse(envelope: ResponseEnvelope): Promise<boolean> {
    const location = 'result' in envelope ? 'result' : 'error';
    const outcome = await verifyEnvelope(this.#signatures, envelope as unknown as Record<string, unknown>, location, {
      sessionId: this.sessionId,
      agentId: this.agentId,
    });
    return outcome.ok;
  }

  /** handshake/hello (§4). Resolves to the verified ServerHello; refusals reject with AcsRpcError. */
  async hello(overrides: Partial<ClientHello> = {}): Promise<ServerHello> {
    const clientHello: ClientHello = {
      acs_versions_supported: [this.#version],
      methods_implemented: [],
      transports_supported: ['http', 'stdio'],
      provenance_producer: 'none',
      profiles_supported: ['acs-core'],
      ...overrides,
    };
    const response = await this.exchange(
      await this.buildRequest('handshake/hello', clientHello as unknown as Record<string, unknown>),
    );
    if ('error' in response) throw new AcsRpcError(response.error);
    if (!(await this.verifyResponse(response))) throw new Error('ServerHello signature does not verify');
    const { signature: _sig, ...server } = response.result as ServerHello;
    this.serverHello = server;
    this.#posture ??= server.on_decision_failure ?? 'proceed';
    return server;
  }

  /** system/ping (§11): liveness, never gated by session state. */
  async ping(echo?: unknown): Promise<AcsResult> {
    const response = await this.exchange(await this.buildRequest('system/ping', echo === undefined ? {} : { echo }));
    if ('error' in response) throw new AcsRpcError(response.error);
    return response.result as AcsResult;
  }

  #fail(method: string, reason: DecisionFailureReason, detail: string, error?: JsonRpcErrorObject): StepOutcome {
    const applied = (this.#posture ?? 'proceed') === 'proceed' ? 'allow' : 'deny';
    this.audit.push({ at: this.#now().toISOString(), method, reason, detail, applied });
    return { decision: applied, result: null, failure: { reason, detail, ...(error ? { error } : {}) } };
  }

  /**
   * Sends one step and returns the decision to honour (§6.4). The answer must be signed by the Guardian for this
   * session, and a published chain_hash must equal the head recomputed locally from the request stream.
   */
  async step(method: string, payload: Record<string, unknown>, options: StepOptions = {}): Promise<StepOutcome> {
    const request = await this.buildRequest(method, payload, options);
    let response: ResponseEnvelope;
    try {
      response = await this.exchange(request);
    } catch (err) {
      return this.#fail(method, 'transport_failed', err instanceof Error ? err.message : String(err));
    }
    if (response === null || typeof response !== 'object' || (!('result' in response) && !('error' in response))) {
      return this.#fail(method, 'malformed_response', 'not a JSON-RPC response');
    }
    if ('error' in response)
      return this.#fail(method, 'error_response', `${response.error.code} ${response.error.message}`, response.error);
    if (!(await this.verifyResponse(response)))
      return this.#fail(method, 'signature_invalid', 'response signature does not verify');
    const result = response.result as AcsResult;
    if (result.request_id !== request.params.request_id)
      return this.#fail(method, 'request_id_mismatch', 'answer is for another request');
    if (result.chain_hash !== undefined) {
      // An ACS-Audit session's entries also carry the step's provenance_summary, a function of the request alone.
      const summary = entriesCarryProvenanceSummary(this.serverHello?.profiles_accepted)
        ? { provenance_summary: entryProvenanceSummary(request.params.payload, request.params.request_id) }
        : {};
      const expected = computeEntryHash(
        {
          entry_id: request.params.request_id,
          step_id: request.params.request_id,
          step_type: method,
          request_hash: computeRequestHash(request.params),
          timestamp: request.params.timestamp,
          ...summary,
        },
        this.#chainHash,
      );
      if (expected !== result.chain_hash)
        return this.#fail(method, 'chain_head_mismatch', `published ${result.chain_hash}, expected ${expected}`);
      this.#chainHash = result.chain_hash;
    }
    return { decision: result.decision, result };
  }
}
