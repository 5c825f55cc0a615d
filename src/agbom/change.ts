// agbom/snapshot and agbom/changed payloads (ACS Inspect, "Wire methods") turned into the canonical document and
// the diff between two documents. A changed payload carries either a full snapshot or a diff (`added[]`,
// `removed[]`, `changed[]`); "the resulting AgBOM after applying the diff MUST equal the AgBOM the Observed Agent
// would emit as a fresh snapshot", so a diff that does not apply to the Guardian's AgBOM is a divergence, reported
// as a problem (docs/agbom.md, "Integrity").
import { canonicalJson } from '../chain/index.ts';
import type { Json } from '../json.ts';
import {
  type AgbomComponent,
  type AgbomDocument,
  agbomHash,
  componentOf,
  documentOf,
  isObject,
  type JsonObject,
} from './model.ts';

/** A diff in wire form: what the store keeps for a `changed` version and what folds onto the previous one. */
export interface AgbomDiff {
  added: AgbomComponent[];
  removed: string[];
  changed: AgbomComponent[];
}

/** A diff between two documents, with both sides of each changed component (policy input, `agbom diff`). */
export interface AgbomComparison {
  added: AgbomComponent[];
  removed: AgbomComponent[];
  changed: { id: string; from: AgbomComponent; to: AgbomComponent }[];
}

export type AgbomProblemCode =
  | 'duplicate_component_id'
  | 'added_component_exists'
  | 'removed_component_unknown'
  | 'changed_component_unknown'
  | 'diff_without_snapshot'
  | 'agbom_hash_mismatch'
  | 'registration_provenance_missing';

export interface AgbomProblem {
  code: AgbomProblemCode;
  detail: string;
}

/** What one agbom/* step proposes, before the policy decides on it. */
export interface ProposedAgbom {
  /** 'full': the payload carried the whole AgBOM; 'diff': added/removed/changed against the current one. */
  form: 'full' | 'diff';
  document: AgbomDocument;
  /** The payload's diff (form 'diff'), or the diff from the current AgBOM to the full one (form 'full'). */
  diff: AgbomDiff;
  hash: string;
  /** The agbom_hash the agent reported, when it did (normalised to lowercase hex). */
  reportedHash: string | null;
  problems: AgbomProblem[];
}

const HASH_PREFIX = /^sha-?256:/i;

function reportedHashOf(payload: JsonObject): string | null {
  const doc = isObject(payload.agbom) ? payload.agbom : undefined;
  const candidates: Json[] = [
    payload.agbom_hash ?? null,
    isObject(payload.metadata) ? (payload.metadata.agbom_hash ?? null) : null,
    doc?.agbom_hash ?? null,
    doc && isObject(doc.metadata) ? (doc.metadata.agbom_hash ?? null) : null,
  ];
  for (const c of candidates) if (typeof c === 'string') return c.replace(HASH_PREFIX, '').toLowerCase();
  return null;
}

function agentIdOf(payload: JsonObject, fallback: string): string {
  const doc = isObject(payload.agbom) ? payload.agbom : payload;
  const meta = isObject(doc.metadata) ? doc.metadata : {};
  const agent = isObject(doc.agent) ? doc.agent : {};
  for (const c of [doc.agent_id, meta.agent_id, agent.agent_id, agent.id])
    if (typeof c === 'string' && c !== '') return c;
  return fallback;
}

function componentsIn(list: Json | undefined): AgbomComponent[] {
  return Array.isArray(list) ? list.filter((c): c is JsonObject => isObject(c)).map(componentOf) : [];
}

/** The full component list a payload carries, or undefined when it is a diff. */
function fullComponents(payload: JsonObject): AgbomComponent[] | undefined {
  if (isObject(payload.agbom) && Array.isArray(payload.agbom.components)) return componentsIn(payload.agbom.components);
  if (Array.isArray(payload.components)) return componentsIn(payload.components);
  return undefined;
}

function duplicates(components: AgbomComponent[]): AgbomProblem[] {
  const seen = new Set<string>();
  const out: AgbomProblem[] = [];
  for (const c of components) {
    if (seen.has(c.id)) out.push({ code: 'duplicate_component_id', detail: `component id ${c.id} appears twice` });
    seen.add(c.id);
  }
  return out;
}

function sameComponent(a: AgbomComponent, b: AgbomComponent): boolean {
  return canonicalJson(a) === canonicalJson(b);
}

/** What changed from `from` (null: nothing yet) to `to`. Components are compared by id, then by JCS text. */
export function compareDocuments(from: AgbomDocument | null, to: AgbomDocument): AgbomComparison {
  const before = new Map((from?.components ?? []).map((c) => [c.id, c]));
  const after = new Map(to.components.map((c) => [c.id, c]));
  const out: AgbomComparison = { added: [], removed: [], changed: [] };
  for (const c of to.components) {
    const was = before.get(c.id);
    if (!was) out.added.push(c);
    else if (!sameComponent(was, c)) out.changed.push({ id: c.id, from: was, to: c });
  }
  for (const c of from?.components ?? []) if (!after.has(c.id)) out.removed.push(c);
  return out;
}

/** The wire-form diff of a comparison. */
export function diffOf(comparison: AgbomComparison): AgbomDiff {
  return {
    added: comparison.added,
    removed: comparison.removed.map((c) => c.id),
    changed: comparison.changed.map((c) => c.to),
  };
}

/** Folds a diff onto a document; problems name each part that does not apply (the rest is applied). */
export function applyDiff(doc: AgbomDocument, diff: AgbomDiff): { document: AgbomDocument; problems: AgbomProblem[] } {
  const byId = new Map(doc.components.map((c) => [c.id, c]));
  const problems: AgbomProblem[] = [];
  for (const id of diff.removed) {
    if (!byId.delete(id))
      problems.push({ code: 'removed_component_unknown', detail: `removed component ${id} is not in the AgBOM` });
  }
  for (const c of diff.changed) {
    if (!byId.has(c.id))
      problems.push({ code: 'changed_component_unknown', detail: `changed component ${c.id} is not in the AgBOM` });
    byId.set(c.id, c);
  }
  for (const c of diff.added) {
    if (byId.has(c.id))
      problems.push({ code: 'added_component_exists', detail: `added component ${c.id} is already in the AgBOM` });
    byId.set(c.id, c);
  }
  return { document: documentOf(doc.agent_id, [...byId.values()]), problems };
}

function removedIds(list: Json | undefined): string[] {
  if (!Array.isArray(list)) return [];
  const out: string[] = [];
  for (const r of list) {
    if (typeof r === 'string') out.push(r);
    else if (isObject(r) && typeof r.id === 'string') out.push(r.id);
  }
  return out;
}

/**
 * The AgBOM an agbom/* payload proposes given the session's current one (`current`, null before any snapshot).
 * `agentId` is the session's bound agent, used when the document names none. The payload has passed its hook
 * schema (component members typed), so only the cross-component rules are checked here.
 */
export function proposeAgbom(
  current: AgbomDocument | null,
  payload: JsonObject,
  agentId: string,
  options: { requireRegistrationProvenance?: boolean } = {},
): ProposedAgbom {
  const reportedHash = reportedHashOf(payload);
  const full = fullComponents(payload);
  let document: AgbomDocument;
  let diff: AgbomDiff;
  let problems: AgbomProblem[];
  let form: ProposedAgbom['form'];
  if (full !== undefined) {
    form = 'full';
    problems = duplicates(full);
    document = documentOf(agentIdOf(payload, current?.agent_id ?? agentId), full);
    diff = diffOf(compareDocuments(current, document));
  } else {
    form = 'diff';
    diff = {
      added: componentsIn(payload.added),
      removed: removedIds(payload.removed),
      changed: componentsIn(payload.changed),
    };
    problems = duplicates([...diff.added, ...diff.changed]);
    if (current === null) {
      problems.push({ code: 'diff_without_snapshot', detail: 'a diff arrived before any agbom/snapshot' });
    }
    const applied = applyDiff(current ?? documentOf(agentId, []), diff);
    document = applied.document;
    problems.push(...applied.problems);
  }
  if (options.requireRegistrationProvenance) {
    // ACS-Provenance: "MUST populate registration_provenance on every component" (Inspect, Canonical schema).
    const incoming = form === 'full' ? document.components : [...diff.added, ...diff.changed];
    for (const c of incoming) {
      if (!isObject(c.registration_provenance)) {
        problems.push({
          code: 'registration_provenance_missing',
          detail: `component ${c.id} carries no registration_provenance (ACS-Provenance)`,
        });
      }
    }
  }
  const hash = agbomHash(document);
  if (reportedHash !== null && reportedHash !== hash) {
    problems.push({
      code: 'agbom_hash_mismatch',
      detail: `reported agbom_hash ${reportedHash} is not the hash of the resulting AgBOM (${hash})`,
    });
  }
  return { form, document, diff, hash, reportedHash, problems };
}
