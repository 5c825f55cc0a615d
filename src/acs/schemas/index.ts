// Loads the ACS v0.1.0 JSON Schemas shipped beside this file. Verbatim copies of the stored upstream files
// plus reconstructed ones (marked "$comment": "reconstructed from ACS prose …"). Two load-time adjustments,
// both documented in docs/conformance.md:
//  1. every `$id` is rebased onto the newest upstream base, so the new-generation response envelope's relative
//     `$ref`s (request-envelope.json, modifications.json, ask-details.json) resolve against the older files;
//  2. `provenance` is dropped from `required` in hook payloads: the newest spec (§7) makes Provenance OPTIONAL
//     in the base schemas (the stored copies predate that change). A hook file that required it as stored is
//     also kept unchanged as its strict `hooks/<name>.acs-provenance.json` variant, which "restores provenance to
//     the required set" (ACS §7): the schema an ACS-Provenance session's payloads are validated against.
import { readFileSync, readdirSync } from 'node:fs';

export const SCHEMA_BASE = 'https://genai-security-project.github.io/agent-control-standard/schema/v0.1.0/';
const OLD_BASE = 'https://acs.org/schema/v0.1.0/';

export type JsonSchema = { [key: string]: unknown };

/** Drops `provenance` from every `required` under `node`; true when there was one. */
function dropProvenanceRequirement(node: unknown): boolean {
  if (Array.isArray(node)) {
    let dropped = false;
    for (const item of node) dropped = dropProvenanceRequirement(item) || dropped;
    return dropped;
  }
  if (node === null || typeof node !== 'object') return false;
  const record = node as Record<string, unknown>;
  let dropped = false;
  if (Array.isArray(record.required) && record.required.includes('provenance')) {
    record.required = record.required.filter((name) => name !== 'provenance');
    dropped = true;
  }
  for (const value of Object.values(record)) dropped = dropProvenanceRequirement(value) || dropped;
  return dropped;
}

/** The path of the strict ACS-Provenance variant of a hook schema path (whether or not one exists). */
export function strictVariantPath(path: string): string {
  return path.replace(/\.json$/, '.acs-provenance.json');
}

/** Every schema file, keyed by its path relative to the schema root (e.g. `hooks/user-message.json`). */
export function loadAcsSchemas(): Map<string, JsonSchema> {
  const root = new URL('./', import.meta.url);
  const out = new Map<string, JsonSchema>();
  const visit = (dir: string): void => {
    for (const entry of readdirSync(new URL(dir, root), { withFileTypes: true })) {
      const rel = dir + entry.name;
      if (entry.isDirectory()) visit(rel + '/');
      else if (entry.name.endsWith('.json')) {
        const schema = JSON.parse(readFileSync(new URL(rel, root), 'utf8')) as JsonSchema;
        if (typeof schema.$id === 'string' && schema.$id.startsWith(OLD_BASE))
          schema.$id = SCHEMA_BASE + schema.$id.slice(OLD_BASE.length);
        if (rel.startsWith('hooks/')) {
          const strict = structuredClone(schema);
          if (dropProvenanceRequirement(schema)) {
            const strictRel = strictVariantPath(rel);
            strict.$id = SCHEMA_BASE + strictRel;
            out.set(strictRel, strict);
          }
        }
        out.set(rel, schema);
      }
    }
  };
  visit('');
  return out;
}
