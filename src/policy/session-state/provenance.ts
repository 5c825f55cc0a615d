// Provenance (ACS §7): the Provenance objects of a step's payload, the trust each record derives (§7.2), the
// records a session keeps (bounded, two layers), their lineage, and the taint marks of untrusted data.
import { type PayloadProvenance, payloadProvenance } from '../../chain/provenance-summary.ts';
import type { Json } from '../../json.ts';
import { ownValue, setOwn } from './copy-on-write.ts';
import type { Origin, ProvenanceRecord, SessionState, SessionStateOptions, TaintMark, Trust } from './types.ts';

/** ACS §7.2 default trust by origin; `agent_generated` is the minimum over its lineage instead. */
export const DEFAULT_ORIGIN_TRUST: Readonly<Record<Exclude<Origin, 'agent_generated'>, Trust>> = {
  user_input: 'trusted',
  system: 'trusted',
  tool_output: 'untrusted',
  retrieved: 'untrusted',
  a2a_inbound: 'untrusted',
  external: 'untrusted',
};

const TRUST_RANK: Record<Trust, number> = { untrusted: 0, unknown: 1, trusted: 2 };

export function minTrust(a: Trust, b: Trust): Trust {
  return TRUST_RANK[a] <= TRUST_RANK[b] ? a : b;
}

const DEFAULT_MAX_PROVENANCE = 4096;
/** New records are folded into `provenance.records` in batches of this many (one copy of the big map per batch). */
const RECENT_RECORDS_FOLD = 64;

/** A Provenance object of a step's payload (the one walk, src/chain/provenance-summary.ts). */
export type FoundProvenance = PayloadProvenance;

/**
 * Every Provenance object in a payload: any object member whose key ends in `provenance` and whose value
 * carries string `provenance_id` and `origin` (§7: content, arguments, results, outputs, registration_provenance…);
 * `path` is the pointer of the data-bearing object inside params.payload.
 */
export function collectProvenance(payload: Json): FoundProvenance[] {
  return payloadProvenance(payload);
}

/**
 * Folds the provenance `found` in a step's payload into `next` (the state advanceSessionState is building from
 * `state`): records, summary and taint. Returns the step's first untrusted mark, null when all it cites is trusted.
 */
export function foldProvenance(
  state: SessionState,
  next: SessionState,
  found: readonly FoundProvenance[],
  stepId: string,
  options: SessionStateOptions,
): TaintMark | null {
  // Provenance: record each object once (first sighting wins), derive trust (§7.2), update the summary.
  const maxRecords = options.maxProvenanceRecords ?? DEFAULT_MAX_PROVENANCE;
  let stepUntrusted: TaintMark | null = null;
  const base = state.provenance.records;
  const recentBase = state.provenance.recent_records ?? {};
  const added = new Map<string, ProvenanceRecord>();
  const known: KnownRecords = { added, recent: recentBase, base };
  for (const f of found) {
    const existing = knownRecord(known, f.provenance_id);
    const rec = existing ?? recordFor(known, f, stepId, next.step_index, next.turn.index, options);
    if (!existing) added.set(f.provenance_id, rec);
    if (rec.trust !== 'trusted' && stepUntrusted === null) {
      stepUntrusted = {
        step_id: stepId,
        step_index: next.step_index,
        turn_index: next.turn.index,
        turn_id: next.turn.id,
        provenance_id: f.provenance_id,
        origin: f.origin,
      };
    }
  }
  const recordCount =
    added.size > 0 ? (state.provenance.record_count ?? 0) + added.size : state.provenance.record_count;
  const overCap = (recordCount ?? Object.keys(base).length + Object.keys(recentBase).length) > maxRecords;
  if (added.size > 0 || overCap) {
    let recent: Record<string, ProvenanceRecord> = { ...recentBase };
    const summary = { ...state.provenance.summary };
    summary.origins_seen = [...state.provenance.summary.origins_seen];
    summary.entry_count_by_origin = { ...state.provenance.summary.entry_count_by_origin };
    summary.earliest_step_id_by_origin = { ...state.provenance.summary.earliest_step_id_by_origin };
    for (const [id, rec] of added) {
      setOwn(recent, id, rec);
      summary.entry_count += 1;
      setOwn(summary.entry_count_by_origin, rec.origin, (ownValue(summary.entry_count_by_origin, rec.origin) ?? 0) + 1);
      if (!summary.origins_seen.includes(rec.origin)) summary.origins_seen.push(rec.origin);
      if (ownValue(summary.earliest_step_id_by_origin, rec.origin) === undefined)
        setOwn(summary.earliest_step_id_by_origin, rec.origin, stepId);
      summary.max_lineage_depth = Math.max(summary.max_lineage_depth, rec.lineage_depth);
    }
    let records = base;
    // Added ids are in neither layer (the lookup above checked both), so the layer grows by exactly added.size.
    let recentSize = recentLayerSize(recentBase) + added.size;
    if (overCap || recentSize >= RECENT_RECORDS_FOLD) {
      records = { ...base, ...recent };
      recent = {};
      recentSize = 0;
    }
    lastRecentLayer = { records: recent, size: recentSize };
    const provenance: SessionState['provenance'] = { ...state.provenance };
    provenance.summary = summary;
    provenance.records = records;
    provenance.recent_records = recent;
    if (recordCount !== undefined) provenance.record_count = recordCount;
    if (overCap) provenance.record_count = evictOldRecords(records, maxRecords);
    next.provenance = provenance;
  }
  if (stepUntrusted) {
    const taint = { ...state.taint };
    taint.earliest_untrusted = state.taint.earliest_untrusted === null ? stepUntrusted : state.taint.earliest_untrusted;
    taint.latest_untrusted = stepUntrusted;
    taint.untrusted_steps = state.taint.untrusted_steps + 1;
    next.taint = taint;
  }
  return stepUntrusted;
}

/** Drops the oldest tenth of the records (by step) once over the cap: new data is what later steps cite. */
function evictOldRecords(records: Record<string, ProvenanceRecord>, maxRecords: number): number {
  const ids = Object.keys(records);
  if (ids.length <= maxRecords) return ids.length;
  const drop = ids.length - maxRecords + Math.ceil(maxRecords / 10);
  const oldest = ids.sort((a, b) => records[a].step_index - records[b].step_index || (a < b ? -1 : 1)).slice(0, drop);
  for (const id of oldest) delete records[id];
  return ids.length - oldest.length;
}

/**
 * The recent-records layer the last fold wrote and its number of records: the session's next step starts from it,
 * so its keys (up to RECENT_RECORDS_FOLD) need not be counted again on every step. One entry; other layers are
 * counted.
 */
let lastRecentLayer: { records: Readonly<Record<string, ProvenanceRecord>>; size: number } | undefined;

function recentLayerSize(records: Readonly<Record<string, ProvenanceRecord>>): number {
  return lastRecentLayer !== undefined && lastRecentLayer.records === records
    ? lastRecentLayer.size
    : Object.keys(records).length;
}

/** Provenance ids in first-seen order, each once. */
export function distinctProvenanceIds(found: readonly FoundProvenance[]): string[] {
  // A step references a few objects: a linear scan beats building a Set, which bounds the scan's cost.
  if (found.length > 16) return [...new Set(found.map((f) => f.provenance_id))];
  const ids: string[] = [];
  for (const f of found) if (!ids.includes(f.provenance_id)) ids.push(f.provenance_id);
  return ids;
}

/**
 * The provenance ids the last advanceSessionState found in its step's payload, with the state it returned: the
 * policy input, built from that state right after, projects the same ids without walking the payload again.
 * One entry, not a WeakMap per state (weak tables made every young-generation collection slower). States are
 * never mutated once returned, so the entry is true as long as it is the same state and payload.
 */
let lastFold: { state: SessionState; payload: Json; ids: readonly string[] } | undefined;

/** The distinct provenance ids of `payload`, taken from the fold that produced `state` when it folded this payload. */
export function referencedProvenanceIds(state: SessionState, payload: Json): readonly string[] {
  return lastFold !== undefined && lastFold.state === state && lastFold.payload === payload
    ? lastFold.ids
    : distinctProvenanceIds(collectProvenance(payload));
}

/** Remembers the provenance ids advanceSessionState found in `payload`, with the state it returned. */
export function rememberFold(state: SessionState, payload: Json, ids: readonly string[]): void {
  lastFold = { state, payload, ids };
}

/** The records a step's fold can see: those it adds, then the state's recent and folded ones. */
interface KnownRecords {
  added: Map<string, ProvenanceRecord>;
  recent: Readonly<Record<string, ProvenanceRecord>>;
  base: Readonly<Record<string, ProvenanceRecord>>;
}

/** A module function, not a closure per step (tsx names every closure it creates with a defineProperty). */
function knownRecord(known: KnownRecords, id: string): ProvenanceRecord | undefined {
  return known.added.get(id) ?? ownValue(known.recent, id) ?? ownValue(known.base, id);
}

function recordFor(
  known: KnownRecords,
  f: FoundProvenance,
  stepId: string,
  stepIndex: number,
  turnIndex: number,
  options: SessionStateOptions,
): ProvenanceRecord {
  const override = options.originTrust ? ownValue(options.originTrust, f.origin) : undefined;
  // §7.2: agent_generated has the minimum trust of its lineage (no lineage → `unknown`); every other origin
  // starts at its default (or the policy override) and still never rises above a lower-trust parent.
  let trust: Trust =
    f.origin === 'agent_generated'
      ? f.derived_from.length === 0
        ? 'unknown'
        : 'trusted'
      : (override ?? ownValue(DEFAULT_ORIGIN_TRUST as Record<string, Trust>, f.origin) ?? 'unknown');
  if (f.origin === 'agent_generated' && override !== undefined) trust = minTrust(trust, override);
  let depth = 0;
  for (const parent of f.derived_from) {
    const pr = knownRecord(known, parent);
    // A parent we never saw cannot vouch for anything.
    trust = minTrust(trust, pr ? pr.trust : 'unknown');
    depth = Math.max(depth, (pr?.lineage_depth ?? 0) + 1);
  }
  const rec: ProvenanceRecord = {
    origin: f.origin,
    derived_from: f.derived_from,
    trust,
    step_id: stepId,
    step_index: stepIndex,
    turn_index: turnIndex,
    path: f.path,
    lineage_depth: depth,
  };
  if (f.source_id !== undefined) rec.source_id = f.source_id;
  return rec;
}

/** The record of a provenance id this session has seen (and not evicted). */
export function provenanceRecord(state: SessionState, id: string): ProvenanceRecord | undefined {
  const recent = state.provenance.recent_records;
  return (recent ? ownValue(recent, id) : undefined) ?? ownValue(state.provenance.records, id);
}

/** Every record the session holds, by provenance id (both layers; for inspection, not the per-step path). */
export function provenanceRecords(state: SessionState): Record<string, ProvenanceRecord> {
  return { ...state.provenance.records, ...state.provenance.recent_records };
}

/** Transitive ancestors of a provenance id (cycle-safe, sorted). */
export function lineageOf(state: SessionState, provenanceId: string, limit = Infinity): string[] {
  // Breadth-first, so a bounded lineage keeps the nearest ancestors.
  const seen = new Set<string>();
  const queue = [...(provenanceRecord(state, provenanceId)?.derived_from ?? [])];
  for (let i = 0; i < queue.length && seen.size < limit; i++) {
    const id = queue[i];
    if (seen.has(id)) continue;
    seen.add(id);
    queue.push(...(provenanceRecord(state, id)?.derived_from ?? []));
  }
  return [...seen].sort();
}
