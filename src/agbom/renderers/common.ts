// What every serialization derives from (ACS Inspect: "the canonical form is always the source of truth and the
// serializations are derivations"): the canonical document and the facts of the version it is — never the clock,
// so rendering the same version twice gives the same bytes.
import { canonicalJson } from '../../chain/index.ts';
import type { Json } from '../../json.ts';
import { type AgbomComponent, type AgbomDocument, isObject, typeFields } from '../model.ts';

export interface RenderInput {
  document: AgbomDocument;
  agbomHash: string;
  sessionId: string;
  /** The chain entry (seq) whose version this is. */
  seq: number;
  /** RFC 3339 time of that entry (the request's params.timestamp, ACS §8.2). */
  timestamp: string;
  generator: { name: string; version: string };
}

/** A property value as text: strings as they are, everything else as its JCS text. */
export function propertyText(value: Json): string {
  return typeof value === 'string' ? value : canonicalJson(value);
}

/**
 * Canonical members without a home in the target format, as `acs:`-prefixed name/value pairs (extend_cyclonedx.md
 * Notes): the canonical type, the type-specific members, registration_provenance as
 * `acs:registration_provenance.<member>`, and whatever else the agent sent beyond the known members. `homed` names
 * the top-level members the format carries natively.
 */
export function acsProperties(c: AgbomComponent, homed: readonly string[]): { name: string; value: string }[] {
  const out: { name: string; value: string }[] = [{ name: 'acs:type', value: c.type }];
  const fieldsKey = `${c.type}_fields`;
  for (const [k, v] of Object.entries(typeFields(c))) out.push({ name: `acs:${k}`, value: propertyText(v) });
  const rp = c.registration_provenance;
  if (isObject(rp)) {
    for (const [k, v] of Object.entries(rp))
      out.push({ name: `acs:registration_provenance.${k}`, value: propertyText(v) });
  }
  for (const [k, v] of Object.entries(c)) {
    if (v === undefined || k === 'id' || k === 'type' || k === fieldsKey || k === 'registration_provenance') continue;
    if (homed.includes(k)) continue;
    if (k.endsWith('_fields')) continue;
    out.push({ name: `acs:${k}`, value: propertyText(v) });
  }
  return out;
}

/** A deterministic RFC 4122-shaped UUID (version 5 layout) from a hex digest: the BOM serial of a version. */
export function uuidFromHex(hex: string): string {
  const h = hex.padEnd(32, '0').slice(0, 32).split('');
  h[12] = '5';
  h[16] = ((Number.parseInt(h[16], 16) & 0x3) | 0x8).toString(16);
  const s = h.join('');
  return `${s.slice(0, 8)}-${s.slice(8, 12)}-${s.slice(12, 16)}-${s.slice(16, 20)}-${s.slice(20, 32)}`;
}

/** A skill's definition digest as {algorithm, hex}, when it names SHA-256/384/512 in hex. */
export function skillDigest(c: AgbomComponent): { alg: 'SHA-256' | 'SHA-384' | 'SHA-512'; hex: string } | null {
  const def = typeFields(c).definition;
  if (!isObject(def)) return null;
  const d = def.digest;
  let alg: string | undefined;
  let value: string | undefined;
  if (typeof d === 'string' && d.includes(':'))
    [alg, value] = [d.slice(0, d.indexOf(':')), d.slice(d.indexOf(':') + 1)];
  else if (isObject(d) && typeof d.algorithm === 'string' && typeof d.value === 'string')
    [alg, value] = [d.algorithm, d.value];
  if (alg === undefined || value === undefined) return null;
  const norm = alg.toLowerCase().replace('-', '');
  const name = norm === 'sha256' ? 'SHA-256' : norm === 'sha384' ? 'SHA-384' : norm === 'sha512' ? 'SHA-512' : null;
  const len = { 'SHA-256': 64, 'SHA-384': 96, 'SHA-512': 128 };
  if (name === null || !new RegExp(`^[0-9a-fA-F]{${len[name]}}$`).test(value)) return null;
  return { alg: name, hex: value.toLowerCase() };
}

/** Edges of the component graph whose target is in the document (a reference to an unknown id is not an edge). */
export function edgesOf(doc: AgbomDocument): Map<string, { rel: string; id: string }[]> {
  const ids = new Set(doc.components.map((c) => c.id));
  const out = new Map<string, { rel: string; id: string }[]>();
  for (const c of doc.components) {
    const f = typeFields(c);
    const edges: { rel: string; id: string }[] = [];
    for (const rel of ['tools', 'mcp_servers', 'a2a_peers', 'models', 'composed_skills']) {
      const list = f[rel];
      if (!Array.isArray(list)) continue;
      for (const id of list) if (typeof id === 'string' && ids.has(id) && id !== c.id) edges.push({ rel, id });
    }
    out.set(c.id, edges);
  }
  return out;
}
