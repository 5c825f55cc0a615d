// SWID (ISO/IEC 19770-2:2015) XML from the canonical AgBOM (ACS Inspect, extend_swid.md, format-mapping.json): a
// root SoftwareIdentity for the agent (tagId = agent id) carrying one SoftwareIdentity per component (tagId =
// component id, name, version). ISO 19770-2 does not let a tag contain SWID tags, so format-mapping.json's nesting
// goes through its extension point: the component tags sit in an `acs:components` element of our namespace (the
// schema's `xs:any namespace="##other"`), each a complete tag. Every tag names its tagCreator (the Guardian); the
// provider is an Entity with role softwareCreator, an endpoint is Meta/@location, composition is Link
// rel="requires" (agent_capability tags are corpus="true", as format-mapping.json says), and the root links back to
// the canonical document and to each component tag. Other canonical members are `acs:` Meta attributes.
import type { AgbomComponent } from '../model.ts';
import { acsProperties, edgesOf, type RenderInput } from './common.ts';

export const SWID_NAMESPACE = 'http://standards.iso.org/iso/19770/-2/2015/schema.xsd';
export const ACS_SWID_NAMESPACE = 'urn:acs:agbom';

// XML 1.0 Char production: anything else (U+0000, lone surrogates, U+FFFE/FFFF) cannot appear even escaped.
const NOT_XML_CHAR = /[^\u0009\u000a\u000d\u0020-\ud7ff\ue000-\ufffd\u{10000}-\u{10ffff}]/gu;

export function xmlAttr(value: string): string {
  return value
    .replace(NOT_XML_CHAR, '\ufffd')
    .replace(/&/g, '&amp;')
    .replace(/</g, '&lt;')
    .replace(/>/g, '&gt;')
    .replace(/"/g, '&quot;')
    .replace(/\r/g, '&#13;')
    .replace(/\n/g, '&#10;')
    .replace(/\t/g, '&#9;');
}

/** A Link href naming a component tag: `swid:<id>`, with what a URI cannot hold percent-encoded (RFC 3986). */
function swidRef(id: string): string {
  // Lone surrogates never arrive (the envelope is JCS-canonicalisable), so encodeURI cannot throw.
  return `swid:${encodeURI(id)}`;
}

/** An `acs:` attribute name from a property name: characters outside an XML NCName become `_`. */
function attrName(property: string): string {
  const local = property.slice('acs:'.length).replace(/[^A-Za-z0-9._-]/g, '_');
  return `acs:${/^[A-Za-z_]/.test(local) ? local : `_${local}`}`;
}

function element(name: string, attrs: [string, string | undefined][], children: string[] = [], indent = ''): string {
  const a = attrs
    .filter((x): x is [string, string] => x[1] !== undefined)
    .map(([k, v]) => ` ${k}="${xmlAttr(v)}"`)
    .join('');
  if (children.length === 0) return `${indent}<${name}${a}/>`;
  return `${indent}<${name}${a}>\n${children.join('\n')}\n${indent}</${name}>`;
}

/** The tagCreator Entity every tag carries (ISO 19770-2: each tag names who created it). */
function tagCreator(generator: RenderInput['generator'], indent: string): string {
  return element(
    'Entity',
    [
      ['name', generator.name],
      ['regid', 'invalid.unavailable'],
      ['role', 'tagCreator'],
    ],
    [],
    indent,
  );
}

function componentTag(
  c: AgbomComponent,
  requires: string[],
  generator: RenderInput['generator'],
  indent: string,
): string {
  const inner = `${indent}  `;
  const children: string[] = [tagCreator(generator, inner)];
  if (c.provider !== undefined)
    children.push(
      element(
        'Entity',
        [
          ['name', c.provider],
          ['role', 'softwareCreator'],
        ],
        [],
        inner,
      ),
    );
  for (const id of requires)
    children.push(
      element(
        'Link',
        [
          ['rel', 'requires'],
          ['href', swidRef(id)],
        ],
        [],
        inner,
      ),
    );
  const seen = new Set<string>();
  const meta: [string, string | undefined][] = [['location', c.endpoint]];
  for (const p of acsProperties(c, ['name', 'version', 'provider', 'endpoint'])) {
    const n = attrName(p.name);
    if (seen.has(n)) continue;
    seen.add(n);
    meta.push([n, p.value]);
  }
  children.push(element('Meta', meta, [], inner));
  return element(
    'SoftwareIdentity',
    [
      ['tagId', c.id],
      ['name', c.name ?? c.id],
      ['version', c.version],
      ['corpus', c.type === 'agent_capability' ? 'true' : undefined],
    ],
    children,
    indent,
  );
}

export function renderSwid(input: RenderInput): string {
  const { document: doc } = input;
  const edges = edgesOf(doc);
  const children = [
    tagCreator(input.generator, '  '),
    element(
      'Link',
      [
        ['rel', 'see-also'],
        ['href', `urn:acs-guardian:agbom:${input.agbomHash}`],
      ],
      [],
      '  ',
    ),
    ...doc.components.map((c) =>
      element(
        'Link',
        [
          ['rel', 'component'],
          ['href', swidRef(c.id)],
        ],
        [],
        '  ',
      ),
    ),
    element(
      'Meta',
      [
        ['generator', `${input.generator.name} ${input.generator.version}`],
        ['acs:agbom_hash', input.agbomHash],
        ['acs:session_id', input.sessionId],
        ['acs:chain_seq', String(input.seq)],
        ['acs:generated_at', input.timestamp],
      ],
      [],
      '  ',
    ),
  ];
  if (doc.components.length > 0) {
    children.push(
      element(
        'acs:components',
        [],
        doc.components.map((c) =>
          componentTag(c, [...new Set(edges.get(c.id)!.map((e) => e.id))], input.generator, '    '),
        ),
        '  ',
      ),
    );
  }
  const root = element(
    'SoftwareIdentity',
    [
      ['xmlns', SWID_NAMESPACE],
      ['xmlns:acs', ACS_SWID_NAMESPACE],
      ['tagId', doc.agent_id],
      ['name', doc.agent_id],
      ['version', String(input.seq)],
    ],
    children,
  );
  return `<?xml version="1.0" encoding="UTF-8"?>\n${root}\n`;
}
