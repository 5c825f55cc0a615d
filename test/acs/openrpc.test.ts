// The OpenRPC description of /acs: valid against the OpenRPC meta-schema (@open-rpc/meta-schema), one method per
// ACS method the Guardian routes, every schema reference resolving inside the shipped ACS schemas, served at
// GET /acs/openrpc.json.
import jsonSchemaMeta from '@json-schema-tools/meta-schema';
import openRpcMeta from '@open-rpc/meta-schema';
import { Ajv } from 'ajv';
import { describe, expect, it } from 'vitest';
import { STEP_METHODS } from '../../src/acs/methods.ts';
import { acsOpenRpcDocument } from '../../src/acs/openrpc/index.ts';
import { SCHEMA_BASE, loadAcsSchemas } from '../../src/acs/schemas/index.ts';
import { startHarness } from './fixtures/harness.ts';

describe('OpenRPC document of the ACS API', () => {
  const doc = acsOpenRpcDocument();

  it('is valid against the OpenRPC meta-schema', () => {
    // Both meta-schemas name their own dialect as $schema (https://meta.json-schema.tools/, a draft-07 superset):
    // dropped, so ajv reads them as draft-07; the JSON Schema one is registered under its $id for the references.
    const strip = (s: object): Record<string, unknown> => {
      const { $schema: _dialect, ...rest } = s as Record<string, unknown>;
      return rest;
    };
    const ajv = new Ajv({ strict: false, allErrors: true, validateFormats: false });
    ajv.addSchema(strip(jsonSchemaMeta));
    // openrpc's meta-schema refers to it both with and without the trailing slash.
    ajv.addSchema({ ...strip(jsonSchemaMeta), $id: 'https://meta.json-schema.tools' });
    const validate = ajv.compile(strip(openRpcMeta));
    expect(validate(doc) ? null : validate.errors).toBeNull();
    // The check can fail: a document without methods is refused.
    expect(validate({ ...doc, methods: [{ name: 'x' }] })).toBe(false);
  });

  it('describes handshake, ping and every step method, each with AcsParams members by name', () => {
    const names = doc.methods.map((m) => m.name);
    expect(names).toEqual(['handshake/hello', 'system/ping', ...STEP_METHODS.keys()]);
    for (const m of doc.methods) {
      const params = m.params as { name: string; required: boolean }[];
      expect(params.map((p) => p.name)).toEqual([
        'acs_version',
        'request_id',
        'timestamp',
        'nonce',
        'tenant_id',
        'metadata',
        'payload',
        'signature',
      ]);
      expect(params.filter((p) => p.required).map((p) => p.name)).toEqual([
        'acs_version',
        'request_id',
        'timestamp',
        'metadata',
        'payload',
      ]);
    }
  });

  it('references only schemas that ship, at pointers that exist', () => {
    const byId = new Map([...loadAcsSchemas().values()].map((s) => [s.$id as string, s]));
    const refs: string[] = [];
    const collect = (node: unknown): void => {
      if (Array.isArray(node)) node.forEach(collect);
      else if (node && typeof node === 'object')
        for (const [k, v] of Object.entries(node)) {
          if (k === '$ref' && typeof v === 'string' && v.startsWith(SCHEMA_BASE)) refs.push(v);
          else collect(v);
        }
    };
    collect(doc.methods);
    expect(refs.length).toBeGreaterThan(doc.methods.length * 8);
    for (const r of new Set(refs)) {
      const [file, pointer = ''] = r.split('#');
      const schema = byId.get(file);
      expect(schema, r).toBeDefined();
      let at: unknown = schema;
      for (const part of pointer.split('/').filter(Boolean)) at = (at as Record<string, unknown>)[part];
      expect(at, r).toBeTypeOf('object');
    }
    const userMessage = doc.methods.find((m) => m.name === 'steps/userMessage') as {
      params: { name: string; schema: { $ref: string } }[];
    };
    expect(userMessage.params.find((p) => p.name === 'payload')?.schema.$ref).toBe(
      `${SCHEMA_BASE}hooks/user-message.json`,
    );
  });

  it('is served at GET /acs/openrpc.json', async () => {
    const h = await startHarness();
    try {
      const res = await fetch(h.url.replace(/\/acs$/, '/acs/openrpc.json'));
      expect(res.status).toBe(200);
      expect(await res.json()).toEqual(JSON.parse(JSON.stringify(doc)));
    } finally {
      await h.close();
    }
  });
});
