// SWID documents validated against the ISO/IEC 19770-2:2015 XML schema itself (test/fixtures/swid/README.md names
// the copy and its source) by libxml2's XML Schema validator compiled to Wasm (xmllint-wasm), plus the one rule the
// standard states in prose that an XSD cannot express: every tag names its tagCreator Entity.
import { readFileSync } from 'node:fs';
import { XMLParser } from 'fast-xml-parser';
import { expect } from 'vitest';
import { validateXML } from 'xmllint-wasm';

const SWID_NS = 'http://standards.iso.org/iso/19770/-2/2015/schema.xsd';

function fixture(name: string): string {
  return readFileSync(new URL(`../fixtures/swid/${name}`, import.meta.url), 'utf8');
}

/**
 * The schema as published, with its import of the XML namespace's schema pointed at the copy beside it: the
 * validator reads no network. (Its XML Signature import is left unresolved: libxml2 skips an import it cannot load,
 * and nothing in the SWID schema refers to a ds: component; signatures enter through its `##other` wildcard.)
 */
function swidSchema(): string {
  const published = fixture('swid-2015-schema.xsd');
  const local = published.replace('schemaLocation="http://www.w3.org/2001/xml.xsd"', 'schemaLocation="xml.xsd"');
  if (local === published) throw new Error('swid-2015-schema.xsd no longer imports xml.xsd from its W3C address');
  return local;
}

const SCHEMA = { fileName: 'swid-2015-schema.xsd', contents: swidSchema() };
const PRELOAD = [{ fileName: 'xml.xsd', contents: fixture('xml.xsd') }];

type Node = Record<string, unknown>;

/** Tags (SoftwareIdentity elements of the SWID namespace, nested ones included) without a tagCreator Entity. */
function tagsWithoutCreator(xml: string): string[] {
  const doc = new XMLParser({
    preserveOrder: true,
    ignoreAttributes: false,
    attributeNamePrefix: '',
    ignoreDeclaration: true,
  }).parse(xml) as Node[];
  const out: string[] = [];
  const visit = (node: Node, scope: Map<string, string>): void => {
    const tag = Object.keys(node).find((k) => k !== ':@');
    if (!tag || tag === '#text') return;
    const attrs = (node[':@'] ?? {}) as Record<string, string>;
    const inner = new Map(scope);
    for (const [k, v] of Object.entries(attrs)) {
      if (k === 'xmlns') inner.set('', v);
      else if (k.startsWith('xmlns:')) inner.set(k.slice(6), v);
    }
    const [prefix, local] = tag.includes(':') ? tag.split(':') : ['', tag];
    const children = (node[tag] ?? []) as Node[];
    if (local === 'SoftwareIdentity' && inner.get(prefix) === SWID_NS) {
      const creator = children.some((c) => {
        const name = Object.keys(c).find((k) => k !== ':@') ?? '';
        const role = ((c[':@'] ?? {}) as Record<string, string>).role ?? '';
        return name.split(':').pop() === 'Entity' && role.split(/\s+/).includes('tagCreator');
      });
      if (!creator) out.push(`SoftwareIdentity tagId=${JSON.stringify(attrs.tagId)}: no Entity with role tagCreator`);
    }
    for (const c of children) visit(c, inner);
  };
  for (const n of doc) visit(n, new Map());
  return out;
}

/** libxml2's schema-validity errors for `xml` (messages without their file:line prefix), then the tagCreator rule. */
export async function swidProblems(xml: string): Promise<string[]> {
  const result = await validateXML({
    xml: [{ fileName: 'swid.xml', contents: xml }],
    schema: [SCHEMA],
    preload: PRELOAD,
    // No network: an import the preloaded files do not satisfy fails at once instead of being fetched.
    modifyArguments: (args) => ['--nonet', ...args],
  });
  if (result.valid) return tagsWithoutCreator(xml);
  // Only the document's own errors: the skipped XML Signature import is reported beside them, against the schema.
  const errors = result.errors.filter((e) => e.loc?.fileName === 'swid.xml').map((e) => e.message.trim());
  return errors.length > 0 ? errors : [`invalid: ${result.rawOutput.trim()}`];
}

export async function expectSwidValid(xml: string): Promise<void> {
  expect(await swidProblems(xml)).toEqual([]);
}
