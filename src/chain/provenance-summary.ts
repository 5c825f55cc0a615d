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

/**
 * A Provenance object found in a payload: its members as policies and checks read them, where it sits, and the
 * object itself as sent. The one walk of a payload's Provenance: the session state's records, the policy input, the
 * ACS-Provenance checks, provenance_id uniqueness and the entry summary all read what it returns.
 */
export interface PayloadProvenance {
  provenance_id: string;
  origin: string;
  source_id?: string;
  derived_from: string[];
  /** The optional wire `trust` label (ACS §7.1), as sent. */
  trust: unknown;
  /** RFC 6901 pointer (inside the payload) of the data-bearing object that carries it. */
  path: string;
  /** RFC 6901 pointer (inside the payload) of the Provenance object itself: `path` + its member name. */
  pointer: string;
  /** The Provenance object as sent. */
  object: Readonly<Record<string, unknown>>;
}

function escape(segment: string): string {
  // Most member names need no escaping: skip the two replaces (the walk runs several times per step).
  if (!segment.includes('~') && !segment.includes('/')) return segment;
  return segment.replace(/~/g, '~0').replace(/\//g, '~1');
}

function isRecord(v: unknown): v is Record<string, unknown> {
  return v !== null && typeof v === 'object' && !Array.isArray(v);
}

/** The walk behind payloadProvenance: pointers are built only for containers and matches (it runs per step). */
function walk(node: unknown, path: string, depth: number, out: PayloadProvenance[]): void {
  if (depth > MAX_DEPTH) return;
  if (Array.isArray(node)) {
    for (let i = 0; i < node.length; i++) {
      const child: unknown = node[i];
      if (child !== null && typeof child === 'object') walk(child, `${path}/${i}`, depth + 1, out);
    }
    return;
  }
  if (!isRecord(node)) return;
  for (const key of Object.keys(node)) {
    const value = node[key];
    if (
      key.endsWith('provenance') &&
      isRecord(value) &&
      typeof value.provenance_id === 'string' &&
      typeof value.origin === 'string'
    ) {
      const found: PayloadProvenance = {
        provenance_id: value.provenance_id,
        origin: value.origin,
        derived_from: Array.isArray(value.derived_from)
          ? value.derived_from.filter((d): d is string => typeof d === 'string')
          : [],
        trust: value.trust,
        path,
        pointer: `${path}/${escape(key)}`,
        object: value,
      };
      if (typeof value.source_id === 'string') found.source_id = value.source_id;
      out.push(found);
    } else if (value !== null && typeof value === 'object') walk(value, `${path}/${escape(key)}`, depth + 1, out);
  }
}

/**
 * Every Provenance object in a payload, in document order: any member whose name ends in `provenance`
 * (`provenance`, `registration_provenance`, `parser_provenance`, …) and whose value carries string provenance_id
 * and origin (ACS §7).
 */
export function payloadProvenance(payload: unknown): PayloadProvenance[] {
  const out: PayloadProvenance[] = [];
  if (payload !== null && typeof payload === 'object') walk(payload, '', 0, out);
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
