// ACS-Provenance on the wire (ACS §7, conformance.md "ACS-Provenance") and the entry-level ProvenanceSummary
// (§8.3) an ACS-Audit entry carries. In a session that accepted `acs-provenance` with `provenance_producer:
// "deterministic"`, a step's payload is validated against the strict `*.acs-provenance.json` variant of its hook
// (a data-bearing field without Provenance is partial population: -32602 with the pointer of the missing member),
// and a populated `trust` on `agent_generated` data must not rise above the minimum trust of its `derived_from`
// lineage as this Guardian derives it (§7.1 monotonicity; the label is a hint, §7.1, so it is re-derived from
// origin and the session's records, never believed). docs/conformance.md, "acs-provenance".
import { isObject, type Json, type JsonObject } from '../../json.ts';
import {
  DEFAULT_ORIGIN_TRUST,
  minTrust,
  provenanceRecord,
  type SessionState,
  type Trust,
} from '../../policy/session-state.ts';
import { AcsError, AcsErrorCode } from '../errors.ts';
import type { StepMethodSpec } from '../methods.ts';
import { strictVariantPath } from '../schemas/index.ts';
import type { AcsRequest } from '../types.ts';
import type { AcsValidator } from '../validation/index.ts';

const TRUST_RANK: Record<Trust, number> = { untrusted: 0, unknown: 1, trusted: 2 };
const MAX_DEPTH = 64;
/** The origin enum of provenance.json (§7): the summary counts only these (its keys are drawn from it, §8.3). */
const ORIGINS = new Set([...Object.keys(DEFAULT_ORIGIN_TRUST), 'agent_generated']);

/** Whether a negotiated hello binds the session to ACS-Provenance (accepted, and a deterministic producer). */
export function provenanceBound(hello: Json): boolean {
  const h = hello as { client?: { provenance_producer?: string }; server?: { profiles_accepted?: string[] } } | null;
  return (
    (h?.server?.profiles_accepted ?? []).includes('acs-provenance') && h?.client?.provenance_producer === 'deterministic'
  );
}

/** A Provenance object found in a payload, with the RFC 6901 pointer of the object itself. */
interface WireProvenance {
  id: string;
  origin: string;
  derivedFrom: string[];
  trust: Json | undefined;
  pointer: string;
}

function escape(segment: string): string {
  return segment.replace(/~/g, '~0').replace(/\//g, '~1');
}

/** Every Provenance object (a member named `…provenance` with string provenance_id and origin) under `node`. */
function wireProvenance(node: Json, pointer: string, depth: number, out: WireProvenance[]): WireProvenance[] {
  if (depth > MAX_DEPTH || node === null || typeof node !== 'object') return out;
  if (Array.isArray(node)) {
    node.forEach((child, i) => wireProvenance(child, `${pointer}/${i}`, depth + 1, out));
    return out;
  }
  for (const [key, value] of Object.entries(node)) {
    const at = `${pointer}/${escape(key)}`;
    if (
      key.endsWith('provenance') &&
      isObject(value) &&
      typeof value.provenance_id === 'string' &&
      typeof value.origin === 'string'
    ) {
      out.push({
        id: value.provenance_id,
        origin: value.origin,
        derivedFrom: Array.isArray(value.derived_from)
          ? value.derived_from.filter((d): d is string => typeof d === 'string')
          : [],
        trust: value.trust,
        pointer: at,
      });
    } else wireProvenance(value, at, depth + 1, out);
  }
  return out;
}

/**
 * The Guardian's trust and lineage depth of each Provenance object of one payload: §7.2 defaults by origin,
 * `agent_generated` the minimum over its lineage (none → `unknown`); a parent seen at an earlier step is the
 * session's record, one in the same payload is derived here, one never seen is `unknown`.
 */
class LineageView {
  readonly #byId = new Map<string, WireProvenance>();
  readonly #derived = new Map<string, { trust: Trust; depth: number }>();
  readonly #state: () => SessionState | undefined;

  constructor(found: WireProvenance[], state: () => SessionState | undefined) {
    for (const p of found) if (!this.#byId.has(p.id)) this.#byId.set(p.id, p);
    this.#state = state;
  }

  of(p: WireProvenance, visiting = new Set<string>()): { trust: Trust; depth: number } {
    const known = this.#derived.get(p.id);
    if (known) return known;
    visiting.add(p.id);
    let trust: Trust =
      p.origin === 'agent_generated'
        ? p.derivedFrom.length === 0
          ? 'unknown'
          : 'trusted'
        : ((DEFAULT_ORIGIN_TRUST as Record<string, Trust>)[p.origin] ?? 'unknown');
    let depth = 0;
    for (const parentId of p.derivedFrom) {
      const parent = this.parent(parentId, visiting);
      trust = minTrust(trust, parent.trust);
      depth = Math.max(depth, parent.depth + 1);
    }
    visiting.delete(p.id);
    const out = { trust, depth };
    this.#derived.set(p.id, out);
    return out;
  }

  parent(id: string, visiting: Set<string>): { trust: Trust; depth: number } {
    const here = this.#byId.get(id);
    // A lineage cycle vouches for nothing.
    if (here) return visiting.has(id) ? { trust: 'unknown', depth: 0 } : this.of(here, visiting);
    const state = this.#state();
    const record = state ? provenanceRecord(state, id) : undefined;
    return record ? { trust: record.trust, depth: record.lineage_depth } : { trust: 'unknown', depth: 0 };
  }
}

function invalid(request: AcsRequest, reason: string, pointer: string, message: string): AcsError {
  return new AcsError(AcsErrorCode.InvalidParams, reason, `${request.method} payload: ${message}`, {
    pointer: `/params/payload${pointer}`,
    method: request.method,
  });
}

/**
 * The ACS-Provenance checks of a step whose payload passed its base schema; nothing in other sessions. Throws
 * -32602 (ACS §17: a required member missing or a value invalid) with `data.reason`:
 * `provenance_missing` (strict variant: a data-bearing field without Provenance), `payload_invalid` (another
 * strict-variant violation), `trust_invalid` (not trusted|untrusted|unknown) or `trust_not_monotonic`.
 * `state` gives the session's provenance records, read only when a lineage reaches an earlier step.
 */
export function validateStepProvenance(
  request: AcsRequest,
  spec: StepMethodSpec,
  validator: AcsValidator,
  hello: Json,
  state: () => SessionState | undefined,
): void {
  if (!provenanceBound(hello)) return;
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
  const found = wireProvenance(request.params.payload as unknown as Json, '', 0, []);
  const lineage = new LineageView(found, state);
  for (const p of found) {
    if (p.trust === undefined) continue;
    if (typeof p.trust !== 'string' || !(p.trust in TRUST_RANK)) {
      throw invalid(request, 'trust_invalid', `${p.pointer}/trust`, 'trust must be trusted, untrusted or unknown');
    }
    if (p.origin !== 'agent_generated') continue;
    const derived = lineage.of(p).trust;
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
 * The entry-level ProvenanceSummary of a step (ACS §8.3: what entered at this step; all zero when its payload
 * carries no Provenance). `earliest_step_id_by_origin` is this step for every origin it carries.
 */
export function entryProvenanceSummary(
  payload: JsonObject,
  stepId: string,
  state: () => SessionState | undefined,
): JsonObject {
  const found = wireProvenance(payload, '', 0, []).filter((p) => ORIGINS.has(p.origin));
  const lineage = new LineageView(found, state);
  const byOrigin: Record<string, number> = {};
  let maxDepth = 0;
  for (const p of found) {
    byOrigin[p.origin] = (byOrigin[p.origin] ?? 0) + 1;
    maxDepth = Math.max(maxDepth, lineage.of(p).depth);
  }
  const origins = Object.keys(byOrigin).sort();
  return {
    earliest_step_id_by_origin: Object.fromEntries(origins.map((o) => [o, stepId])),
    entry_count: found.length,
    entry_count_by_origin: byOrigin,
    max_lineage_depth: maxDepth,
    origins_seen: origins,
  };
}

/**
 * The `provenance_summary` member of a step's ContextEntry: ACS-Audit "SHOULD populate timestamp and
 * provenance_summary on every ContextEntry", so every entry of a session that accepted `acs-audit` carries one;
 * other sessions' entries keep exactly the five members of the interop pin (docs/conformance.md).
 */
export function auditedProvenanceSummary(
  hello: Json,
  request: AcsRequest,
  state: () => SessionState | undefined,
): JsonObject | undefined {
  const accepted = (hello as { server?: { profiles_accepted?: string[] } } | null)?.server?.profiles_accepted ?? [];
  if (!accepted.includes('acs-audit')) return undefined;
  return entryProvenanceSummary(request.params.payload as unknown as JsonObject, request.params.request_id, state);
}
