// CycloneDX 1.6 JSON from the canonical AgBOM (ACS Inspect, extend_cyclonedx.md, format-mapping.json). `bom-ref`
// is the canonical id. Where the two spec texts disagree, the CycloneDX 1.6 schema decides (docs/agbom.md): model is
// `machine-learning-model` (1.6 has no `ai-model`), MCP servers, A2A peers and knowledge sources are entries of
// `services[]` (1.6 has no `service` component type), memory stores are `data` components, tools, capabilities and
// skills are `application`s; the graph is `dependencies`, members without a CycloneDX home are `acs:` properties.
import type { AgbomComponent } from '../model.ts';
import { acsProperties, edgesOf, type RenderInput, skillDigest, uuidFromHex } from './common.ts';

const SERVICE_TYPES = new Set(['mcp_server', 'a2a_peer', 'knowledge_source']);

const COMPONENT_TYPE: Record<string, string> = {
  model: 'machine-learning-model',
  tool: 'application',
  memory_store: 'data',
  agent_capability: 'application',
  skill: 'application',
};

type CdxObject = Record<string, unknown>;

/** The agent's bom-ref (extend_cyclonedx.md example: `urn:agent:<agent id>`). */
export function agentRef(agentId: string): string {
  return `urn:agent:${agentId}`;
}

function componentOf(c: AgbomComponent): CdxObject {
  const out: CdxObject = { type: COMPONENT_TYPE[c.type] ?? 'application', 'bom-ref': c.id, name: c.name ?? c.id };
  if (c.version !== undefined) out.version = c.version;
  if (c.provider !== undefined) out.supplier = { name: c.provider };
  const digest = skillDigest(c);
  if (digest) out.hashes = [{ alg: digest.alg, content: digest.hex }];
  out.properties = acsProperties(c, ['name', 'version', 'provider']);
  return out;
}

function serviceOf(c: AgbomComponent): CdxObject {
  const out: CdxObject = { 'bom-ref': c.id, name: c.name ?? c.id };
  if (c.version !== undefined) out.version = c.version;
  if (c.provider !== undefined) out.provider = { name: c.provider };
  if (c.endpoint !== undefined) out.endpoints = [c.endpoint];
  const card = c.a2a_peer_fields;
  if (card && typeof card === 'object' && !Array.isArray(card) && typeof card.agent_card_ref === 'string') {
    out.externalReferences = [{ type: 'documentation', url: card.agent_card_ref, comment: 'A2A Agent Card' }];
  }
  out.properties = acsProperties(c, ['name', 'version', 'provider', 'endpoint']);
  return out;
}

export function renderCycloneDx(input: RenderInput): CdxObject {
  const { document: doc } = input;
  const root = agentRef(doc.agent_id);
  const edges = edgesOf(doc);
  const components = doc.components.filter((c) => !SERVICE_TYPES.has(c.type)).map(componentOf);
  const services = doc.components.filter((c) => SERVICE_TYPES.has(c.type)).map(serviceOf);
  const dependencies = [
    { ref: root, dependsOn: doc.components.map((c) => c.id) },
    ...doc.components.map((c) => ({ ref: c.id, dependsOn: [...new Set(edges.get(c.id)!.map((e) => e.id))] })),
  ];
  const bom: CdxObject = {
    bomFormat: 'CycloneDX',
    specVersion: '1.6',
    serialNumber: `urn:uuid:${uuidFromHex(input.agbomHash)}`,
    version: 1,
    metadata: {
      timestamp: input.timestamp,
      tools: { components: [{ type: 'application', name: input.generator.name, version: input.generator.version }] },
      component: { type: 'application', 'bom-ref': root, name: doc.agent_id },
      properties: [
        { name: 'acs:agbom_hash', value: input.agbomHash },
        { name: 'acs:session_id', value: input.sessionId },
        { name: 'acs:chain_seq', value: String(input.seq) },
      ],
    },
    components,
    dependencies,
  };
  if (services.length > 0) bom.services = services;
  return bom;
}
