// SWID documents checked against the ISO/IEC 19770-2:2015 content model in test/fixtures/swid (its README says why
// a transcription of the schema's structure stands in for schema.xsd): namespace-resolved elements, attribute
// types, required attributes, allowed children, and a tagCreator Entity on every tag.
import { readFileSync } from 'node:fs';
import { XMLParser, XMLValidator } from 'fast-xml-parser';
import { expect } from 'vitest';

type AttributeType = string | string[];
interface ElementModel {
  attributes: Record<string, AttributeType>;
  required: string[];
  children: Record<string, number | null>;
  otherAttributes?: boolean;
  anyAttributes?: boolean;
  otherElements: boolean;
}
interface ContentModel {
  namespace: string;
  root: string;
  elements: Record<string, ElementModel>;
}

const MODEL = JSON.parse(
  readFileSync(new URL('../fixtures/swid/iso-19770-2-2015-content-model.json', import.meta.url), 'utf8'),
) as ContentModel;
const NAME_CHAR = /^[A-Za-z0-9._:\-\u00B7\u00C0-\uFFFD]+$/u;
const TYPES: Record<string, (v: string) => boolean> = {
  string: () => true,
  boolean: (v) => ['true', 'false', '1', '0'].includes(v),
  integer: (v) => /^[+-]?\d+$/.test(v),
  NMTOKEN: (v) => NAME_CHAR.test(v),
  NMTOKENS: (v) =>
    v
      .trim()
      .split(/\s+/)
      .every((t) => NAME_CHAR.test(t)),
  anyURI: (v) => !/[\s<>"{}|\\^`]/.test(v),
  language: (v) => /^[A-Za-z]{1,8}(-[A-Za-z0-9]{1,8})*$/.test(v),
};
const XML_NS = 'http://www.w3.org/XML/1998/namespace';

type Node = Record<string, unknown>;

function typeOk(type: AttributeType, value: string): boolean {
  return Array.isArray(type) ? type.includes(value) : (TYPES[type]?.(value) ?? false);
}

/** The problems of one element (and its subtree); `scope` maps prefixes ('' = default) to namespaces. */
function check(node: Node, scope: Map<string, string>, path: string, out: string[]): void {
  const tag = Object.keys(node).find((k) => k !== ':@')!;
  if (tag === '#text') return;
  const attrs = (node[':@'] ?? {}) as Record<string, string>;
  const inner = new Map(scope);
  for (const [k, v] of Object.entries(attrs)) {
    if (k === 'xmlns') inner.set('', v);
    else if (k.startsWith('xmlns:')) inner.set(k.slice(6), v);
  }
  const [prefix, local] = tag.includes(':') ? tag.split(':') : ['', tag];
  const ns = inner.get(prefix);
  if (ns === undefined) out.push(`${path}: prefix ${prefix} is not declared`);
  const here = `${path}/${tag}`;
  const children = (node[tag] ?? []) as Node[];
  if (ns !== MODEL.namespace) {
    // A foreign element (an ##other extension point): lax, but SWID elements inside are still checked.
    for (const c of children) check(c, inner, here, out);
    return;
  }
  const model = MODEL.elements[local];
  if (!model) {
    out.push(`${here}: ${local} is not an element this content model covers`);
    return;
  }
  for (const [name, value] of Object.entries(attrs)) {
    if (name === 'xmlns' || name.startsWith('xmlns:')) continue;
    const declared = model.attributes[name];
    if (declared !== undefined) {
      if (!typeOk(declared, value)) out.push(`${here}/@${name}: ${JSON.stringify(value)} is not a valid ${declared}`);
      continue;
    }
    const attrNs = name.includes(':') ? (name.startsWith('xml:') ? XML_NS : inner.get(name.split(':')[0])) : null;
    if (model.anyAttributes) continue;
    if (!(model.otherAttributes && attrNs !== null && attrNs !== undefined && attrNs !== MODEL.namespace))
      out.push(`${here}/@${name}: attribute not allowed`);
  }
  for (const r of model.required) if (attrs[r] === undefined) out.push(`${here}: required attribute ${r} missing`);
  const counts = new Map<string, number>();
  for (const c of children) {
    const childTag = Object.keys(c).find((k) => k !== ':@')!;
    if (childTag === '#text') {
      if (String((c as Record<string, unknown[]>)['#text']).trim() !== '')
        out.push(`${here}: text content not allowed`);
      continue;
    }
    const [cp, cl] = childTag.includes(':') ? childTag.split(':') : ['', childTag];
    const cns = new Map([...inner, ...nsDeclarations(c)]).get(cp);
    if (cns === MODEL.namespace) {
      if (!(cl in model.children)) out.push(`${here}: child ${cl} not allowed`);
      else if (cl === 'Evidence' || cl === 'Payload') out.push(`${here}: ${cl} content is not modelled`);
      counts.set(cl, (counts.get(cl) ?? 0) + 1);
      const max = model.children[cl];
      if (max !== null && max !== undefined && (counts.get(cl) ?? 0) > max) out.push(`${here}: too many ${cl}`);
    } else if (!model.otherElements) out.push(`${here}: foreign child ${childTag} not allowed`);
    check(c, inner, here, out);
  }
  if (local === 'SoftwareIdentity') {
    const creators = children.filter((c) => {
      const a = (c[':@'] ?? {}) as Record<string, string>;
      return 'Entity' in c && (a.role ?? '').split(/\s+/).includes('tagCreator');
    });
    if (creators.length === 0) out.push(`${here}: no Entity with role tagCreator`);
  }
}

function nsDeclarations(node: Node): [string, string][] {
  const attrs = (node[':@'] ?? {}) as Record<string, string>;
  return Object.entries(attrs)
    .filter(([k]) => k === 'xmlns' || k.startsWith('xmlns:'))
    .map(([k, v]) => [k === 'xmlns' ? '' : k.slice(6), v]);
}

/** Every violation of the content model in `xml` (empty when valid). */
export function swidProblems(xml: string): string[] {
  if (XMLValidator.validate(xml) !== true) return ['not well-formed XML'];
  const doc = new XMLParser({
    preserveOrder: true,
    ignoreAttributes: false,
    attributeNamePrefix: '',
    parseAttributeValue: false,
    ignoreDeclaration: true,
    trimValues: false,
  }).parse(xml) as Node[];
  const elements = doc.filter((n) => !('#text' in n) || String(n['#text']).trim() !== '');
  if (elements.length !== 1) return ['a document has exactly one root element'];
  const root = elements[0];
  const out: string[] = [];
  const tag = Object.keys(root).find((k) => k !== ':@')!;
  const ns = new Map(nsDeclarations(root)).get(tag.includes(':') ? tag.split(':')[0] : '');
  if (ns !== MODEL.namespace || !tag.endsWith(MODEL.root)) out.push(`root is ${tag} in ${ns}, not a ${MODEL.root}`);
  check(root, new Map([['xml', XML_NS]]), '', out);
  return out;
}

export function expectSwidValid(xml: string): void {
  expect(swidProblems(xml)).toEqual([]);
}
