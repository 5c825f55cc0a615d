// SPDX 3.0 JSON-LD (the 3.0.1 model and context) from the canonical AgBOM (ACS Inspect, extend_spdx.md,
// format-mapping.json). Classes: model → ai_AIPackage, memory_store → dataset_DatasetPackage, tool / skill →
// software_Package, agent_capability → Bundle of its members, mcp_server / a2a_peer / knowledge_source →
// software_Package with primary purpose `other` (SPDX 3.0 defines no Service class; docs/agbom.md). Relationships:
// agent dependsOn every component, mcp_server contains its tools, a capability or skill contains / dependsOn what it
// composes. Canonical members without an SPDX home are CdxPropertiesExtension entries named `acs:…`.
import type { AgbomComponent } from '../model.ts';
import { acsProperties, edgesOf, type RenderInput, skillDigest } from './common.ts';

export const SPDX_CONTEXT = 'https://spdx.org/rdf/3.0.1/spdx-context.jsonld';

type SpdxObject = Record<string, unknown>;

/** SPDX 3.0.1 DateTime is to the second (`…T12:00:00Z`): the entry timestamp's fraction of a second is dropped. */
function spdxDateTime(timestamp: string): string {
  return timestamp.replace(/\.\d+(?=Z$|[+-]\d{2}:\d{2}$)/, '');
}

const CLASS: Record<string, string> = {
  model: 'ai_AIPackage',
  memory_store: 'dataset_DatasetPackage',
  tool: 'software_Package',
  skill: 'software_Package',
  agent_capability: 'Bundle',
  mcp_server: 'software_Package',
  a2a_peer: 'software_Package',
  knowledge_source: 'software_Package',
};

const PURPOSE: Record<string, string> = {
  model: 'model',
  memory_store: 'data',
  tool: 'application',
  skill: 'application',
  mcp_server: 'other',
  a2a_peer: 'other',
  knowledge_source: 'other',
};

export function renderSpdx(input: RenderInput): SpdxObject {
  const { document: doc } = input;
  const graph = edgesOf(doc);
  const base = `urn:acs-guardian:agbom:${input.agbomHash}`;
  const idOf = (componentId: string) => `${base}:component:${encodeURIComponent(componentId)}`;
  const creation = '_:creationinfo';
  const guardian = `${base}:tool`;
  const agent = `${base}:agent`;
  const elementBase = (type: string, spdxId: string, name: string): SpdxObject => ({
    type,
    spdxId,
    creationInfo: creation,
    name,
  });
  const packages = doc.components.map((c: AgbomComponent) => {
    const cls = CLASS[c.type];
    const node = elementBase(cls, idOf(c.id), c.name ?? c.id);
    node.externalIdentifier = [
      { type: 'ExternalIdentifier', externalIdentifierType: 'other', identifier: c.id, issuingAuthority: 'acs-agbom' },
    ];
    if (cls !== 'Bundle') {
      if (c.version !== undefined) node.software_packageVersion = c.version;
      if (c.provider !== undefined) node.suppliedBy = `${base}:supplier:${encodeURIComponent(c.provider)}`;
      if (c.endpoint !== undefined) node.software_downloadLocation = c.endpoint;
      node.software_primaryPurpose = PURPOSE[c.type];
      // SPDX 3.0.1 requires a dataset's type; what a memory store holds is not in the AgBOM, so nothing is asserted.
      if (cls === 'dataset_DatasetPackage') node.dataset_datasetType = ['noAssertion'];
      const digest = skillDigest(c);
      if (digest)
        node.verifiedUsing = [
          { type: 'Hash', algorithm: digest.alg.toLowerCase().replace('-', ''), hashValue: digest.hex },
        ];
    } else {
      node.element = graph.get(c.id)!.map((e) => idOf(e.id));
    }
    node.extension = [
      {
        type: 'extension_CdxPropertiesExtension',
        extension_cdxProperty: acsProperties(c, ['name', 'version', 'provider', 'endpoint']).map((p) => ({
          type: 'extension_CdxPropertyEntry',
          extension_cdxPropName: p.name,
          extension_cdxPropValue: p.value,
        })),
      },
    ];
    return node;
  });
  const suppliers = [...new Set(doc.components.map((c) => c.provider).filter((p): p is string => p !== undefined))].map(
    (p) => elementBase('Organization', `${base}:supplier:${encodeURIComponent(p)}`, p),
  );
  const relationships: SpdxObject[] = [];
  let n = 0;
  const relate = (from: string, type: string, to: string[]) => {
    if (to.length === 0) return;
    relationships.push({
      ...elementBase('Relationship', `${base}:relationship:${n++}`, type),
      from,
      relationshipType: type,
      to,
    });
  };
  relate(
    agent,
    'dependsOn',
    doc.components.map((c) => idOf(c.id)),
  );
  for (const c of doc.components) {
    const edges = graph.get(c.id)!;
    const contains = c.type === 'mcp_server' || c.type === 'agent_capability';
    relate(idOf(c.id), contains ? 'contains' : 'dependsOn', [...new Set(edges.map((e) => idOf(e.id)))]);
  }
  for (const r of relationships) delete r.name;
  const agentNode = elementBase('software_Package', agent, doc.agent_id);
  agentNode.software_primaryPurpose = 'application';
  const sbomId = `${base}:sbom`;
  const all = [agentNode, ...packages, ...suppliers, ...relationships];
  return {
    '@context': SPDX_CONTEXT,
    '@graph': [
      {
        type: 'CreationInfo',
        '@id': creation,
        specVersion: '3.0.1',
        created: spdxDateTime(input.timestamp),
        createdBy: [guardian],
      },
      {
        ...elementBase('SoftwareAgent', guardian, `${input.generator.name} ${input.generator.version}`),
      },
      ...all,
      {
        ...elementBase('software_Sbom', sbomId, `AgBOM of ${doc.agent_id}`),
        software_sbomType: ['runtime'],
        rootElement: [agent],
        element: all.map((e) => e.spdxId),
        comment: `acs:agbom_hash=${input.agbomHash} acs:session_id=${input.sessionId} acs:chain_seq=${input.seq}`,
      },
      {
        ...elementBase('SpdxDocument', `${base}:document`, `AgBOM ${input.sessionId}@${input.seq}`),
        rootElement: [sbomId],
        element: [sbomId, ...all.map((e) => e.spdxId)],
        profileConformance: ['core', 'software', 'ai', 'dataset', 'extension'],
      },
    ],
  };
}
