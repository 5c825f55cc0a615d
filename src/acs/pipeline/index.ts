// The request path, stage by stage, in the GUIDE §9 dispatch order:
//   decode → validate envelope → (ping) → authenticate → route → handshake | [session lock: session lookup
//   (cached row validated by the chain head) ‖ replay keys → admit (binding, negotiated, timestamp) → payload →
//   chain hint → append entry ‖ evaluate → sign → advance ‖ record decision] → respond.
import type { AcsDecision } from '../decisions/index.ts';
import { AcsError, AcsErrorCode } from '../errors.ts';
import { MCP_PERMITTED, routeMethod } from '../methods.ts';
import type { AcsRequest, AcsResult, JsonRpcId, ResponseEnvelope, TransportKind } from '../types.ts';
import { sharedValidator } from '../validation/index.ts';
import { authenticateRequest, type Authenticated } from './authenticate.ts';
import { appendStepEntry, checkChainHint } from './chain.ts';
import type { AuditEvent, GuardianConfig, GuardianOptions } from './config.ts';
import { decodeMessage } from './decode.ts';
import { evaluateStep } from './evaluate.ts';
import { advanceSession } from './advance.ts';
import { handleHello } from './handshake.ts';
import { handlePing } from './ping.ts';
import { errorEnvelope, internalError, resultEnvelope } from './respond.ts';
import { admitStep, lookupSession, negotiatedHello, sessionState } from './session.ts';
import { SessionCache } from './session-cache.ts';
import { rememberRequest } from './freshness.ts';
import type { SessionRecord } from '../../store/types.ts';
import { recoverableId, validateEnvelope, validateMcpPayload, validateStepPayload } from './validate.ts';

export type { AuditEvent, GuardianOptions } from './config.ts';

export const GUARDIAN_VERSION = '0.1.0';

export interface Guardian {
  readonly config: GuardianConfig;
  /** Handles one transport message (raw bytes or text) and returns exactly one response envelope. Never throws. */
  handle(body: Uint8Array | string, transport: TransportKind): Promise<ResponseEnvelope>;
}

export function resolveConfig(options: GuardianOptions): GuardianConfig {
  return {
    store: options.store,
    engine: options.engine,
    signatures: options.signatures,
    validator: sharedValidator(),
    skewWindowMs: options.skewWindowMs ?? 300_000,
    supportedVersions: options.supportedVersions ?? ['0.1.0'],
    profiles: options.profiles ?? ['acs-core'],
    policyRequiresProvenance: options.policyRequiresProvenance ?? false,
    client: options.client ?? { modifyCapable: true, askCapable: true },
    maxDeferralsPerSession: options.maxDeferralsPerSession ?? 3,
    timeoutConfig: options.timeoutConfig ?? { default_ms: 5000 },
    onDecisionFailure: options.onDecisionFailure ?? 'deny',
    maxBodyBytes: options.maxBodyBytes ?? 1024 * 1024,
    evaluatorVersion: options.evaluatorVersion ?? `acs-guardian/${GUARDIAN_VERSION}`,
    now: options.now ?? (() => new Date()),
    onAudit: options.onAudit ?? (() => {}),
  };
}

/** Serialises one session's steps (replay check + append + decision are atomic per session, GUIDE §13). */
class SessionLocks {
  readonly #tails = new Map<string, Promise<unknown>>();
  async run<T>(sessionId: string, work: () => Promise<T>): Promise<T> {
    const previous = this.#tails.get(sessionId) ?? Promise.resolve();
    const next = previous.then(work, work);
    const tail = next.catch(() => undefined);
    this.#tails.set(sessionId, tail);
    try {
      return await next;
    } finally {
      if (this.#tails.get(sessionId) === tail) this.#tails.delete(sessionId);
    }
  }
}

export function createGuardian(options: GuardianOptions): Guardian {
  const config = resolveConfig(options);
  const locks = new SessionLocks();
  const sessions = new SessionCache();

  async function decided(request: AcsRequest, auth: Authenticated, decision: AcsDecision, version: string, extra: Partial<AcsResult> = {}): Promise<ResponseEnvelope> {
    const result: AcsResult = { type: 'final', acs_version: version, request_id: request.params.request_id, ...decision, ...extra };
    return resultEnvelope(config, request.id, result, auth);
  }

  async function handleStep(request: AcsRequest, auth: Authenticated, routed: ReturnType<typeof routeMethod>): Promise<ResponseEnvelope> {
    const sessionId = request.params.metadata.session_id;
    return locks.run(sessionId, async () => {
      // Under the lock, three independent round trips overlap: the durable chain head (for the §8.6 hint and to
      // validate the cached session row), the replay keys (§10.3, awaited first by admitStep) and, when this
      // process holds no copy of the row, the session row itself.
      const now = config.now();
      const cachedEntry = sessions.has(sessionId);
      const headRead = config.store.getChainHead(sessionId);
      const rowRead = cachedEntry ? null : lookupSession(config, request);
      const remembered = rememberRequest(config.store, request, now, config.skewWindowMs);
      for (const p of [headRead, rowRead, remembered]) p?.catch(() => undefined);
      let session: SessionRecord;
      let head: { entryHash: string } | null;
      if (rowRead) {
        session = await rowRead; // -32003 before -32005 (GUIDE §9 dispatch order)
        head = await headRead;
      } else {
        head = await headRead;
        session = sessions.validated(sessionId, head?.entryHash ?? null) ?? (await lookupSession(config, request));
      }
      const version = negotiatedHello(session).server.negotiated_version;
      const admission = await admitStep(config, request, auth, session, now, remembered);
      if (!admission.admitted) return decided(request, auth, admission.refusal, version);
      session = admission.session;
      if (routed.kind === 'step') validateStepPayload(request, routed.spec, config.validator);
      else if (routed.kind === 'mcp') validateMcpPayload(request, routed.mcpMethod);
      const mismatch = checkChainHint(request, head);
      if (mismatch) return decided(request, auth, mismatch, version);

      // §8.2: the entry is written on arrival, before the verdict is delivered. Evaluation does not need the
      // entry's hash, so it runs while the append is in flight; the answer waits for both.
      sessions.forget(sessionId);
      const appending = appendStepEntry(config, request);
      appending.catch(() => undefined);
      const permitted = routed.kind === 'step' ? routed.spec.permitted : MCP_PERMITTED;
      const prior = sessionState(session);
      const evaluated = await evaluateStep(config, request, prior, permitted, routed.kind === 'mcp');
      const appended = await appending;
      const audit = (e: { code: string; detail: string }): void =>
        config.onAudit({ sessionId: session.id, requestId: request.params.request_id, method: request.method, ...e });
      for (const event of evaluated.auditEvents) audit(event);
      const durationMs = Math.max(0, Math.round(evaluated.durationMs));
      const envelope = await decided(request, auth, evaluated.decision, version, {
        chain_hash: appended.entryHash,
        metadata: { evaluator: 'deterministic', evaluator_version: config.evaluatorVersion, evaluation_duration_ms: durationMs },
      });
      // Both writes finish before the answer leaves: the state the next step sees, and the delivered decision.
      const [written] = await Promise.all([
        advanceSession(config, request, session, prior, evaluated.state, evaluated.decision, audit),
        config.store.recordDecision(session.id, appended.seq, {
          result: (envelope as { result: unknown }).result as never,
          bundleRevision: evaluated.revision,
          evaluationDurationMs: durationMs,
        }),
      ]);
      // Cache the row as written only when no other writer appended in between (previous_hash is the head read).
      if (appended.previousHash === (head?.entryHash ?? null)) sessions.remember(written, appended.entryHash);
      return envelope;
    });
  }

  async function handle(body: Uint8Array | string, transport: TransportKind): Promise<ResponseEnvelope> {
    let id: JsonRpcId | null = null;
    let auth: Authenticated | null = null;
    let request: AcsRequest | null = null;
    try {
      if (body.length > config.maxBodyBytes) {
        throw new AcsError(AcsErrorCode.InvalidRequest, 'body_too_large', `messages larger than ${config.maxBodyBytes} bytes are refused`);
      }
      const value = decodeMessage(body);
      id = recoverableId(value);
      request = validateEnvelope(value, config.validator);
      // Dispatch step 4: ping short-circuits before signature and session checks (§11).
      if (request.method === 'system/ping') return await handlePing(config, request);
      auth = await authenticateRequest(request, config.signatures);
      const routed = routeMethod(request.method);
      if (routed.kind === 'ping') return await handlePing(config, request);
      if (routed.kind === 'handshake') {
        const server = await locks.run(request.params.metadata.session_id, () => handleHello(config, request!, auth!, transport));
        return await resultEnvelope(config, request.id, server, auth);
      }
      return await handleStep(request, auth, routed);
    } catch (err) {
      if (err instanceof AcsError) {
        try {
          return await errorEnvelope(config, id, err, auth);
        } catch {
          return internalError(id);
        }
      }
      // Not a protocol fault: a store or engine outage on an authenticated step. An error would hand the step to
      // the client's fail-open posture, so answer a signed DENY instead (GUIDE §4, fail closed).
      if (request && auth && request.method !== 'handshake/hello') {
        try {
          return await decided(request, auth, {
            decision: 'deny',
            reasoning: 'The Guardian could not record or evaluate this step; denied (fail closed).',
            reason_codes: ['store_unavailable'],
          }, config.supportedVersions[0]);
        } catch {
          return internalError(id);
        }
      }
      return internalError(id);
    }
  }

  return { config, handle };
}
