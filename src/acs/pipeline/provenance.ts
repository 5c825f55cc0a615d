// ACS-Provenance on the wire (ACS §7, conformance.md "ACS-Provenance"), and which entries carry the entry-level
// ProvenanceSummary (§8.3) of ACS-Audit. In a session that accepted `acs-provenance` with `provenance_producer:
// "deterministic"`, a step's payload is validated against the strict `*.acs-provenance.json` variant of its hook
// (a data-bearing field without Provenance is partial population: -32602 with the pointer of the missing member),
// and a populated `trust` on `agent_generated` data must not rise above the minimum trust of its `derived_from`
// lineage as this Guardian derives it (§7.1 monotonicity; the label is a hint, §7.1, so it is re-derived from
// origin and the session's records, never believed). A session whose producer declared `provenance_producer:
// "none"` emits no Provenance objects on data-bearing fields (§7), so one arriving there is refused -32602
// `provenance_producer_none` rather than handed to policy as lineage nobody produced deterministically (§4, §7).
// docs/conformance.md, "acs-provenance".
import {
  entriesCarryProvenanceSummary,
  entryProvenanceSummary,
  type PayloadProvenance,
  payloadProvenance,
} from '../../chain/provenance-summary.ts';
import type { Json, JsonObject } from '../../json.ts';
import {
  DEFAULT_ORIGIN_TRUST,
  minTrust,
  ownValue,
  provenanceRecord,
  type SessionState,
  type Trust,
} from '../../policy/session-state/index.ts';
import { inspectTerms } from '../../agbom/tracker.ts';
import { AcsError, AcsErrorCode } from '../errors.ts';
import type { StepMethodSpec } from '../methods.ts';
import { strictVariantPath } from '../schemas/index.ts';
import type { AcsRequest } from '../types.ts';
import type { AcsValidator } from '../validation/index.ts';

const TRUST_RANK: Record<Trust, number> = { untrusted: 0, unknown: 1, trusted: 2 };

/**
 * The Guardian's trust of each Provenance object of one payload: §7.2 defaults by origin, `agent_generated` the
 * minimum over its lineage (none → `unknown`); a parent seen at an earlier step is the session's record, one in
 * the same payload is derived here, one never seen is `unknown`.
 */
class LineageView {
  readonly #byId = new Map<string, PayloadProvenance>();
  readonly #derived = new Map<string, Trust>();
  readonly #state: () => SessionState | undefined;

  constructor(found: PayloadProvenance[], state: () => SessionState | undefined) {
    for (const p of found) if (!this.#byId.has(p.provenance_id)) this.#byId.set(p.provenance_id, p);
    this.#state = state;
  }

  trustOf(p: PayloadProvenance, visiting = new Set<string>()): Trust {
    const known = this.#derived.get(p.provenance_id);
    if (known) return known;
    visiting.add(p.provenance_id);
    let trust: Trust =
      p.origin === 'agent_generated'
        ? p.derived_from.length === 0
          ? 'unknown'
          : 'trusted'
        : (ownValue(DEFAULT_ORIGIN_TRUST as Record<string, Trust>, p.origin) ?? 'unknown');
    for (const parentId of p.derived_from) trust = minTrust(trust, this.#parentTrust(parentId, visiting));
    visiting.delete(p.provenance_id);
    this.#derived.set(p.provenance_id, trust);
    return trust;
  }

  #parentTrust(id: string, visiting: Set<string>): Trust {
    const here = this.#byId.get(id);
    // A lineage cycle vouches for nothing.
    if (here) return visiting.has(id) ? 'unknown' : this.trustOf(here, visiting);
    const state = this.#state();
    return (state ? provenanceRecord(state, id)?.trust : undefined) ?? 'unknown';
  }
}

function invalid(request: AcsRequest, reason: string, pointer: string, message: string): AcsError {
  return new AcsError(AcsErrorCode.InvalidParams, reason, `${request.method} payload: ${message}`, {
    pointer: `/params/payload${pointer}`,
    method: request.method,
  });
}

/**
 * Under `provenance_producer: "none"` a data-bearing field (the member named `provenance`: content, arguments,
 * results, outputs, summary; ACS §7) carries no Provenance. The structural records keep their own schemas:
 * Intent's `parser_provenance` (required with `parsed`, §8.4) and an AgBOM component's `registration_provenance`.
 */
function refuseUndeclaredProvenance(request: AcsRequest): void {
  const found = payloadProvenance(request.params.payload).find((p) => p.pointer.endsWith('/provenance'));
  if (!found) return;
  throw invalid(
    request,
    'provenance_producer_none',
    found.pointer,
    `${found.pointer} carries a Provenance object, but this session's handshake declared provenance_producer "none", which emits none (ACS §7); re-handshake as a "deterministic" producer to send Provenance`,
  );
}

/**
 * The ACS-Provenance checks of a step whose payload passed its base schema; nothing in other sessions. Throws
 * -32602 (ACS §17: a required member missing or a value invalid) with `data.reason`:
 * `provenance_missing` (strict variant: a data-bearing field without Provenance), `payload_invalid` (another
 * strict-variant violation), `trust_invalid` (not trusted|untrusted|unknown), `trust_not_monotonic`, or
 * `provenance_producer_none` (a producer that declared "none" sent Provenance on a data-bearing field).
 * `state` gives the session's provenance records, read only when a lineage reaches an earlier step.
 */
export function validateStepProvenance(
  request: AcsRequest,
  spec: StepMethodSpec,
  validator: AcsValidator,
  hello: Json,
  state: () => SessionState | undefined,
): void {
  if ((hello as { client?: { provenance_producer?: unknown } } | null)?.client?.provenance_producer === 'none') {
    refuseUndeclaredProvenance(request);
    return;
  }
  if (!inspectTerms(hello).provenance) return;
  const strict = strictVariantPath(spec.payloadSchema);
  if (validator.has(strict)) {
    const check = validator.validate(strict, request.params.payload);
    if (!check.ok) {
      const { pointer, message } = check.violation;
      const missing = pointer.endsWith('/provenance') && message.includes("required property 'provenance'");
      throw invalid(
        request,
        missing ? 'provenance_missing' : 'payload_invalid',
        pointer,
        missing
          ? `${pointer} carries no Provenance: an ACS-Provenance (deterministic) producer attaches one to every data-bearing field (ACS §7)`
          : `${message} (strict ACS-Provenance schema)`,
      );
    }
  }
  const found = payloadProvenance(request.params.payload);
  const lineage = new LineageView(found, state);
  for (const p of found) {
    if (p.trust === undefined) continue;
    if (typeof p.trust !== 'string' || !Object.hasOwn(TRUST_RANK, p.trust)) {
      throw invalid(request, 'trust_invalid', `${p.pointer}/trust`, 'trust must be trusted, untrusted or unknown');
    }
    if (p.origin !== 'agent_generated') continue;
    const derived = lineage.trustOf(p);
    if (TRUST_RANK[p.trust as Trust] > TRUST_RANK[derived]) {
      throw invalid(
        request,
        'trust_not_monotonic',
        `${p.pointer}/trust`,
        `agent_generated data labelled ${p.trust} derives from data of trust ${derived}: its trust is the minimum of its derived_from lineage (ACS §7.1)`,
      );
    }
  }
}

/**
 * The `provenance_summary` member of a step's ContextEntry: ACS-Audit "SHOULD populate timestamp and
 * provenance_summary on every ContextEntry", so every entry of a session that accepted `acs-audit` carries one
 * (src/chain/provenance-summary.ts); other sessions' entries keep exactly the five members of the interop pin.
 */
export function auditedProvenanceSummary(hello: Json, request: AcsRequest): JsonObject | undefined {
  const accepted = (hello as { server?: { profiles_accepted?: string[] } } | null)?.server?.profiles_accepted;
  if (!entriesCarryProvenanceSummary(accepted)) return undefined;
  return entryProvenanceSummary(request.params.payload, request.params.request_id) as unknown as JsonObject;
}
