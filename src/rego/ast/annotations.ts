// `# METADATA` comment blocks (OPA "Annotations"): YAML in comments directly above a package or rule.
// A block starts with a column-1 comment `# METADATA` and runs over the following column-1 comment lines.
import { parse as parseYaml, YAMLParseError } from 'yaml';
import { RegoError } from '../errors.ts';
import { isObject } from '../json.ts';
import type { Annotations, Comment, Location } from './types.ts';

export interface MetadataBlock {
  annotations: Annotations;
  /** Row of the last comment line in the block. */
  endRow: number;
  /** Scope was written explicitly (otherwise the caller picks the default for the target). */
  explicitScope: boolean;
}

const SCOPES = new Set(['package', 'rule', 'document', 'subpackages']);

function isMetadataStart(c: Comment): boolean {
  return c.location.col === 1 && c.text.trim() === 'METADATA';
}

/** Split the module's comments into METADATA blocks and parse each; errors are collected. */
export function parseMetadataBlocks(comments: Comment[], errors: RegoError[]): MetadataBlock[] {
  const blocks: MetadataBlock[] = [];
  for (let i = 0; i < comments.length; i++) {
    if (!isMetadataStart(comments[i])) continue;
    const startLoc = comments[i].location;
    const lines: Comment[] = [];
    let j = i + 1;
    while (
      j < comments.length &&
      comments[j].location.col === 1 &&
      comments[j].location.row === comments[j - 1].location.row + 1 &&
      !isMetadataStart(comments[j])
    ) {
      lines.push(comments[j]);
      j++;
    }
    const endRow = lines.length ? lines[lines.length - 1].location.row : startLoc.row;
    i = j - 1;
    const yamlText = lines.map((c) => (c.text.startsWith(' ') ? c.text.slice(1) : c.text)).join('\n');
    const parsed = parseBlock(yamlText, startLoc, lines, errors);
    if (parsed) blocks.push({ annotations: parsed.annotations, endRow, explicitScope: parsed.explicitScope });
  }
  return blocks;
}

function locOf(l: Location): Location {
  return { file: l.file, row: l.row, col: l.col, ...(l.offset !== undefined ? { offset: l.offset } : {}) };
}

function parseBlock(
  yamlText: string,
  startLoc: Location,
  lines: Comment[],
  errors: RegoError[],
): { annotations: Annotations; explicitScope: boolean } | undefined {
  if (yamlText.trim() === '') {
    errors.push(new RegoError('rego_parse_error', 'expected METADATA block, found whitespace', locOf(startLoc)));
    return undefined;
  }
  let raw: unknown;
  try {
    raw = parseYaml(yamlText);
  } catch (e) {
    let loc = startLoc;
    let msg = e instanceof Error ? e.message.split('\n')[0] : String(e);
    if (e instanceof YAMLParseError && e.linePos?.[0]) {
      const line = lines[e.linePos[0].line - 1];
      if (line) loc = line.location;
      msg = `yaml: ${msg}`;
    }
    errors.push(new RegoError('rego_parse_error', msg, locOf(loc)));
    return undefined;
  }
  if (!isObject(raw)) {
    errors.push(new RegoError('rego_parse_error', 'yaml: METADATA block must be a mapping', locOf(startLoc)));
    return undefined;
  }
  // OPA decodes the block into typed fields, so a key written without a value (`related_resources:`)
  // is that field's zero value: as if the key were absent.
  const r: Record<string, unknown> = Object.fromEntries(Object.entries(raw).filter(([, v]) => v !== null));
  const bad = (message: string): undefined => {
    errors.push(new RegoError('rego_parse_error', message, locOf(startLoc)));
    return undefined;
  };
  const out: Annotations = { scope: 'rule', location: locOf(startLoc) };
  let explicitScope = false;
  if (r.scope !== undefined) {
    if (typeof r.scope !== 'string' || !SCOPES.has(r.scope))
      return bad(`invalid annotation scope '${String(r.scope)}'`);
    out.scope = r.scope as Annotations['scope'];
    explicitScope = true;
  }
  if (r.title !== undefined) out.title = String(r.title);
  if (r.description !== undefined) out.description = String(r.description);
  if (r.entrypoint !== undefined) {
    if (typeof r.entrypoint !== 'boolean') return bad('invalid value for entrypoint: must be a boolean');
    out.entrypoint = r.entrypoint;
  }
  if (r.organizations !== undefined) {
    if (!Array.isArray(r.organizations)) return bad('invalid organizations: must be a list of strings');
    out.organizations = r.organizations.map(String);
  }
  if (r.related_resources !== undefined) {
    if (!Array.isArray(r.related_resources)) return bad('invalid related-resources: must be a list');
    out.related_resources = [];
    for (const item of r.related_resources) {
      if (typeof item === 'string') out.related_resources.push({ ref: item });
      else if (item && typeof item === 'object' && typeof (item as { ref?: unknown }).ref === 'string') {
        const o = item as { ref: string; description?: unknown };
        out.related_resources.push({
          ref: o.ref,
          ...(o.description !== undefined ? { description: String(o.description) } : {}),
        });
      } else return bad(`invalid related-resource definition ${JSON.stringify(item)}: ref URL may not be empty`);
    }
  }
  if (r.authors !== undefined) {
    if (!Array.isArray(r.authors)) return bad('invalid authors: must be a list');
    out.authors = [];
    for (const item of r.authors) {
      if (typeof item === 'string') {
        // "Jane Doe <jane@example.com>"
        const m = /^(.*?)\s*<([^>]*)>\s*$/.exec(item.trim());
        out.authors.push(m ? { ...(m[1] ? { name: m[1] } : {}), email: m[2] } : { name: item.trim() });
      } else if (item && typeof item === 'object') {
        const o = item as { name?: unknown; email?: unknown };
        if (o.name === undefined && o.email === undefined)
          return bad('invalid author: at least one of name or email must be set');
        out.authors.push({
          ...(o.name !== undefined ? { name: String(o.name) } : {}),
          ...(o.email !== undefined ? { email: String(o.email) } : {}),
        });
      } else return bad('invalid author definition');
    }
  }
  if (r.schemas !== undefined) {
    if (!Array.isArray(r.schemas)) return bad('invalid schemas: must be a list');
    out.schemas = r.schemas;
  }
  if (r.custom !== undefined) {
    if (r.custom === null || typeof r.custom !== 'object' || Array.isArray(r.custom))
      return bad('invalid custom: must be a map');
    out.custom = r.custom as Record<string, unknown>;
  }
  return { annotations: out, explicitScope };
}
