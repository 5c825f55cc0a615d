// The serializations of the canonical AgBOM (ACS Inspect format mappings): every CycloneDX document validated
// against the official CycloneDX 1.6 JSON schema (test/fixtures/cyclonedx), the SPDX 3.0 graph checked for
// closed references, the SWID XML parsed; each derived deterministically, hostile strings included.
import { XMLParser } from 'fast-xml-parser';
import { describe, expect, it } from 'vitest';
import { type AgbomComponent, agbomHash, documentOf } from '../../src/agbom/model.ts';
import {
  renderAgbom,
  renderCycloneDx,
  renderSpdx,
  renderSwid,
  type RenderInput,
} from '../../src/agbom/renderers/index.ts';
import { AGBOM_SERIALIZATIONS } from '../../src/agbom/formats.ts';
import { expectCycloneDxValid } from './cyclonedx-schema.ts';
import { expectSpdxValid, spdxProblems } from './spdx-schema.ts';
import { expectSwidValid, swidProblems } from './swid-schema.ts';
import { REALISTIC_COMPONENTS } from './fixtures.ts';

function input(components: unknown[], agentId = 'finance-summary-agent'): RenderInput {
  const document = documentOf(agentId, components as AgbomComponent[]);
  return {
    document,
    agbomHash: agbomHash(document),
    sessionId: '4b1c2d3e-0000-4000-8000-000000000001',
    seq: 3,
    timestamp: '2026-04-30T10:30:00Z',
    generator: { name: 'acs-guardian', version: '0.1.0' },
  };
}

const realistic = input(REALISTIC_COMPONENTS);
type Obj = Record<string, unknown>;
const props = (x: Obj) =>
  Object.fromEntries((x.properties as { name: string; value: string }[]).map((p) => [p.name, p.value]));

describe('CycloneDX 1.6', () => {
  it('is schema-valid, one entry per component with bom-ref = id, types per the schema-valid mapping', () => {
    const bom = renderCycloneDx(realistic);
    expectCycloneDxValid(bom);
    const components = bom.components as Obj[];
    const services = bom.services as Obj[];
    const all = [...components, ...services];
    expect(all.map((c) => c['bom-ref']).sort()).toEqual(REALISTIC_COMPONENTS.map((c) => c.id).sort());
    const byRef = new Map(all.map((c) => [c['bom-ref'], c]));
    expect(byRef.get('gpt-4o-2024-08-06')).toMatchObject({
      type: 'machine-learning-model',
      supplier: { name: 'OpenAI' },
    });
    expect(props(byRef.get('gpt-4o-2024-08-06')!)).toMatchObject({
      'acs:type': 'model',
      'acs:context_window': '128000',
      'acs:endpoint': 'https://api.openai.com/v1',
      'acs:registration_provenance.origin': 'system',
      'acs:registration_provenance.source_id': 'agent-config.yaml',
    });
    expect(services.map((s) => s['bom-ref']).sort()).toEqual([
      'urn:kb:finance-wiki',
      'urn:mcp:db-mcp',
      'urn:mcp:filesystem',
    ]);
    expect(byRef.get('urn:mcp:db-mcp')).toMatchObject({ endpoints: ['https://mcp.internal/db'], version: '1.4.0' });
    expect(byRef.get('urn:memory:user-notes')).toMatchObject({ type: 'data' });
    expect(byRef.get('urn:tool:database_query')).toMatchObject({ type: 'application' });
    expect(props(byRef.get('urn:tool:database_query')!)['acs:capability']).toBe('datastore.read');
    expect(byRef.get('urn:skill:quarterly-report')).toMatchObject({
      type: 'application',
      hashes: [{ alg: 'SHA-256', content: '9f2c4b7e0d1a3c5e7f9b1d3f5a7c9e1b3d5f7a9c1e3b5d7f9a1c3e5b7d9f1a3c' }],
    });
    const deps = new Map((bom.dependencies as { ref: string; dependsOn: string[] }[]).map((d) => [d.ref, d.dependsOn]));
    expect(deps.get('urn:agent:finance-summary-agent')?.length).toBe(REALISTIC_COMPONENTS.length);
    expect(deps.get('urn:capability:reporting')).toEqual([
      'urn:tool:database_query',
      'urn:tool:fs_read',
      'urn:mcp:db-mcp',
      'urn:mcp:filesystem',
    ]);
    expect(deps.get('urn:mcp:db-mcp')).toEqual(['urn:tool:database_query']);
    expect((bom.metadata as Obj).timestamp).toBe('2026-04-30T10:30:00Z');
    expect(props(bom.metadata as Obj)['acs:agbom_hash']).toBe(realistic.agbomHash);
  });

  it('stays schema-valid for an empty AgBOM, an A2A peer with its Agent Card, dangling references and hostile strings', async () => {
    expectCycloneDxValid(renderCycloneDx(input([])));
    expectSpdxValid(renderSpdx(input([])));
    await expectSwidValid(renderSwid(input([])));
    const hostile = {
      // (A lone surrogate cannot arrive: the envelope must be JCS-canonicalisable, ACS §17 -32600.)
      id: 'x"<&>\u0000',
      type: 'agent_capability',
      name: '<script>"&',
      agent_capability_fields: { description: 'a\nb', tools: ['urn:never-declared'], a2a_peers: ['peer-1'] },
      'acs-extra': { nested: [1, 2] },
    };
    const peer = {
      id: 'peer-1',
      type: 'a2a_peer',
      endpoint: 'https://peer.example/a2a',
      a2a_peer_fields: { protocol_version: '0.3', agent_card_ref: 'https://peer.example/.well-known/agent.json' },
    };
    const bom = renderCycloneDx(input([hostile, peer]));
    expectCycloneDxValid(bom);
    expectSpdxValid(renderSpdx(input([hostile, peer])));
    await expectSwidValid(renderSwid(input([hostile, peer])));
    const deps = new Map((bom.dependencies as { ref: string; dependsOn: string[] }[]).map((d) => [d.ref, d.dependsOn]));
    expect(deps.get(hostile.id)).toEqual(['peer-1']);
    expect((bom.services as Obj[])[0]).toMatchObject({
      'bom-ref': 'peer-1',
      name: 'peer-1',
      externalReferences: [{ type: 'documentation', url: 'https://peer.example/.well-known/agent.json' }],
    });
  });
});

describe('SPDX 3.0 JSON-LD', () => {
  it('is valid against the SPDX 3.0.1 JSON schema, which refuses a class missing a required property', () => {
    const doc = renderSpdx(realistic);
    expectSpdxValid(doc);
    const graph = structuredClone(doc['@graph'] as Obj[]);
    const dataset = graph.find((e) => e.type === 'dataset_DatasetPackage')!;
    delete dataset.dataset_datasetType;
    expect(spdxProblems({ ...doc, '@graph': graph })).toContainEqual(
      expect.objectContaining({ params: { missingProperty: 'dataset_datasetType' } }),
    );
    expect(spdxProblems({ ...doc, '@context': 'https://spdx.org/rdf/3.0.0/spdx-context.jsonld' })).not.toEqual([]);
  });

  it('maps every component to its class, with a closed graph of relationships', () => {
    const doc = renderSpdx(realistic);
    expect(doc['@context']).toBe('https://spdx.org/rdf/3.0.1/spdx-context.jsonld');
    const graph = doc['@graph'] as Obj[];
    const ids = new Set(graph.map((e) => e.spdxId).filter(Boolean));
    expect(ids.size).toBe(graph.filter((e) => e.spdxId).length);
    const creation = graph.find((e) => e.type === 'CreationInfo')!;
    expect(creation).toMatchObject({ specVersion: '3.0.1', created: '2026-04-30T10:30:00Z' });
    for (const by of creation.createdBy as string[]) expect(ids.has(by)).toBe(true);
    for (const e of graph.filter((x) => x.spdxId)) expect(e.creationInfo).toBe(creation['@id']);
    const byAcsId = new Map(
      graph
        .filter((e) => e.externalIdentifier)
        .map((e) => [(e.externalIdentifier as { identifier: string }[])[0].identifier, e]),
    );
    expect([...byAcsId.keys()].sort()).toEqual(REALISTIC_COMPONENTS.map((c) => c.id).sort());
    expect(byAcsId.get('gpt-4o-2024-08-06')?.type).toBe('ai_AIPackage');
    expect(byAcsId.get('urn:memory:user-notes')?.type).toBe('dataset_DatasetPackage');
    expect(byAcsId.get('urn:capability:reporting')?.type).toBe('Bundle');
    expect(byAcsId.get('urn:mcp:db-mcp')?.type).toBe('software_Package');
    expect(byAcsId.get('urn:skill:quarterly-report')?.verifiedUsing).toEqual([
      {
        type: 'Hash',
        algorithm: 'sha256',
        hashValue: '9f2c4b7e0d1a3c5e7f9b1d3f5a7c9e1b3d5f7a9c1e3b5d7f9a1c3e5b7d9f1a3c',
      },
    ]);
    const rels = graph.filter((e) => e.type === 'Relationship');
    for (const r of rels) {
      expect(ids.has(r.from as string)).toBe(true);
      for (const t of r.to as string[]) expect(ids.has(t)).toBe(true);
    }
    const mcp = byAcsId.get('urn:mcp:db-mcp')!.spdxId;
    const tool = byAcsId.get('urn:tool:database_query')!.spdxId;
    expect(
      rels.some(
        (r) => r.from === mcp && r.relationshipType === 'contains' && (r.to as string[]).includes(tool as string),
      ),
    ).toBe(true);
    for (const e of graph.filter((x) => x.type === 'SpdxDocument' || x.type === 'software_Sbom'))
      for (const m of [...(e.element as string[]), ...(e.rootElement as string[])]) expect(ids.has(m)).toBe(true);
  });
});

describe('SWID', () => {
  it('validates against the ISO/IEC 19770-2:2015 schema, which refuses a tag nested in a tag and a bad attribute value', async () => {
    const xml = renderSwid(realistic);
    await expectSwidValid(xml);
    const nested = await swidProblems(
      xml.replace('<acs:components>', '<SoftwareIdentity name="n" tagId="t"/><acs:components>'),
    );
    expect(nested).toHaveLength(1);
    expect(nested[0]).toMatch(/Element '\{[^}]+\}SoftwareIdentity': This element is not expected/);
    const corpus = await swidProblems(xml.replace('corpus="true"', 'corpus="yes"'));
    expect(corpus).toHaveLength(1);
    expect(corpus[0]).toMatch(/attribute 'corpus': 'yes' is not a valid value of the atomic type 'xs:boolean'/);
    const tagIdless = await swidProblems(xml.replace(/ tagId="gpt-4o-2024-08-06"/, ''));
    expect(tagIdless).toHaveLength(1);
    expect(tagIdless[0]).toMatch(/The attribute 'tagId' is required but missing/);
    // Schema-valid, but every tag names who created it (ISO 19770-2): the nested component tags are checked too.
    expect(await swidProblems(xml.replace(/ role="tagCreator"/g, ' role="aggregator"'))).toHaveLength(
      REALISTIC_COMPONENTS.length + 1,
    );
  });

  it('the agent tag carries one SoftwareIdentity per component with its creators, links and meta', () => {
    const xml = renderSwid(realistic);
    const parsed = new XMLParser({ ignoreAttributes: false, attributeNamePrefix: '@' }).parse(xml) as Obj;
    const root = parsed.SoftwareIdentity as Obj;
    expect(root['@xmlns']).toBe('http://standards.iso.org/iso/19770/-2/2015/schema.xsd');
    expect(root['@tagId']).toBe('finance-summary-agent');
    expect((root.Link as Obj[]).filter((l) => l['@rel'] === 'component')).toHaveLength(REALISTIC_COMPONENTS.length);
    const tags = (root['acs:components'] as Obj).SoftwareIdentity as Obj[];
    expect(tags.map((t) => t['@tagId']).sort()).toEqual(REALISTIC_COMPONENTS.map((c) => c.id).sort());
    const gpt = tags.find((t) => t['@tagId'] === 'gpt-4o-2024-08-06')!;
    expect(gpt).toMatchObject({
      '@name': 'GPT-4o',
      '@version': '2024-08-06',
      Entity: [
        { '@name': 'acs-guardian', '@role': 'tagCreator' },
        { '@name': 'OpenAI', '@role': 'softwareCreator' },
      ],
    });
    expect((gpt.Meta as Obj)['@location']).toBe('https://api.openai.com/v1');
    const cap = tags.find((t) => t['@tagId'] === 'urn:capability:reporting')!;
    expect(cap['@corpus']).toBe('true');
    expect((cap.Link as Obj[]).map((l) => [l['@rel'], l['@href']])).toEqual([
      ['requires', 'swid:urn:tool:database_query'],
      ['requires', 'swid:urn:tool:fs_read'],
      ['requires', 'swid:urn:mcp:db-mcp'],
      ['requires', 'swid:urn:mcp:filesystem'],
    ]);
  });

  it('escapes hostile names and drops characters XML cannot hold', async () => {
    const xml = renderSwid(
      input([
        {
          id: 'a"<&>\u0000',
          type: 'tool',
          name: ']]><x/>',
          version: '1',
          provider: 'O\'Neil & "Co"',
          tool_fields: { capability: 'x' },
          'weird key!': 'v',
        },
      ]),
    );
    await expectSwidValid(xml);
    const parsed = new XMLParser({ ignoreAttributes: false, attributeNamePrefix: '@' }).parse(xml) as Obj;
    const tag = ((parsed.SoftwareIdentity as Obj)['acs:components'] as Obj).SoftwareIdentity as Obj;
    expect(tag['@name']).toBe(']]><x/>');
    expect(tag['@tagId']).toBe('a"<&>\ufffd');
  });
});

describe('every serialization', () => {
  it('is a deterministic derivation: the same version renders to the same bytes', () => {
    for (const format of AGBOM_SERIALIZATIONS) {
      const a = renderAgbom(format, realistic);
      const b = renderAgbom(format, input([...REALISTIC_COMPONENTS].reverse()));
      expect(b.body, format).toBe(a.body);
      expect(a.contentType.length).toBeGreaterThan(0);
    }
  });
});
