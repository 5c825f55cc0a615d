// The live Guardian's evaluate stage, driven offline. Replay calls the same functions `createGuardian()`
// runs for a step (src/acs/pipeline): `sessionState` for the state a session starts from, `evaluateStep`
// (advanceSessionState → buildPolicyInput → engine → finalizeDecision) for the verdict, and the policy
// `nextSessionState`, the pure half of `advanceSession` that folds the verdict into the state. The store-writing
// half of advanceSession (session row, child session, close) is not called: replay never writes.
import { resolveConfig } from '../acs/pipeline/index.ts';
import type { GuardianConfig } from '../acs/pipeline/config.ts';
import { nextSessionState } from '../acs/pipeline/advance.ts';
import { evaluateStep, type Evaluated } from '../acs/pipeline/evaluate.ts';
import { sessionState } from '../acs/pipeline/session.ts';
import { MCP_PERMITTED, routeMethod } from '../acs/methods.ts';
import type { EnvelopeSignatures } from '../acs/signing/index.ts';
import type { AcsParams, AcsRequest } from '../acs/types.ts';
import { advanceSessionState, type PolicyEngine, type SessionState } from '../policy/index.ts';
import type { Json } from '../json.ts';
import type { GuardianStore, SessionRecord } from '../store/types.ts';
import { ReplayError } from './errors.ts';

/** Live-configuration facts that are not recorded per step (they come from `guardian serve` options). */
export interface LiveSettings {
  /** Out-of-band client capabilities (ACS §6.5, §9.2); live default both true. */
  client?: { modifyCapable: boolean; askCapable: boolean };
  /** §6 deferral bound per session; live default 3. */
  maxDeferralsPerSession?: number;
  evaluatorVersion?: string;
}

function refuse(): never {
  throw new ReplayError('write_refused', 'replay never writes to the store or signs answers');
}

/**
 * The store handed to the live stages: every call throws. evaluateStep does not touch the store today; if it
 * ever does, replay fails loudly instead of writing to the live chain.
 */
const refusingStore: GuardianStore = {
  migrate: refuse,
  close: refuse,
  createSession: refuse,
  getSession: refuse,
  updateSessionState: refuse,
  closeSession: refuse,
  appendContextEntry: refuse,
  recordDecision: refuse,
  commitStep: refuse,
  withSessionTurn: refuse,
  getChainHead: refuse,
  listContextEntries: refuse,
  rememberReplayKey: refuse,
};

const refusingSignatures: EnvelopeSignatures = {
  supportedAlgorithms: () => [],
  verify: async () => false,
  sign: refuse,
};

/** A GuardianConfig for offline evaluation: the live defaults, a refusing store, no signing. */
export function replayConfig(engine: PolicyEngine, settings: LiveSettings = {}): GuardianConfig {
  return resolveConfig({
    store: refusingStore,
    engine,
    signatures: refusingSignatures,
    ...(settings.client ? { client: settings.client } : {}),
    ...(settings.maxDeferralsPerSession !== undefined
      ? { maxDeferralsPerSession: settings.maxDeferralsPerSession }
      : {}),
    ...(settings.evaluatorVersion ? { evaluatorVersion: settings.evaluatorVersion } : {}),
  });
}

/**
 * The state the live pipeline gives a session's first step: `sessionState()` of the session row as it was
 * before any step (state null). A root session is created with intent null (handshake.ts); a subagent's
 * session is created with its inherited or declared intent (advance.ts), which the stored row still holds.
 */
export function initialReplayState(session: SessionRecord): SessionState {
  const intent = session.parentSessionId === null ? null : session.intent;
  return sessionState({ ...session, state: null, intent });
}

/** The ACS request a ContextEntry stands for (method = step_type, params as received). */
export function requestOf(method: string, params: Json): AcsRequest {
  const p = params as unknown as AcsParams;
  return { jsonrpc: '2.0', id: typeof p?.request_id === 'string' ? p.request_id : 'replay', method, params: p };
}

export type RoutedStep =
  | { ok: true; permitted: readonly Evaluated['decision']['decision'][]; wrappedMcp: boolean }
  | { ok: false; reason: string };

/** routeStep per method: the routing is fixed, and replay asks once per entry (the permitted list is read-only). */
const routes = new Map<string, RoutedStep>();

/** Dispatch as the live router does; handshake and ping never reach the chain, so they are not steps. */
export function routeStep(method: string): RoutedStep {
  let routed = routes.get(method);
  if (routed === undefined) {
    routed = routeUncached(method);
    // A stored step_type is arbitrary text: only known methods are kept, so the map stays bounded.
    if (routed.ok) routes.set(method, routed);
  }
  return routed;
}

function routeUncached(method: string): RoutedStep {
  try {
    const routed = routeMethod(method);
    if (routed.kind === 'step') return { ok: true, permitted: [...routed.spec.permitted], wrappedMcp: false };
    if (routed.kind === 'mcp') return { ok: true, permitted: [...MCP_PERMITTED], wrappedMcp: true };
    return { ok: false, reason: `${method} is not an evaluated step` };
  } catch (err) {
    return { ok: false, reason: err instanceof Error ? err.message : String(err) };
  }
}

/**
 * One step through the live evaluate stage, at the recorded time; returns the verdict and the state after it.
 * `paramsJcs`: the entry's stored params text, which `request.params` was parsed from (spliced into the input).
 */
export async function evaluateRecordedStep(
  base: GuardianConfig,
  engine: PolicyEngine,
  at: Date,
  request: AcsRequest,
  prior: SessionState,
  routed: { permitted: Evaluated['decision']['decision'][]; wrappedMcp: boolean },
  paramsJcs?: string,
): Promise<{ evaluated: Evaluated; next: SessionState }> {
  const config: GuardianConfig = { ...base, engine, now: () => at };
  const evaluated = await evaluateStep(config, request, prior, routed.permitted, routed.wrappedMcp, paramsJcs);
  return { evaluated, next: foldDecision(evaluated.state, request, evaluated.decision.decision, prior) };
}

/** What advanceSession folds into the state after the verdict: the live `nextSessionState` (src/acs/pipeline/advance.ts). */
export function foldDecision(
  advanced: SessionState,
  request: AcsRequest,
  decision: string,
  prior: SessionState = advanced,
): SessionState {
  return nextSessionState(prior, advanced, request, decision as Evaluated['decision']['decision']).state;
}

/** For a step whose policy is unavailable: keep the state moving with the recorded decision. */
export function foldRecordedStep(
  prior: SessionState,
  request: AcsRequest,
  recordedDecision: string | null,
): SessionState {
  const advanced = advanceSessionState(prior, request.method, request.params as unknown as Json);
  return recordedDecision === null ? advanced : foldDecision(advanced, request, recordedDecision, prior);
}
