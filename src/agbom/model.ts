// The canonical AgBOM (ACS Inspect, "Canonical schema"): the agent and its typed components, the source of truth
// every serialization (src/agbom/renderers) derives from. `agbom/document.json` was never published in a form we
// could read, so the document shape here is reconstructed from the Inspect prose and docs/agbom.md states it;
// component members follow `agbom/component.json` plus the `skill` type of the Inspect type table.
import { canonicalJson, sha256Hex } from '../chain/index.ts';
import { isObject, type Json, type JsonObject } from '../json.ts';

export { isObject } from '../json.ts';
export type { JsonObject } from '../json.ts';

export const COMPONENT_TYPES = [
  'model',
  'mcp_server',
  'a2a_peer',
  'tool',
  'knowledge_source',
  'memory_store',
  'agent_capability',
  'skill',
] as const;
export type ComponentType = (typeof COMPONENT_TYPES)[number];

/** One component as the agent declared it; type-specific members live in `<type>_fields` (component.json). */
export interface AgbomComponent {
  id: string;
  type: ComponentType;
  name?: string;
  version?: string;
  provider?: string;
  endpoint?: string;
  /** Who declared it (ACS §7 Provenance object: origin, source_id; Inspect: SHOULD, ACS-Provenance: MUST). */
  registration_provenance?: JsonObject;
  [key: string]: Json | undefined;
}

export interface AgbomDocument {
  /** The Observed Agent the inventory describes (metadata.agent_id of the session when the agent names none). */
  agent_id: string;
  /** Components sorted by id: the order is part of the canonical form, so equal inventories hash equal. */
  components: AgbomComponent[];
}

/**
 * `agbom_hash`: lowercase hex SHA-256 of the RFC 8785 (JCS) text of the canonical document
 * `{agent_id, components}` (components sorted by id). Time-free on purpose: the same inventory has the same hash
 * whenever it is reported, which is what "detect AgBOM mutations" needs (docs/agbom.md, "agbom_hash").
 */
export function agbomHash(doc: AgbomDocument): string {
  return sha256Hex(canonicalJson({ agent_id: doc.agent_id, components: doc.components }));
}

export function isComponentType(v: unknown): v is ComponentType {
  return typeof v === 'string' && (COMPONENT_TYPES as readonly string[]).includes(v);
}

/** Type-specific members of a component (`model_fields`, …), empty when absent. */
export function typeFields(c: AgbomComponent): JsonObject {
  const f = c[`${c.type}_fields`];
  return isObject(f) ? f : {};
}

export function sortComponents(components: AgbomComponent[]): AgbomComponent[] {
  return [...components].sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
}

/** A document from components; duplicates are the caller's to report (see parseSnapshot). */
export function documentOf(agentId: string, components: AgbomComponent[]): AgbomDocument {
  return { agent_id: agentId, components: sortComponents(components) };
}

/** A copy without members whose value is undefined, so JCS and equality see what the wire carried. */
export function componentOf(value: JsonObject): AgbomComponent {
  return JSON.parse(JSON.stringify(value)) as AgbomComponent;
}
