// Turns whatever the policy engine returned into an ACS decision that is safe to put on the wire (§6).
// Nothing the engine says is trusted: a missing/ill-typed field, a disposition without its required details or a
// §6.3-violating modification becomes DENY `evaluation_failed` (fail closed). Then the substitutions of §6.5
// (MODIFY-incapable client), §9.2 (ASK-incapable client), hooks.md (disposition not permitted by the hook) and
// §6 (deferral bound per session) are applied, each recorded as an audit event.
import { isObject } from '../../json.ts';
import type { AcsValidator } from '../validation/index.ts';
import { DISPOSITIONS, type Disposition } from '../methods.ts';

export interface PolicyReference {
  policy_id?: string;
  policy_version?: string;
  policy_name?: string;
  rule_id?: string;
}

export interface Modifications {
  modified_content?: string;
  redactions?: { path: string; replacement?: string }[];
  parameter_overrides?: Record<string, unknown>;
}

/** The decision members of an AcsResult (response-envelope.json). */
export interface AcsDecision {
  decision: Disposition;
  reasoning?: string;
  reason_codes?: string[];
  policy_references?: PolicyReference[];
  policy_data?: Record<string, unknown>;
  cited_provenance_ids?: string[];
  modifications?: Modifications;
  ask_details?: Record<string, unknown>;
  defer_details?: Record<string, unknown>;
}

/** The schemas a disposition's details are checked against (all a replay worker's validator holds). */
export const DECISION_DETAIL_SCHEMAS = {
  modify: 'modifications.json',
  ask: 'ask-details.json',
  defer: 'defer-details.json',
} as const;

export interface DecisionContext {
  /** Dispositions the hook permits. */
  permitted: readonly Disposition[];
  /** postCompact gets ALLOW instead of DENY for an unsupported MODIFY (§6.5 exception). */
  method: string;
  /** Wrapped MCP overrides address /params/arguments/<k> instead of /arguments/<k> (§6.3). */
  wrappedMcp: boolean;
  client: { modifyCapable: boolean; askCapable: boolean };
  /** DEFERs already issued in this session, and the bound (§6: cascading deferrals MUST be bounded). */
  deferralsSoFar: number;
  maxDeferrals: number;
  /** Bundle revision: written into every policy_reference as policy_version. */
  revision: string;
  validator: AcsValidator;
}

export interface FinalDecision {
  decision: AcsDecision;
  /** Substitutions and failures to record in the audit trail (reason code + detail). */
  auditEvents: { code: string; detail: string }[];
  /** True when the final decision is a DEFER (counts toward the bound). */
  deferred: boolean;
}

export class DecisionRejected extends Error {}

const isUniqueStrings = (v: unknown): v is string[] =>
  Array.isArray(v) && v.every((x) => typeof x === 'string') && new Set(v).size === v.length;

function escapePointerToken(token: string): string {
  return token.replace(/~/g, '~0').replace(/\//g, '~1');
}

/** Two JSON pointers overlap when equal or one is an ancestor of the other; "" overlaps everything (§6.3). */
export function pointersOverlap(a: string, b: string): boolean {
  if (a === '' || b === '' || a === b) return true;
  return a.startsWith(b + '/') || b.startsWith(a + '/');
}

/** §6.3 composition rules; returns a description of the first violation, or null. */
export function modificationViolation(mods: Modifications, wrappedMcp: boolean): string | null {
  const hasContent = mods.modified_content !== undefined;
  if (hasContent && (mods.redactions !== undefined || mods.parameter_overrides !== undefined)) {
    return 'modified_content is exclusive: it cannot be combined with redactions or parameter_overrides (§6.3)';
  }
  const redactionPaths = (mods.redactions ?? []).map((r) => r.path);
  for (const path of redactionPaths) {
    if (path !== '' && !path.startsWith('/'))
      return `redaction path ${JSON.stringify(path)} is not an RFC 6901 JSON pointer`;
    if (/~[^01]|~$/.test(path)) return `redaction path ${JSON.stringify(path)} has an invalid ~ escape`;
  }
  const base = wrappedMcp ? '/params/arguments/' : '/arguments/';
  for (const key of Object.keys(mods.parameter_overrides ?? {})) {
    const target = base + escapePointerToken(key);
    const clash = redactionPaths.find((p) => pointersOverlap(p, target));
    if (clash !== undefined)
      return `redaction ${JSON.stringify(clash)} overlaps the override of ${JSON.stringify(key)} (§6.3: targets must be disjoint)`;
  }
  return null;
}

/** Validates the engine output's shape; throws DecisionRejected with the reason. */
function parseRawDecision(raw: unknown, ctx: DecisionContext): AcsDecision {
  if (!isObject(raw)) throw new DecisionRejected('the policy produced no decision object');
  if (raw.delegate_to === 'agent') throw new DecisionRejected('agent_layer_unavailable');
  const disposition = raw.decision;
  if (typeof disposition !== 'string' || !(DISPOSITIONS as readonly string[]).includes(disposition)) {
    throw new DecisionRejected(
      `decision must be one of ${DISPOSITIONS.join(', ')} (got ${JSON.stringify(disposition) ?? 'nothing'})`,
    );
  }
  const out: AcsDecision = { decision: disposition as Disposition };
  if (raw.reasoning !== undefined) {
    if (typeof raw.reasoning !== 'string') throw new DecisionRejected('reasoning must be a string');
    out.reasoning = raw.reasoning;
  }
  if (raw.reason_codes !== undefined) {
    if (!isUniqueStrings(raw.reason_codes)) throw new DecisionRejected('reason_codes must be unique strings');
    out.reason_codes = [...raw.reason_codes];
  }
  if (raw.cited_provenance_ids !== undefined) {
    if (!isUniqueStrings(raw.cited_provenance_ids))
      throw new DecisionRejected('cited_provenance_ids must be unique strings');
    out.cited_provenance_ids = [...raw.cited_provenance_ids];
  }
  if (raw.policy_data !== undefined) {
    if (!isObject(raw.policy_data)) throw new DecisionRejected('policy_data must be an object');
    out.policy_data = raw.policy_data;
  }
  if (raw.policy_references !== undefined) {
    if (!Array.isArray(raw.policy_references)) throw new DecisionRejected('policy_references must be an array');
    out.policy_references = raw.policy_references.map((ref) => {
      if (!isObject(ref)) throw new DecisionRejected('each policy_reference must be an object');
      const clean: PolicyReference = {};
      for (const key of ['policy_id', 'policy_version', 'policy_name', 'rule_id'] as const) {
        if (ref[key] === undefined) continue;
        if (typeof ref[key] !== 'string') throw new DecisionRejected(`policy_references[].${key} must be a string`);
        clean[key] = ref[key] as string;
      }
      return clean;
    });
  }
  const needsReasoning = out.decision !== 'allow';
  if (needsReasoning && (out.reasoning === undefined || out.reasoning.length === 0)) {
    throw new DecisionRejected(`a ${out.decision} decision requires reasoning (§6)`);
  }
  if (out.decision === 'modify') {
    const check = ctx.validator.validate(DECISION_DETAIL_SCHEMAS.modify, raw.modifications);
    if (!check.ok) throw new DecisionRejected(`modifications invalid: ${check.violation.message}`);
    const mods = raw.modifications as Modifications;
    const violation = modificationViolation(mods, ctx.wrappedMcp);
    if (violation) throw new DecisionRejected(violation);
    out.modifications = mods;
  }
  if (out.decision === 'ask') {
    const check = ctx.validator.validate(DECISION_DETAIL_SCHEMAS.ask, raw.ask_details);
    if (!check.ok) throw new DecisionRejected(`ask_details invalid: ${check.violation.message}`);
    out.ask_details = raw.ask_details as Record<string, unknown>;
  }
  if (out.decision === 'defer') {
    const check = ctx.validator.validate(DECISION_DETAIL_SCHEMAS.defer, raw.defer_details);
    if (!check.ok) throw new DecisionRejected(`defer_details invalid: ${check.violation.message}`);
    out.defer_details = raw.defer_details as Record<string, unknown>;
  }
  return out;
}

function withCode(decision: AcsDecision, code: string): AcsDecision {
  const codes = decision.reason_codes ?? [];
  return { ...decision, reason_codes: codes.includes(code) ? codes : [...codes, code] };
}

/** The fail-closed answer (reference Guardians: DENY `evaluation_failed`). */
export function evaluationFailed(detail: string): AcsDecision {
  return {
    decision: 'deny',
    reasoning: `Policy evaluation failed; denied (fail closed): ${detail}`,
    reason_codes: ['evaluation_failed'],
  };
}

function deny(reasoning: string, code: string, base?: AcsDecision): AcsDecision {
  return {
    decision: 'deny',
    reasoning,
    reason_codes: [...new Set([...(base?.reason_codes ?? []), code])],
    ...(base?.policy_references ? { policy_references: base.policy_references } : {}),
    ...(base?.policy_data ? { policy_data: base.policy_data } : {}),
    ...(base?.cited_provenance_ids ? { cited_provenance_ids: base.cited_provenance_ids } : {}),
  };
}

/** Validates, substitutes and stamps the engine's raw decision. Never throws. */
export function finalizeDecision(raw: unknown, ctx: DecisionContext): FinalDecision {
  const auditEvents: FinalDecision['auditEvents'] = [];
  let decision: AcsDecision;
  try {
    decision = parseRawDecision(raw, ctx);
  } catch (err) {
    const detail = err instanceof Error ? err.message : String(err);
    if (detail === 'agent_layer_unavailable') {
      decision = deny(
        'The policy delegated to an agent layer, which this Guardian does not have (§12).',
        'agent_layer_unavailable',
      );
    } else {
      decision = evaluationFailed(detail);
    }
    auditEvents.push({ code: decision.reason_codes![0], detail });
  }

  // §6.5: never MODIFY towards a client that cannot apply it.
  if (decision.decision === 'modify' && !ctx.client.modifyCapable) {
    const what = JSON.stringify(decision.modifications);
    if (ctx.method === 'steps/postCompact') {
      decision = withCode(
        { decision: 'allow', reasoning: `Modification not applied (client is MODIFY-incapable): ${what}` },
        'modify_unsupported',
      );
    } else {
      decision = deny(
        `The policy required a modification the client cannot apply, so the step is denied: ${what}`,
        'modify_unsupported',
        decision,
      );
    }
    auditEvents.push({ code: 'modify_unsupported', detail: what });
  }
  // §9.2: never ASK a client that cannot route approvals; DEFER (deny on timeout) while the bound allows, else DENY.
  if (decision.decision === 'ask' && !ctx.client.askCapable) {
    const question = String(decision.ask_details?.question ?? '');
    if (ctx.permitted.includes('defer') && ctx.deferralsSoFar < ctx.maxDeferrals) {
      decision = {
        ...decision,
        decision: 'defer',
        reasoning: `Approval required but the client cannot route approvals; deferred, denied on timeout: ${decision.reasoning ?? question}`,
        defer_details: {
          reason: 'pending_dependency',
          resolution_method: 'human_approval',
          resolution_timeout_ms: Number(decision.ask_details?.timeout_seconds ?? 60) * 1000,
          timeout_decision: 'deny',
        },
        reason_codes: [...new Set([...(decision.reason_codes ?? []), 'approver_unavailable'])],
      };
      delete decision.ask_details;
    } else {
      decision = deny(
        `Approval required but no approver is available: ${decision.reasoning ?? question}`,
        'approver_unavailable',
        decision,
      );
    }
    auditEvents.push({ code: 'approver_unavailable', detail: 'ASK substituted for an ASK-incapable client (§9.2)' });
  }
  // hooks.md: a disposition the hook does not permit → DENY if permitted, else ALLOW + disposition_not_permitted.
  if (!ctx.permitted.includes(decision.decision)) {
    const was = decision.decision;
    decision = ctx.permitted.includes('deny')
      ? deny(
          `The policy answered ${was}, which ${ctx.method} does not permit; denied instead.`,
          'disposition_not_permitted',
          decision,
        )
      : withCode(
          {
            decision: 'allow',
            reasoning: `The policy answered ${was}, which ${ctx.method} does not permit; allowed and audited.`,
            ...(decision.policy_references ? { policy_references: decision.policy_references } : {}),
          },
          'disposition_not_permitted',
        );
    auditEvents.push({ code: 'disposition_not_permitted', detail: `${was} on ${ctx.method}` });
  }
  // §6: cascading deferrals are bounded per session.
  if (decision.decision === 'defer' && ctx.deferralsSoFar >= ctx.maxDeferrals) {
    decision = deny(
      `Deferral bound of ${ctx.maxDeferrals} per session reached; denied (§6).`,
      'deferral_bound_exceeded',
      decision,
    );
    auditEvents.push({ code: 'deferral_bound_exceeded', detail: `${ctx.deferralsSoFar} deferrals already issued` });
  }

  // Every policy reference names the bundle revision that decided (audit replay).
  const refs = decision.policy_references?.length ? decision.policy_references : [{ policy_id: 'acs/decision' }];
  decision.policy_references = refs.map((ref) => withVersion(ref, ctx.revision));
  return { decision, auditEvents, deferred: decision.decision === 'defer' };
}

/**
 * `{ ...ref, policy_version }` with its members in RFC 8785 order, so the signed answer's JCS is JSON.stringify's
 * (canonicalJson) instead of a key sort per reference. A reference only holds PolicyReference members
 * (parseRawDecision); members are set one by one, as a spread followed by a new member is V8's slow path.
 */
function withVersion(ref: PolicyReference, version: string): PolicyReference {
  const out: PolicyReference = {};
  if (ref.policy_id !== undefined) out.policy_id = ref.policy_id;
  if (ref.policy_name !== undefined) out.policy_name = ref.policy_name;
  out.policy_version = version;
  if (ref.rule_id !== undefined) out.rule_id = ref.rule_id;
  return out;
}
