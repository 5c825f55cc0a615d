// The request path, stage by stage, in dispatch order (docs/conformance.md):
//   decode → validate envelope → (ping) → authenticate → route → handshake | [session lock: session lookup
//   (this replica's cached row and head, else read) → admit (binding, negotiated, timestamp) → payload → chain
//   hint → evaluate → sign (chain_hash of the entry placed at the head) → commit step (replay keys + entry +
//   decision + session state, one transaction; stale head → again in the session's turn)] → respond.
import type { AcsDecision } from '../decisions/index.ts';
import { AcsError, AcsErrorCode } from '../errors.ts';
import { MCP_PERMITTED, routeMethod } from '../methods.ts';
import type { AcsRequest, AcsResult, JsonRpcId, ResponseEnvelope, TransportKind } from '../types.ts';
import { authenticateRequest, type Authenticated } from './authenticate.ts';
import { checkChainHint, placeEntry, stepEntry } from './chain.ts';
import { auditedProvenanceSummary, validateStepProvenance } from './provenance.ts';
import { ProvenanceIdMemory, type StepProvenanceIds } from './provenance-ids.ts';
import { resolveConfig, type GuardianConfig, type GuardianOptions } from './config.ts';
import { decodeMessage } from './decode.ts';
import { evaluateStep } from './evaluate.ts';
import { auditSubagentStop, sessionWrites } from './advance.ts';
import { handleHello } from './handshake.ts';
import { handlePing } from './ping.ts';
import { errorEnvelope, internalError, resultEnvelope, signedResultEnvelope } from './respond.ts';
import { admitStep, lookupSession, negotiatedHello, sessionState } from './session.ts';
import { SessionCache } from './session-cache.ts';
import { SessionLocks, waitDeadline } from './session-locks.ts';
import { rememberRequest, replayDetected, replayKeysOf } from './freshness.ts';
import { StoreError } from '../../store/errors.ts';
import { agbomTrackerOf } from '../../agbom/tracker.ts';
import type { Json } from '../../json.ts';
import type { ChainHead, SessionRecord, SessionTurn, StepCommit } from '../../store/types.ts';
import type { RequestObservation, TraceCarrier } from '../../telemetry/observation.ts';
import { recoverableId, validateEnvelope, validateMcpPayload, validateStepPayload } from './validate.ts';

export { GUARDIAN_VERSION, resolveConfig, type AuditEvent, type GuardianOptions } from './config.ts';

/** Turns a step may take when its head still moved before the commit (then: store_unavailable). */
const MAX_STALE_ATTEMPTS = 8;

/** How long a session's steps take its turn first after this replica last saw another writer append to it. */
const CONTENDED_MS = 5_000;

function sameHead(a: ChainHead | null, b: ChainHead | null): boolean {
  return a === null || b === null ? a === b : a.seq === b.seq && a.entryHash === b.entryHash;
}

export interface Guardian {
  readonly config: GuardianConfig;
  /** Handles one transport message (raw bytes or text) and returns exactly one response envelope. Never throws. */
  handle(body: Uint8Array | string, transport: TransportKind, carrier?: TraceCarrier): Promise<ResponseEnvelope>;
}

export function createGuardian(options: GuardianOptions): Guardian {
  const config = resolveConfig(options);
  const locks = new SessionLocks();
  const sessions = new SessionCache();
  const provenanceIds = new ProvenanceIdMemory();

  async function decided(
    request: AcsRequest,
    auth: Authenticated,
    decision: AcsDecision,
    version: string,
    extra: Partial<AcsResult> = {},
  ): Promise<ResponseEnvelope> {
    const result: AcsResult = {
      type: 'final',
      acs_version: version,
      request_id: request.params.request_id,
      ...decision,
      ...extra,
    };
    return resultEnvelope(config, request.id, result, auth);
  }

  async function handleStep(
    request: AcsRequest,
    auth: Authenticated,
    routed: ReturnType<typeof routeMethod>,
    obs: RequestObservation | undefined,
    arrivedAt: number,
  ): Promise<ResponseEnvelope> {
    const sessionId = request.params.metadata.session_id;
    const deadline = waitDeadline(config, request.method, arrivedAt);
    return locks.run(
      sessionId,
      async () => {
        // Placed at the head this replica knows and group-committed; when another replica moved the head meanwhile,
        // nothing was written and the step is evaluated again in the session's turn, where no other writer can
        // move the head (docs/running-a-fleet.md). A session another writer appended to lately takes the turn first.
        if (!sessions.isContended(sessionId)) {
          const answered = await attemptStep(request, auth, routed, obs);
          if (answered) return answered;
          sessions.contended(sessionId, CONTENDED_MS);
        }
        for (let attempt = 0; attempt < MAX_STALE_ATTEMPTS; attempt++) {
          const answered = await config.store.withSessionTurn(sessionId, deadline - performance.now(), (turn) =>
            attemptStep(request, auth, routed, obs, turn),
          );
          if (answered) return answered;
        }
        throw new StoreError(
          'unavailable',
          `the chain head of session ${sessionId} kept moving under ${MAX_STALE_ATTEMPTS} turns`,
        );
      },
      deadline,
    );
  }

  /**
   * A refusal before the commit: the request's keys are burnt first. Here rather than a named closure per step:
   * tsx (esbuild keepNames) names every named closure as it is created, a cost paid on every step.
   */
  async function refuse(
    request: AcsRequest,
    auth: Authenticated,
    version: string,
    now: Date,
    refusal: AcsDecision | AcsError,
  ): Promise<ResponseEnvelope | null> {
    await rememberRequest(config.store, request, now, config.skewWindowMs);
    if (refusal instanceof AcsError) throw refusal;
    return decided(request, auth, refusal, version);
  }

  /** The step's audit sink. */
  function auditOf(request: AcsRequest): (e: { code: string; detail: string }) => void {
    return (e) =>
      config.onAudit({
        sessionId: request.params.metadata.session_id,
        requestId: request.params.request_id,
        method: request.method,
        ...e,
      });
  }

  /**
   * One attempt at a step under its session lock, in the session's turn or not; null when the head moved before
   * the commit (retry).
   */
  async function attemptStep(
    request: AcsRequest,
    auth: Authenticated,
    routed: ReturnType<typeof routeMethod>,
    obs: RequestObservation | undefined,
    turn?: SessionTurn,
  ): Promise<ResponseEnvelope | null> {
    const sessionId = request.params.metadata.session_id;
    const now = config.now();
    let cached = sessions.get(sessionId);
    // In the turn the head is known: this replica's copy holds while no other writer appended since its last write.
    if (cached && turn && !sameHead(cached.head, turn.head)) {
      sessions.contended(sessionId, CONTENDED_MS);
      cached = undefined;
    }
    let session: SessionRecord;
    let head: ChainHead | null;
    if (cached) {
      ({ session, head } = cached);
    } else {
      session = await lookupSession(config, request); // -32003 before -32005 (dispatch order, docs/conformance.md)
      // The head the state was read at (one snapshot), so the step is placed where its state is; a store that does
      // not say is asked separately.
      head =
        session.stateHead !== undefined
          ? session.stateHead
          : turn
            ? turn.head
            : await config.store.getChainHead(sessionId);
    }
    const version = negotiatedHello(session).server.negotiated_version;

    // Refusals before the commit still burn the request's keys first, so -32005 wins over them (§10.3) and a
    // replay of a refused request is -32005 too. They are decided on facts that are final once set (agent,
    // key binding, sealing, negotiation), except the chain hint, which a cached head must not refuse alone.
    let admitted: SessionRecord;
    let ids: StepProvenanceIds | undefined;
    try {
      const admission = admitStep(config, request, auth, session, now);
      if (!admission.admitted) return await refuse(request, auth, version, now, admission.refusal);
      admitted = admission.session;
      if (routed.kind === 'step') {
        validateStepPayload(request, routed.spec, config.validator);
        validateStepProvenance(request, routed.spec, config.validator, session.hello, () =>
          sessionState(admitted, cached !== undefined),
        );
      } else if (routed.kind === 'mcp') validateMcpPayload(request, routed.mcpMethod);
      ids = await provenanceIds.check(config.store, request, head); // ACS §7, every session
    } catch (err) {
      if (err instanceof AcsError) return refuse(request, auth, version, now, err);
      throw err;
    }
    const mismatch = checkChainHint(request, head);
    if (mismatch) {
      if (cached && (await config.store.getChainHead(sessionId))?.entryHash !== head?.entryHash) return null;
      return refuse(request, auth, version, now, mismatch);
    }
    obs?.stage('admit');

    const permitted = routed.kind === 'step' ? routed.spec.permitted : MCP_PERMITTED;
    const prior = sessionState(admitted, cached !== undefined);
    // The entry first: its params JCS (hashed for request_hash) is also the policy input's params text.
    const entry = stepEntry(request, auth.paramsJcs, auditedProvenanceSummary(session.hello, request));
    const inventory = await agbomTrackerOf(config.store)?.step(admitted, head, request.method, request.params.payload);
    const evaluated = await evaluateStep(
      config,
      request,
      prior,
      permitted,
      routed.kind === 'mcp',
      entry.paramsJcs,
      inventory?.facts,
    );
    obs?.stage('evaluate');
    if (obs) obs.state = evaluated.state;
    const placed = placeEntry(entry, head);
    const durationMs = Math.max(0, Math.round(evaluated.durationMs));
    const { envelope, resultJcs } = await signedResultEnvelope(
      config,
      request.id,
      {
        type: 'final',
        acs_version: version,
        request_id: request.params.request_id,
        ...evaluated.decision,
        chain_hash: placed.entryHash,
        // Members in RFC 8785 order: the answer's JCS (signature input, stored result) is then JSON.stringify's.
        metadata: {
          evaluation_duration_ms: durationMs,
          evaluator: 'deterministic',
          evaluator_version: config.evaluatorVersion,
        },
      },
      auth,
    );
    obs?.stage('sign');
    const writes = sessionWrites(
      config,
      request,
      admitted,
      session.keyId === null,
      prior,
      evaluated.state,
      evaluated.decision,
    );
    const { keys, expiresAt } = replayKeysOf(request, now, config.skewWindowMs);
    // §8.2 + §10.3 in one transaction: the entry, its delivered decision, the request's keys and the state the
    // next step reads are durable together before the answer leaves, or none of them is.
    const step: StepCommit = {
      expectedHead: head,
      replayKeys: keys,
      replayKeysExpireAt: expiresAt,
      entry,
      decision: {
        result: (envelope as unknown as { result: Json }).result,
        resultJcs: resultJcs(),
        bundleRevision: evaluated.revision,
        evaluationDurationMs: durationMs,
      },
      session: writes.patch,
      ...(writes.child ? { childSession: writes.child } : {}),
      agbom: inventory?.version(evaluated.decision.decision),
    };
    const outcome = await (turn ? turn.commitStep(step) : config.store.commitStep(sessionId, step));
    if (outcome.status === 'replay') throw replayDetected(outcome.kind, request);
    if (outcome.status === 'stale_head') return null;
    obs?.stage('commit');
    sessions.remember(writes.written, { seq: outcome.appended.seq, entryHash: outcome.appended.entryHash });
    inventory?.committed(outcome.appended, evaluated.decision.decision);
    if (ids) provenanceIds.committed(ids, outcome.appended);
    const audit = auditOf(request);
    for (const event of [...evaluated.auditEvents, ...writes.auditEvents]) audit(event);
    // The step is committed: what is delivered must be what was recorded, so a failed check here is audited only.
    await auditSubagentStop(config, request, audit).catch((err: unknown) =>
      audit({ code: 'subagent_chain_unchecked', detail: err instanceof Error ? err.message : String(err) }),
    );
    return envelope;
  }

  async function handle(body: Uint8Array | string, transport: TransportKind, carrier?: TraceCarrier) {
    const obs = config.telemetry?.begin(transport, carrier);
    const envelope = await answer(body, transport, obs);
    if (obs) config.telemetry?.end(obs, envelope);
    return envelope;
  }

  async function answer(
    body: Uint8Array | string,
    transport: TransportKind,
    obs: RequestObservation | undefined,
  ): Promise<ResponseEnvelope> {
    const arrivedAt = performance.now();
    let id: JsonRpcId | null = null;
    let auth: Authenticated | null = null;
    let request: AcsRequest | null = null;
    try {
      if (body.length > config.maxBodyBytes) {
        throw new AcsError(
          AcsErrorCode.InvalidRequest,
          'body_too_large',
          `messages larger than ${config.maxBodyBytes} bytes are refused`,
        );
      }
      const value = decodeMessage(body);
      id = recoverableId(value);
      request = validateEnvelope(value, config.validator);
      if (obs) obs.request = request;
      obs?.stage('validate');
      // Dispatch step 4: ping short-circuits before signature and session checks (§11).
      if (request.method === 'system/ping') return await handlePing(config, request);
      auth = await authenticateRequest(request, config.signatures);
      obs?.stage('authenticate');
      const routed = routeMethod(request.method);
      if (routed.kind === 'ping') return await handlePing(config, request);
      if (routed.kind === 'handshake') {
        const server = await locks.run(request.params.metadata.session_id, () =>
          handleHello(config, request!, auth!, transport),
        );
        obs?.stage('handshake');
        return await resultEnvelope(config, request.id, server, auth);
      }
      return await handleStep(request, auth, routed, obs, arrivedAt);
    } catch (err) {
      if (err instanceof AcsError) {
        try {
          return await errorEnvelope(config, id, err, auth);
        } catch {
          return internalError(id);
        }
      }
      // Not a protocol fault: a store or engine outage on an authenticated step. An error would hand the step to
      // the client's fail-open posture, so answer a signed DENY instead (ACS §6.4, fail closed).
      if (request && auth && request.method !== 'handshake/hello') {
        const busy = err instanceof StoreError && err.code === 'busy';
        try {
          return await decided(
            request,
            auth,
            busy
              ? {
                  decision: 'deny',
                  reasoning:
                    "Other steps of this session held its audit chain until this step's decision deadline; denied (fail closed), not recorded.",
                  reason_codes: ['session_busy'],
                }
              : {
                  decision: 'deny',
                  reasoning: 'The Guardian could not record or evaluate this step; denied (fail closed).',
                  reason_codes: ['store_unavailable'],
                },
            config.supportedVersions[0],
          );
        } catch {
          return internalError(id);
        }
      }
      return internalError(id);
    }
  }

  return { config, handle };
}
