// The entry-level ProvenanceSummary (ACS §8.3: "what entered at this step") an ACS-Audit ContextEntry carries. It
// is a function of the request alone — the Provenance objects in its payload and its request_id — so an Observed
// Agent recomputing the published chain head from its own request stream (§8.6) computes the same entry. Of the
// optional members it fills the origin aggregates; `max_lineage_depth` needs the session's earlier records and is
// left out (§8.3: "Guardians populate only what their policies consume").

/** The origin enum of provenance.json (ACS §7): only these are counted (the summary's keys are drawn from it). */
const ORIGINS = new Set([
  'user_input',
  'system',
  'tool_output',
  'retrieved',
  'agent_generated',
  'a2a_inbound',
  'external',
]);
const MAX_DEPTH = 64;

/** A Provenance object found in a payload, with the RFC 6901 pointer (inside the payload) of the object itself. */
export interface PayloadProvenance {
  provenance_id: string;
  origin: string;
  derived_from: string[];
  /** The optional wire `trust` label (ACS §7.1), as sent. */
  trust: unknown;
  pointer: string;
}

function escape(segment: string): string {
  return segment.replace(/~/g, '~0').replace(/\//g, '~1');
}

function isRecord(v: unknown): v is Record<string, unknown> {
  return v !== null && typeof v === 'object' && !Array.isArray(v);
}

function walk(node: unknown, pointer: string, depth: number, out: PayloadProvenance[]): void {
  if (depth > MAX_DEPTH || node === null || typeof node !== 'object') return;
  if (Array.isArray(node)) {
    for (let i = 0; i < node.length; i++) walk(node[i], `${pointer}/${i}`, depth + 1, out);
    return;
  }
  for (const key of Object.keys(node)) {
    const value = (node as Record<string, unknown>)[key];
    const at = `${pointer}/${escape(key)}`;
    if (
      key.endsWith('provenance') &&
      isRecord(value) &&
      typeof value.provenance_id === 'string' &&
      typeof value.origin === 'string'
    ) {
      out.push({
        provenance_id: value.provenance_id,
        origin: value.origin,
        derived_from: Array.isArray(value.derived_from)
          ? value.derived_from.filter((d): d is string => typeof d === 'string')
          : [],
        trust: value.trust,
        pointer: at,
      });
    } else walk(value, at, depth + 1, out);
  }
}

/**
 * Every Provenance object in a payload: any member whose name ends in `provenance` (`provenance`,
 * `registration_provenance`, `parser_provenance`, …) and whose value carries string provenance_id and origin.
 */
export function payloadProvenance(payload: unknown): PayloadProvenance[] {
  const out: PayloadProvenance[] = [];
  walk(payload, '', 0, out);
  return out;
}

export interface EntryProvenanceSummary {
  earliest_step_id_by_origin: Record<string, string>;
  entry_count: number;
  entry_count_by_origin: Record<string, number>;
  origins_seen: string[];
}

/** The summary of one step (all zero when its payload carries no Provenance); members in RFC 8785 order. */
export function entryProvenanceSummary(payload: unknown, stepId: string): EntryProvenanceSummary {
  const counts = new Map<string, number>();
  let total = 0;
  for (const p of payloadProvenance(payload)) {
    if (!ORIGINS.has(p.origin)) continue;
    counts.set(p.origin, (counts.get(p.origin) ?? 0) + 1);
    total++;
  }
  const origins = [...counts.keys()].sort();
  return {
    earliest_step_id_by_origin: Object.fromEntries(origins.map((o) => [o, stepId])),
    entry_count: total,
    entry_count_by_origin: Object.fromEntries(origins.map((o) => [o, counts.get(o)!])),
    origins_seen: origins,
  };
}

/** Whether a session's ContextEntries carry `provenance_summary`: it accepted ACS-Audit (docs/conformance.md). */
export function entriesCarryProvenanceSummary(profilesAccepted: readonly string[] | undefined): boolean {
  return profilesAccepted?.includes('acs-audit') ?? false;
}
