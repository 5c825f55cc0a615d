// The OpenRPC description of /acs: valid against the OpenRPC meta-schema (@open-rpc/meta-schema), one method per
// ACS method the Guardian routes, every schema reference resolving inside the shipped ACS schemas, the params and
// results it describes matching real signed traffic, served at GET /acs/openrpc.json and answered for
// `rpc.discover` over HTTP and stdio.
import { PassThrough } from 'node:stream';
import jsonSchemaMeta from '@json-schema-tools/meta-schema';
import openRpcMeta from '@open-rpc/meta-schema';
import { Ajv } from 'ajv';
import { Ajv2020 } from 'ajv/dist/2020.js';
import addFormatsModule from 'ajv-formats';
import { describe, expect, it } from 'vitest';
import { STEP_METHODS } from '../../src/acs/methods.ts';
import { acsOpenRpcDocument } from '../../src/acs/openrpc/index.ts';
import { SCHEMA_BASE, loadAcsSchemas } from '../../src/acs/schemas/index.ts';
import { AcsClient } from '../../src/client/index.ts';
import { FrameParser, encodeFrame, serveStdio } from '../../src/server/stdio.ts';
import { TEST_IKM, expectValidAnswer, startHarness } from './fixtures/harness.ts';

const addFormats = ((addFormatsModule as unknown as { default?: unknown }).default ?? addFormatsModule) as (
  ajv: Ajv2020,
) => void;

/** The OpenRPC meta-schema's validator. */
function openRpcValidator() {
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
  return ajv.compile(strip(openRpcMeta));
}

type MethodObject = {
  name: string;
  params: { name: string; required: boolean; schema: object }[];
  result: { schema: object };
};

describe('OpenRPC document of the ACS API', () => {
  const doc = acsOpenRpcDocument();
  const acsMethods = () => (doc.methods as MethodObject[]).filter((m) => m.name !== 'rpc.discover');

  it('is valid against the OpenRPC meta-schema', () => {
    const validate = openRpcValidator();
    expect(validate(doc) ? null : validate.errors).toBeNull();
    // The check can fail: a document without methods is refused.
    expect(validate({ ...doc, methods: [{ name: 'x' }] })).toBe(false);
  });

  it('describes rpc.discover, handshake, ping and every step method, each ACS one with AcsParams members by name', () => {
    const names = doc.methods.map((m) => m.name);
    expect(names).toEqual(['rpc.discover', 'handshake/hello', 'system/ping', ...STEP_METHODS.keys()]);
    // Every ACS method has a prefix the request envelope's method pattern admits; rpc.discover has none, which
    // is why the transports answer it before the pipeline.
    const envelope = loadAcsSchemas().get('request-envelope.json') as {
      properties: { method: { pattern: string } };
    };
    const pattern = new RegExp(envelope.properties.method.pattern);
    for (const m of acsMethods()) expect(m.name, m.name).toMatch(pattern);
    expect('rpc.discover').not.toMatch(pattern);
    for (const m of acsMethods()) {
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
    collect(acsMethods());
    expect(refs.length).toBeGreaterThan(acsMethods().length * 8);
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

  it("describes the params and results of real signed traffic: each message member matches its method's schemas", async () => {
    const ajv = new Ajv2020({ strict: false, allErrors: true });
    addFormats(ajv);
    for (const schema of loadAcsSchemas().values()) ajv.addSchema(schema);
    const byName = new Map(acsMethods().map((m) => [m.name, m]));
    const h = await startHarness();
    const seen: { request: { method: string; params: Record<string, unknown> }; answer: { result?: unknown } }[] = [];
    try {
      const transport = async (message: string): Promise<string> => {
        const res = await fetch(h.url, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: message,
        });
        const text = await res.text();
        expectValidAnswer(JSON.parse(text));
        seen.push({ request: JSON.parse(message), answer: JSON.parse(text) });
        return text;
      };
      const client = new AcsClient({ transport, ikm: TEST_IKM, agentId: 'agent-openrpc' });
      await client.hello({ methods_implemented: ['steps/userMessage', 'steps/toolCallRequest'] });
      expect(
        (await client.step('steps/userMessage', { content: [{ type: 'text', value: 'hi' }] })).failure,
      ).toBeUndefined();
      const tool = await client.step('steps/toolCallRequest', {
        tool: { name: 'search' },
        arguments: { q: { value: 'x' } },
      });
      expect(tool.result?.decision).toBe('allow');
      await client.ping();
    } finally {
      await h.close();
    }
    expect(seen.map((s) => s.request.method)).toEqual([
      'handshake/hello',
      'steps/userMessage',
      'steps/toolCallRequest',
      'system/ping',
    ]);
    for (const { request, answer } of seen) {
      const method = byName.get(request.method)!;
      for (const param of method.params) {
        const value = request.params[param.name];
        if (value === undefined) {
          expect(param.required, `${request.method} ${param.name}`).toBe(false);
          continue;
        }
        const check = ajv.compile(param.schema);
        expect(check(value) ? null : check.errors, `${request.method} ${param.name}`).toBeNull();
      }
      expect(Object.keys(request.params).every((k) => method.params.some((p) => p.name === k))).toBe(true);
      const result = ajv.compile(method.result.schema);
      expect(result(answer.result) ? null : result.errors, `${request.method} result`).toBeNull();
      // The schemas can refuse: a decision is not a ServerHello, nor a hello a step payload.
      if (request.method === 'handshake/hello') expect(result({ decision: 'allow' })).toBe(false);
    }
  });

  it('is served at GET /acs/openrpc.json and answered for rpc.discover over HTTP', async () => {
    const h = await startHarness();
    try {
      const res = await fetch(h.url.replace(/\/acs$/, '/acs/openrpc.json'));
      expect(res.status).toBe(200);
      const served = await res.json();
      expect(served).toEqual(JSON.parse(JSON.stringify(doc)));
      const post = (body: unknown) =>
        fetch(h.url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
      const discovered = (await (await post({ jsonrpc: '2.0', id: 7, method: 'rpc.discover' })).json()) as {
        id: number;
        result: unknown;
      };
      expect(discovered).toEqual({ jsonrpc: '2.0', id: 7, result: served });
      const validate = openRpcValidator();
      expect(validate(discovered.result) ? null : validate.errors).toBeNull();
      expect(await (await post({ jsonrpc: '2.0', id: 'd', method: 'rpc.discover', params: [] })).json()).toMatchObject({
        id: 'd',
        result: { openrpc: '1.3.2' },
      });
      // Params are refused precisely; a notification (no id) and other methods go to the pipeline as before.
      const withParams = await h.post(JSON.stringify({ jsonrpc: '2.0', id: 8, method: 'rpc.discover', params: [1] }));
      expect(withParams).toMatchObject({ id: 8, error: { code: -32602, data: { reason: 'params_not_allowed' } } });
      const notification = await h.post(JSON.stringify({ jsonrpc: '2.0', method: 'rpc.discover' }));
      expect(notification).toMatchObject({ error: { code: -32600 } });
      const other = await h.post(JSON.stringify({ jsonrpc: '2.0', id: 9, method: 'rpc.describe' }));
      expect(other).toMatchObject({ id: 9, error: { code: -32600 } });
    } finally {
      await h.close();
    }
  });

  it('is answered for rpc.discover over stdio, in order with ACS answers', async () => {
    const h = await startHarness();
    const input = new PassThrough();
    const output = new PassThrough();
    const parser = new FrameParser(64 * 1024 * 1024);
    const frames: Record<string, unknown>[] = [];
    output.on('data', (chunk: Buffer) => {
      for (const ev of parser.push(chunk)) if (ev.kind === 'message') frames.push(JSON.parse(ev.body.toString('utf8')));
    });
    try {
      const serving = serveStdio(h.guardian, input, output);
      input.write(encodeFrame({ jsonrpc: '2.0', id: 1, method: 'rpc.discover' }));
      input.write(encodeFrame({ jsonrpc: '2.0', id: 2, method: 'steps/userMessage' }));
      input.end();
      await serving;
      expect(frames.map((f) => f.id)).toEqual([1, 2]);
      expect(frames[0]).toEqual({ jsonrpc: '2.0', id: 1, result: JSON.parse(JSON.stringify(doc)) });
      expectValidAnswer(frames[1]);
      expect(frames[1]).toMatchObject({ error: { code: -32600 } });
    } finally {
      await h.close();
    }
  });
});
