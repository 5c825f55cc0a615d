// acs-trace and operations telemetry against real receivers: a real Guardian runtime (PGlite, crypto registry,
// Wasm fixture engine) behind real HTTP, exporting spans over OTLP/HTTP to an in-test receiver, OCSF batches to an
// in-test SIEM collector and a JSON-lines file, metrics at /metrics, pino logs captured. Every ACS answer is checked
// against the response schema. The mapping tables below are written from the ACS OTel and OCSF mappings (v0.1.0).
import { execFileSync, spawn } from 'node:child_process';
import { existsSync, lstatSync, readFileSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Ajv2020 } from 'ajv/dist/2020.js';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { AcsClient } from '../../src/client/index.ts';
import { deriveSessionKey } from '../../src/crypto/index.ts';
import type { AcsRequest, ResponseEnvelope, ServerHello } from '../../src/acs/types.ts';
import { openGuardianRuntime, type GuardianRuntime } from '../../src/server/app.ts';
import { startHttpServer, type RunningHttpServer } from '../../src/server/http.ts';
import { openStore } from '../../src/store/index.ts';
import type { Json } from '../../src/json.ts';
import { createLogger, type PipelineStage } from '../../src/telemetry/index.ts';
import { scriptedDecisionEngine } from '../acs/fixtures/decision-module.ts';
import { ALL_STEPS, expectValidAnswer, TEST_IKM } from '../acs/fixtures/harness.ts';
import { ASK_DETAILS, DEFER_DETAILS, STEP_PAYLOADS } from '../acs/fixtures/payloads.ts';
import { parsePrometheus } from './prometheus-text.ts';
import {
  eventually,
  startOtlpReceiver,
  startSiemCollector,
  type OtlpReceiver,
  type SiemCollector,
} from './receivers.ts';

const OCSF_SCHEMA = JSON.parse(
  readFileSync(new URL('../fixtures/ocsf/acs-ocsf-classes.schema.json', import.meta.url), 'utf8'),
) as object;
const validateOcsf = new Ajv2020({ allErrors: true, strict: false }).compile(OCSF_SCHEMA);

/** ACS OTel mapping: span name and required attributes per step (otel-mapping.json step_to_span). */
const SPANS: Record<string, [string, string[]]> = {
  'steps/sessionStart': ['acs.session', ['acs.session.id']],
  'steps/agentTrigger': ['acs.agent.trigger', ['acs.agent.id', 'acs.trigger.type']],
  'steps/userMessage': ['acs.message.user', ['acs.session.id', 'acs.content.types']],
  'steps/agentResponse': ['acs.message.agent', ['acs.session.id', 'acs.agent.id']],
  'steps/toolCallRequest': ['gen_ai.tool.call', ['gen_ai.tool.name', 'acs.capability']],
  'steps/toolCallResult': ['gen_ai.tool.result', ['gen_ai.tool.name', 'acs.exit_status']],
  'steps/knowledgeRetrieval': ['acs.knowledge.retrieval', ['acs.source.type', 'acs.results.count']],
  'steps/memoryStore': ['acs.memory.store', ['acs.memory_store.name', 'acs.operation']],
  'steps/memoryContextRetrieval': ['acs.memory.retrieval', ['acs.memory_store.name', 'acs.results.count']],
  'steps/sessionEnd': ['acs.session.end', ['acs.session.reason']],
  'steps/turnStart': ['acs.turn', ['acs.turn.id', 'acs.turn.triggered_by']],
  'steps/turnEnd': ['acs.turn.end', ['acs.turn.id', 'acs.turn.outcome']],
  'steps/preCompact': ['acs.compact', ['acs.compact.entry_count', 'acs.compact.triggered_by']],
  'steps/postCompact': ['acs.compact.complete', ['acs.compact.entry_count']],
  'steps/subagentStart': [
    'acs.subagent',
    ['acs.subagent.session_id', 'acs.subagent.parent_session_id', 'acs.subagent.intent_derivation'],
  ],
  'steps/subagentStop': [
    'acs.subagent.end',
    ['acs.subagent.session_id', 'acs.subagent.outcome', 'acs.subagent.final_chain_hash'],
  ],
  'steps/skillRegister': [
    'acs.skill.register',
    ['acs.skill.id', 'acs.skill.digest.algorithm', 'acs.skill.digest.value', 'acs.skill.declared_capabilities'],
  ],
  'steps/skillLoad': [
    'acs.skill.load',
    [
      'acs.skill.id',
      'acs.skill.digest.algorithm',
      'acs.skill.digest.value',
      'acs.skill.load_trigger',
      'acs.skill.load_path',
    ],
  ],
  'steps/skillUnload': ['acs.skill.unload', ['acs.skill.id', 'acs.skill.reason']],
};
/** ACS OCSF mapping: class_uid (and activity_id where fixed) per step (ocsf-mapping.json step_to_class). */
const CLASSES: Record<string, [number, number?]> = {
  'steps/sessionStart': [3002, 1],
  'steps/sessionEnd': [3002, 2],
  'steps/userMessage': [6002],
  'steps/agentResponse': [6002],
  'steps/agentTrigger': [6002],
  'steps/turnStart': [6002],
  'steps/turnEnd': [6002],
  'steps/toolCallRequest': [1007],
  'steps/toolCallResult': [1007],
  'steps/knowledgeRetrieval': [6005],
  'steps/memoryStore': [6005],
  'steps/memoryContextRetrieval': [6005],
  'steps/preCompact': [6005, 99],
  'steps/postCompact': [6005, 99],
  'steps/subagentStart': [3002, 1],
  'steps/subagentStop': [3002, 2],
  'steps/skillRegister': [5001],
  'steps/skillLoad': [1005, 1],
  'steps/skillUnload': [1005, 2],
};
const SEVERITY: Record<string, number> = { allow: 1, modify: 2, ask: 3, defer: 3, deny: 4 };
const STAGES = ['validate', 'authenticate', 'admit', 'evaluate', 'sign', 'commit'];

const TOOL = STEP_PAYLOADS['steps/toolCallRequest'];
const WANTS: Record<string, Json> = {
  deny: { decision: 'deny', reasoning: 'rm is not allowed here', reason_codes: ['tool_blocked'] },
  modify: {
    decision: 'modify',
    reasoning: 'narrowed',
    modifications: { redactions: [{ path: '/arguments/secret' }], parameter_overrides: { command: 'ls -l' } },
  },
  ask: { decision: 'ask', reasoning: 'needs approval', ask_details: ASK_DETAILS },
  defer: { decision: 'defer', reasoning: 'wait', defer_details: DEFER_DETAILS },
};
const want = (input: Json): Json | undefined => {
  const params = (input as { params?: { payload?: { want?: Json; throw?: boolean } } }).params;
  if (params?.payload?.throw) throw new Error('policy builtin exploded');
  return params?.payload?.want ?? { decision: 'allow', reasoning: 'fixture allows' };
};

const SECRETS = {
  metricsToken: 'metrics-token-9f8e7d6c5b4a',
  siemToken: 'siem-token-0a1b2c3d4e5f',
  adminToken: 'admin-token-112233445566',
};

interface Running {
  runtime: GuardianRuntime;
  server: RunningHttpServer;
  logs: string[];
  /** Every message sent and answered (the secret scan looks for their signatures). */
  wire: string[];
  client(traceparent?: () => string | undefined): AcsClient;
  close(): Promise<void>;
}

async function startGuardian(env: Record<string, string>): Promise<Running> {
  const dir = mkdtempSync(join(tmpdir(), 'acs-telemetry-'));
  const store = await openStore({ inMemory: true });
  const engine = await scriptedDecisionEngine(want, 'rev-telemetry');
  const logs: string[] = [];
  const logger = createLogger({ level: 'debug', destination: { write: (line: string) => void logs.push(line) } });
  const runtime = await openGuardianRuntime({
    dataDir: dir,
    store,
    engine,
    logger,
    env: {
      GUARDIAN_HMAC_IKM: Buffer.from(TEST_IKM).toString('base64'),
      GUARDIAN_ADMIN_TOKEN: SECRETS.adminToken,
      ...env,
    },
  });
  const server = await startHttpServer(runtime.guardian, {
    port: 0,
    ...(runtime.telemetry.metricsApp ? { metrics: runtime.telemetry.metricsApp } : {}),
  });
  const wire: string[] = [];
  return {
    runtime,
    server,
    logs,
    wire,
    client: (traceparent) =>
      new AcsClient({
        ikm: TEST_IKM,
        agentId: 'agent-telemetry',
        transport: async (message) => {
          const tp = traceparent?.();
          const res = await fetch(server.url, {
            method: 'POST',
            headers: { 'content-type': 'application/json', ...(tp ? { traceparent: tp } : {}) },
            body: message,
          });
          const text = await res.text();
          expectValidAnswer(JSON.parse(text));
          wire.push(message, text);
          return text;
        },
      }),
    async close() {
      await server.close();
      await runtime.close();
      await store.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** The session's in-turn steps in the run below: turnStart through turnEnd name turn t1 (metadata.turn_id). */
const IN_TURN = (() => {
  const order = Object.keys(STEP_PAYLOADS);
  return new Set(order.slice(order.indexOf('steps/turnStart'), order.indexOf('steps/turnEnd') + 1));
})();

describe.each([
  ['http/protobuf', 'application/x-protobuf'],
  ['http/json', 'application/json'],
])('acs-trace with real receivers, OTLP over %s', (protocol, contentType) => {
  let otlp: OtlpReceiver;
  let siem: SiemCollector;
  let g: Running;
  let dir: string;
  let hello: ServerHello;
  let sessionId = '';
  const traceId = '4bf92f3577b34da6a3ce929d0e0e4736';
  const parentSpanId = '00f067aa0ba902b7';
  const unsampledTraceId = '5bf92f3577b34da6a3ce929d0e0e4737';

  beforeAll(async () => {
    otlp = await startOtlpReceiver();
    siem = await startSiemCollector({ failFirst: 1 });
    dir = mkdtempSync(join(tmpdir(), 'acs-ocsf-file-'));
    g = await startGuardian({
      OTEL_EXPORTER_OTLP_ENDPOINT: otlp.url,
      OTEL_EXPORTER_OTLP_TRACES_PROTOCOL: protocol,
      OTEL_SERVICE_NAME: 'guardian-under-test',
      OTEL_BSP_SCHEDULE_DELAY: '50',
      GUARDIAN_OCSF_HTTP_URL: siem.url,
      GUARDIAN_OCSF_HTTP_TOKEN: SECRETS.siemToken,
      GUARDIAN_OCSF_HTTP_BACKOFF_MS: '20',
      GUARDIAN_OCSF_FILE: join(dir, 'ocsf.jsonl'),
      GUARDIAN_OCSF_FLUSH_MS: '20',
      GUARDIAN_METRICS_TOKEN: SECRETS.metricsToken,
    });
    // One full session: every step once (allowed), then a tool call per non-allow disposition, one with a
    // traceparent, one carrying provenance, one whose policy fails (audited).
    let tp: string | undefined;
    const c = g.client(() => tp);
    hello = await c.hello({
      methods_implemented: ALL_STEPS,
      profiles_supported: ['acs-core', 'acs-trace'],
      provenance_producer: 'deterministic', // one step carries Provenance (ACS §7)
    });
    sessionId = c.sessionId;
    for (const method of Object.keys(STEP_PAYLOADS)) {
      if (method === 'steps/sessionEnd') continue;
      const turn = IN_TURN.has(method) ? { turnId: 't1' } : {};
      expect((await c.step(method, STEP_PAYLOADS[method], turn)).failure).toBeUndefined();
    }
    for (const d of ['deny', 'modify', 'ask', 'defer']) {
      const out = await c.step('steps/toolCallRequest', { ...TOOL, want: WANTS[d] });
      expect(out.decision).toBe(d);
    }
    tp = `00-${traceId}-${parentSpanId}-01`;
    await c.step('steps/userMessage', {
      content: [
        {
          type: 'text',
          value: 'hello',
          provenance: { provenance_id: 'u1', origin: 'user_input', source_id: 'user-7' },
        },
      ],
    });
    // A caller that does not sample its trace (flags 00): the default sampler, parentbased_always_on, records
    // nothing for the step, as the OTel SDK would.
    tp = `00-${unsampledTraceId}-${parentSpanId}-00`;
    expect((await c.step('steps/agentResponse', STEP_PAYLOADS['steps/agentResponse'])).failure).toBeUndefined();
    tp = undefined;
    expect((await c.step('steps/toolCallRequest', { ...TOOL, throw: true })).decision).toBe('deny');
    await c.step('steps/sessionEnd', STEP_PAYLOADS['steps/sessionEnd']);
    // 19 steps + 4 dispositions + provenance + failure = 25 step spans, plus the handshake.
    await eventually(() => otlp.spans.filter((s) => s.name.startsWith('acs.pipeline.') === false).length >= 26);
    await eventually(() => siem.events.filter((e) => e.class_uid !== 2004).length >= 25);
    // The count above includes the handshake's event, so it can be reached before the last step's event arrives.
    await eventually(() =>
      siem.events.some((e) => {
        const acs = (e.unmapped as { acs?: { session_id?: string; step?: { method?: string } } }).acs;
        return acs?.session_id === sessionId && acs.step?.method === 'steps/sessionEnd';
      }),
    );
  });

  afterAll(async () => {
    await g.close();
    await otlp.close();
    await siem.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('the handshake declares acs-trace and what is emitted (ServerHello trace_emission)', () => {
    expect(hello.profiles_accepted).toEqual(['acs-core', 'acs-trace']);
    expect(hello.trace_emission).toEqual({ otel_enabled: true, ocsf_enabled: true });
  });

  it(`the exporter sends ${contentType} (OTEL_EXPORTER_OTLP_TRACES_PROTOCOL=${protocol}), decoded by the receiver`, () => {
    expect(otlp.encodings.length).toBeGreaterThan(0);
    expect(new Set(otlp.encodings)).toEqual(new Set([contentType]));
  });

  it('every one of the 19 hooks is a span with its mapped name and required attributes, and an acs.decision event', () => {
    expect(otlp.resources[0]['service.name']).toBe('guardian-under-test');
    const steps = otlp.spans.filter((s) => s.attributes['acs.session.id'] === sessionId);
    // The chain hash each answer carries, by the request it answers (the decision event repeats it).
    const chainHashOf = new Map<unknown, unknown>();
    for (const text of g.wire) {
      const result = (JSON.parse(text) as { result?: { request_id?: string; chain_hash?: string } }).result;
      if (result?.chain_hash) chainHashOf.set(result.request_id, result.chain_hash);
    }
    for (const [method, [name, required]] of Object.entries(SPANS)) {
      const span = steps.find((s) => s.attributes['acs.method'] === method);
      expect(span, method).toBeDefined();
      expect(span!.name).toBe(name);
      for (const attr of required) expect(span!.attributes[attr], `${method} ${attr}`).toBeDefined();
      const decision = span!.events.find((e) => e.name === 'acs.decision');
      expect(decision?.attributes['acs.decision'], method).toBe('allow');
      expect(decision?.attributes['acs.evaluator']).toBe('deterministic');
      expect(decision?.attributes['acs.reasoning']).toBe('fixture allows');
      expect(decision?.attributes['acs.evaluator_version']).toMatch(/^acs-guardian\//);
      const chainHash = chainHashOf.get(span!.attributes['acs.request.id']);
      expect(chainHash, method).toMatch(/^[0-9a-f]{64}$/);
      expect(decision?.attributes['acs.chain_hash'], method).toBe(chainHash);
    }
    const tool = steps.find((s) => s.attributes['acs.method'] === 'steps/toolCallRequest')!;
    expect(tool.attributes['gen_ai.tool.name']).toBe('Bash');
  });

  it('without a traceparent the session is one tree: session span, turn span, each of the 19 hooks under its turn or session', () => {
    const steps = otlp.spans.filter((s) => s.attributes['acs.session.id'] === sessionId && s.traceId !== traceId);
    const first = (method: string) => steps.find((s) => s.attributes['acs.method'] === method)!;
    const session = first('steps/sessionStart');
    const turn = first('steps/turnStart');
    // One trace for the whole session; its root is the acs.session span.
    expect(new Set(steps.map((s) => s.traceId)).size).toBe(1);
    expect(steps.filter((s) => !s.parentSpanId).map((s) => s.name)).toEqual(['acs.session']);
    expect(turn.parentSpanId).toBe(session.spanId);
    for (const method of Object.keys(SPANS)) {
      if (method === 'steps/sessionStart' || method === 'steps/turnStart') continue;
      const parent = IN_TURN.has(method) ? turn : session;
      expect(first(method).parentSpanId, method).toBe(parent.spanId);
    }
    // Steps outside a turn, the handshake and the later tool calls hang under the session span.
    expect(otlp.spans.find((s) => s.name === 'acs.handshake')?.parentSpanId).toBe(session.spanId);
    const later = steps.filter((s) => s.name === 'gen_ai.tool.call' && s !== first('steps/toolCallRequest'));
    expect(later.length).toBe(5);
    for (const s of later) expect(s.parentSpanId).toBe(session.spanId);
  });

  it('each step span has a child span per pipeline stage', () => {
    const tool = otlp.spans.find(
      (s) => s.attributes['acs.session.id'] === sessionId && s.attributes['acs.method'] === 'steps/toolCallResult',
    )!;
    const children = otlp.spans.filter((s) => s.parentSpanId === tool.spanId).map((s) => s.name);
    expect(children).toEqual(STAGES.map((st) => `acs.pipeline.${st}`));
    const hs = otlp.spans.find((s) => s.name === 'acs.handshake')!;
    expect(otlp.spans.filter((s) => s.parentSpanId === hs.spanId).map((s) => s.name)).toEqual([
      'acs.pipeline.validate',
      'acs.pipeline.authenticate',
      'acs.pipeline.handshake',
    ]);
  });

  it('a W3C traceparent makes the step span a child of the caller span; provenance facts are span attributes', () => {
    const span = otlp.spans.find((s) => s.traceId === traceId && s.name === 'acs.message.user');
    expect(span?.parentSpanId).toBe(parentSpanId);
    expect(span?.attributes['acs.provenance.origin']).toBe('user_input');
    expect(span?.attributes['acs.provenance.source_id']).toBe('user-7');
    expect(span?.attributes['acs.provenance.lineage_depth']).toBe(0);
  });

  it('a traceparent with the sampled flag off: the step is answered, and no span of it is exported', () => {
    expect(otlp.spans.length).toBeGreaterThan(0);
    expect(otlp.spans.filter((s) => s.traceId === unsampledTraceId)).toEqual([]);
  });

  it('non-allow decisions carry their disposition and reason codes on the decision event', () => {
    const tools = otlp.spans.filter(
      (s) => s.attributes['acs.session.id'] === sessionId && s.name === 'gen_ai.tool.call',
    );
    const seen = tools.map((s) => s.events.find((e) => e.name === 'acs.decision')?.attributes['acs.decision']);
    for (const d of ['allow', 'deny', 'modify', 'ask', 'defer']) expect(seen).toContain(d);
    const deny = tools.find((s) => s.events[0]?.attributes['acs.reasoning'] === 'rm is not allowed here')!;
    expect(deny.events[0].attributes['acs.reason_codes']).toEqual(['tool_blocked']);
  });

  it('OCSF: one event per step in its mapped class, valid against the test schema; the collector got batches after a 503', () => {
    expect(siem.headers.every((h) => h.authorization === `Bearer ${SECRETS.siemToken}`)).toBe(true);
    expect(siem.bodies.length).toBeGreaterThan(siem.batches); // the first POST was refused (503) and retried
    for (const event of siem.events) expect(validateOcsf(event) ? null : validateOcsf.errors).toBeNull();
    const ofSession = siem.events.filter(
      (e) => (e.unmapped as { acs: { session_id: string } }).acs.session_id === sessionId,
    );
    for (const [method, [uid, activity]] of Object.entries(CLASSES)) {
      const e = ofSession.find((x) => (x.unmapped as { acs: { step: { method: string } } }).acs.step.method === method);
      expect(e?.class_uid, method).toBe(uid);
      if (activity !== undefined) expect(e?.activity_id, method).toBe(activity);
      expect(e?.type_uid).toBe(uid * 100 + (e?.activity_id as number));
    }
    const withProvenance = ofSession.find((e) => Array.isArray(e.enrichments));
    expect(withProvenance?.enrichments).toContainEqual(
      expect.objectContaining({ name: 'acs_provenance_origin', value: 'user_input' }),
    );
    expect(withProvenance?.enrichments).toContainEqual(
      expect.objectContaining({ name: 'acs_provenance_source_id', value: 'user-7' }),
    );
  });

  it('OCSF: a Detection Finding (2004) for every deny/modify/ask/defer, with the mapped severity and its evidence', async () => {
    const findings = siem.events.filter((e) => e.class_uid === 2004);
    const byDecision = new Map(findings.map((f) => [(f.unmapped as { acs: { decision: string } }).acs.decision, f]));
    for (const d of ['deny', 'modify', 'ask', 'defer']) {
      const f = byDecision.get(d);
      expect(f, d).toBeDefined();
      expect(f!.severity_id).toBe(SEVERITY[d]);
      expect((f!.finding_info as { uid: string }).uid).toMatch(new RegExp(`^${sessionId}/`));
      expect(f!.evidences).toHaveLength(1);
    }
    // Allowed steps are findings-free; their class event has severity 1.
    expect(findings.length).toBe(5); // 4 dispositions + the failed evaluation (deny)
    // The file sink writes asynchronously (never blocking a decision): wait for it to catch up with the collector.
    const readFile = () =>
      readFileSync(join(dir, 'ocsf.jsonl'), 'utf8')
        .trim()
        .split('\n')
        .map((l) => JSON.parse(l) as object);
    await vi.waitFor(() => expect(readFile().length).toBe(siem.events.length), { timeout: 5000 });
    const file = readFile();
    for (const event of file) expect(validateOcsf(event) ? null : validateOcsf.errors).toBeNull();
  });

  it('/metrics wants the token, then serves decisions by disposition, stage histograms, queue depth, the policy revision', async () => {
    // A method no Guardian knows: answered with an error, counted under `other` (no client-chosen label values).
    const bogus = await fetch(g.server.url, {
      method: 'POST',
      body: JSON.stringify({
        jsonrpc: '2.0',
        id: 9,
        method: 'steps/madeUpMethod',
        params: {
          acs_version: '0.1.0',
          request_id: '6f1c1e3a-2f4e-4c55-9a51-7f1f7c7c2b10',
          timestamp: new Date().toISOString(),
          metadata: { agent_id: 'a', session_id: sessionId },
          payload: {},
        },
      }),
    });
    const bogusAnswer = (await bogus.json()) as { error?: { code: number } };
    expectValidAnswer(bogusAnswer);
    expect(bogusAnswer.error?.code).toBeLessThan(0);
    const url = g.server.url.replace('/acs', '/metrics');
    expect((await fetch(url)).status).toBe(401);
    expect((await fetch(url, { headers: { authorization: 'Bearer wrong' } })).status).toBe(401);
    const res = await fetch(url, { headers: { authorization: `Bearer ${SECRETS.metricsToken}` } });
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/^text\/plain; version=0\.0\.4/);
    const text = await res.text();
    const m = parsePrometheus(text);
    expect(m.get('acs_guardian_decisions_total{disposition="deny",method="steps/toolCallRequest"}')).toBe(2);
    expect(m.get('acs_guardian_decisions_total{disposition="ask",method="steps/toolCallRequest"}')).toBe(1);
    expect(m.get('acs_guardian_reason_codes_total{reason_code="tool_blocked"}')).toBe(1);
    expect(m.get('acs_guardian_reason_codes_total{reason_code="evaluation_failed"}')).toBe(1);
    for (const stage of [...STAGES, 'handshake'])
      expect(m.get(`acs_guardian_stage_duration_seconds_count{stage="${stage}"}`), stage).toBeGreaterThan(0);
    expect(m.get('acs_guardian_request_duration_seconds_count{method="steps/toolCallRequest"}')).toBe(6);
    expect(m.get('acs_guardian_policy_info{revision="rev-telemetry"}')).toBe(1);
    expect(m.has('acs_guardian_telemetry_queue_depth{exporter="ocsf_http"}')).toBe(true);
    expect(m.has('process_cpu_user_seconds_total')).toBe(true);
    expect(m.get(`acs_guardian_errors_total{code="${bogusAnswer.error?.code}",method="other"}`)).toBe(1);
    expect(text).not.toContain('madeUpMethod');
    g.wire.push(text);
  });

  it('logs are JSON lines; an audited failure carries request and session ids; no secret appears in logs, spans, events or metrics', async () => {
    const lines = g.logs.map((l) => JSON.parse(l) as Record<string, unknown>);
    expect(lines.length).toBeGreaterThan(0);
    const audit = lines.find((l) => (l.audit as { code?: string } | undefined)?.code === 'evaluation_failed');
    expect(audit?.session_id).toBe(sessionId);
    expect(audit?.request_id).toEqual(expect.any(String));
    expect(audit?.level).toBe('warn');
    // A caller that logs key material by mistake gets it censored.
    g.runtime.logger.info(
      { ikm: Buffer.from(TEST_IKM).toString('base64'), nested: { token: SECRETS.adminToken } },
      'oops',
    );
    const signatures = g.wire.flatMap((w) => [...w.matchAll(/"value":"([A-Za-z0-9+/=_-]{40,})"/g)].map((m) => m[1]));
    expect(signatures.length).toBeGreaterThan(10);
    const metrics = await (
      await fetch(g.server.url.replace('/acs', '/metrics'), {
        headers: { authorization: `Bearer ${SECRETS.metricsToken}` },
      })
    ).text();
    const haystacks = {
      logs: g.logs.join('\n'),
      spans: otlp.bodies.join('\n'),
      events: siem.bodies.join('\n') + readFileSync(join(dir, 'ocsf.jsonl'), 'utf8'),
      metrics,
    };
    // The session's HMAC key (HKDF of the IKM, docs/keys.md) is key material too.
    const sessionKey = Buffer.from(deriveSessionKey(TEST_IKM, sessionId));
    const needles = {
      ikm_base64: Buffer.from(TEST_IKM).toString('base64'),
      ikm_hex: Buffer.from(TEST_IKM).toString('hex'),
      session_key_base64: sessionKey.toString('base64'),
      session_key_hex: sessionKey.toString('hex'),
      ...SECRETS,
      ...Object.fromEntries(signatures.map((s, i) => [`signature_${i}`, s])),
    };
    for (const [where, text] of Object.entries(haystacks))
      for (const [what, secret] of Object.entries(needles))
        expect(text.includes(secret), `${what} in ${where}`).toBe(false);
  });
});

describe('telemetry never blocks enforcement', () => {
  it('a collector and an OTLP endpoint that never answer: decisions keep coming, valid and unchanged; drops are counted and warned', async () => {
    const otlp = await startOtlpReceiver({ hang: true });
    const siem = await startSiemCollector({ hang: true });
    const g = await startGuardian({
      OTEL_EXPORTER_OTLP_ENDPOINT: otlp.url,
      OTEL_BSP_SCHEDULE_DELAY: '10',
      OTEL_BSP_MAX_QUEUE_SIZE: '8',
      // Also the steps waiting for the batch processor's queue (docs/telemetry.md): small, so they overflow.
      GUARDIAN_TELEMETRY_QUEUE_SIZE: '16',
      GUARDIAN_TELEMETRY_SHUTDOWN_MS: '1500',
      OTEL_EXPORTER_OTLP_TIMEOUT: '60000',
      GUARDIAN_OCSF_HTTP_URL: siem.url,
      GUARDIAN_OCSF_HTTP_TIMEOUT_MS: '60000',
      GUARDIAN_OCSF_QUEUE_SIZE: '8',
      GUARDIAN_OCSF_BATCH_SIZE: '4',
      GUARDIAN_OCSF_FLUSH_MS: '5',
    });
    const baseline = await startGuardian({ GUARDIAN_METRICS: 'off' });
    try {
      const run = async (r: Running): Promise<{ decisions: string[]; ms: number }> => {
        const c = r.client();
        await c.hello({ methods_implemented: ALL_STEPS });
        const started = performance.now();
        const decisions: string[] = [];
        for (let i = 0; i < 120; i++) {
          const d = ['deny', 'modify', 'ask', 'defer'][i % 4];
          const out = await c.step('steps/toolCallRequest', { ...TOOL, ...(i % 5 === 0 ? {} : { want: WANTS[d] }) });
          expect(out.failure).toBeUndefined();
          decisions.push(out.decision!);
        }
        return { decisions, ms: performance.now() - started };
      };
      const off = await run(baseline);
      const hung = await run(g);
      expect(hung.decisions).toEqual(off.decisions);
      // Were emission on the request path, the first step would already wait out the 60 s sink timeout.
      expect(hung.ms).toBeLessThan(20_000);
      const metrics = parsePrometheus(await (await g.runtime.telemetry.metrics())!.render());
      expect(metrics.get('acs_guardian_telemetry_dropped_total{exporter="ocsf_http"}')).toBeGreaterThan(0);
      expect(metrics.get('acs_guardian_telemetry_dropped_total{exporter="otlp"}')).toBeGreaterThan(0);
      await eventually(() => g.logs.some((l) => l.includes('"level":"warn"') && l.includes('telemetry dropped')));
      // Shutdown waits out its deadline, not the exports' 60 s, and counts every span it could not deliver once:
      // the handshake's four and seven per step, none answered by this collector.
      const started = performance.now();
      await g.runtime.telemetry.close();
      expect(performance.now() - started).toBeLessThan(1500 + 1000);
      const after = parsePrometheus(await (await g.runtime.telemetry.metrics())!.render());
      expect(after.get('acs_guardian_telemetry_dropped_total{exporter="otlp"}')).toBe(4 + 120 * 7);
      expect(after.get('acs_guardian_telemetry_dropped_total{exporter="ocsf_http"}')).toBeGreaterThan(
        metrics.get('acs_guardian_telemetry_dropped_total{exporter="ocsf_http"}')!,
      );
      expect(g.logs.some((l) => l.includes('not exported before the shutdown deadline'))).toBe(true);
    } finally {
      await otlp.close();
      await siem.close();
      await baseline.close();
      await g.close();
    }
  });
});

/** Request and answer pairs of a session run through the HTTP server: what the pipeline observes. */
async function realExchanges(g: Running): Promise<[AcsRequest, ResponseEnvelope][]> {
  const c = g.client();
  await c.hello({ methods_implemented: ALL_STEPS });
  for (const method of ['steps/userMessage', 'steps/toolCallRequest', 'steps/toolCallResult'])
    expect((await c.step(method, STEP_PAYLOADS[method])).failure).toBeUndefined();
  const exchanges: [AcsRequest, ResponseEnvelope][] = [];
  for (let i = 2; i < g.wire.length; i += 2)
    exchanges.push([JSON.parse(g.wire[i]) as AcsRequest, JSON.parse(g.wire[i + 1]) as ResponseEnvelope]);
  return exchanges;
}

/**
 * Hands `n` step observations to the Guardian's telemetry as the pipeline does (src/acs/pipeline): begin, a mark
 * per stage, the request, end with the answer; each a new request id. `perSecond` paces them by the clock, each
 * timer turn handing over what is due; Infinity hands them all over in one turn.
 */
async function handOver(
  g: Running,
  exchanges: [AcsRequest, ResponseEnvelope][],
  n: number,
  perSecond: number,
): Promise<void> {
  const telemetry = g.runtime.telemetry;
  const t0 = performance.now();
  for (let i = 0; i < n; ) {
    const due = Math.min(n, Math.max(i + 1, Math.floor(((performance.now() - t0) * perSecond) / 1000)));
    for (; i < due; i++) {
      const [request, envelope] = exchanges[i % exchanges.length];
      const obs = telemetry.begin('http');
      obs.request = { ...request, params: { ...request.params, request_id: `burst-${i}` } };
      for (const stage of STAGES) obs.stage(stage as PipelineStage);
      telemetry.end(obs, envelope);
    }
    if (i < n) await new Promise((r) => setTimeout(r, 5));
  }
}

describe('a graceful shutdown under load exports everything to a healthy collector', () => {
  // Paced: about 3000 decisions/s (a benchmark's load that lost spans), then close(). At once: the whole burst in
  // one turn, then close() before the backlog was drained, so close() hands the exporters all of it.
  it.each([
    ['paced at 3000/s', 3000],
    ['all at once', Number.POSITIVE_INFINITY],
  ])(
    '%s: 3000 step observations, then close(): every span arrives, none is counted as dropped',
    async (_, perSecond) => {
      const otlp = await startOtlpReceiver();
      // Default batch processor settings (queue 2048 spans, batches of 512, 1 s delay), as a Guardian runs them. The
      // shutdown deadline is not what this test is about: this receiver decodes every span on the test's own event
      // loop, which on a busy machine takes seconds for 21000 of them (close() takes 0.1-2.5 s here).
      const g = await startGuardian({ OTEL_EXPORTER_OTLP_ENDPOINT: otlp.url, GUARDIAN_TELEMETRY_SHUTDOWN_MS: '30000' });
      try {
        const exchanges = await realExchanges(g);
        // The hello's span and its three stage spans, then each step's span and six stage spans.
        await eventually(() => otlp.spans.length >= 4 + 3 * 7, 20_000);
        const before = otlp.spans.length;
        const N = 3000;
        await handOver(g, exchanges, N, perSecond);
        const telemetry = g.runtime.telemetry;
        const started = performance.now();
        await telemetry.close();
        const closeMs = performance.now() - started;

        const metrics = parsePrometheus(await (await telemetry.metrics())!.render());
        const received = otlp.spans.length - before;
        const dropped = metrics.get('acs_guardian_telemetry_dropped_total{exporter="otlp"}') ?? 0;
        expect({ received, dropped }, `close took ${Math.round(closeMs)} ms`).toEqual({
          received: N * (1 + STAGES.length),
          dropped: 0,
        });
        expect(new Set(otlp.spans.slice(before).map((sp) => sp.spanId)).size).toBe(received);
        expect(metrics.get('acs_guardian_telemetry_dropped_total{exporter="pipeline"}') ?? 0).toBe(0);
      } finally {
        await g.close();
        await otlp.close();
      }
    },
    60_000,
  );

  it('OCSF: the backlog handed over at close() is written whole, past the sink queue it would overflow', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'acs-ocsf-close-'));
    const file = join(dir, 'ocsf.jsonl');
    const g = await startGuardian({ GUARDIAN_OCSF_FILE: file, GUARDIAN_OCSF_QUEUE_SIZE: '16' });
    try {
      const exchanges = await realExchanges(g);
      await handOver(g, exchanges, 500, Number.POSITIVE_INFINITY);
      const telemetry = g.runtime.telemetry;
      await telemetry.close();
      const metrics = parsePrometheus(await (await telemetry.metrics())!.render());
      const ids = readFileSync(file, 'utf8')
        .trim()
        .split('\n')
        .map((l) => (JSON.parse(l) as { unmapped: { acs: { step: { id: string } } } }).unmapped.acs.step.id)
        .filter((id) => id.startsWith('burst-'));
      expect(new Set(ids).size).toBe(500);
      expect(metrics.get('acs_guardian_telemetry_dropped_total{exporter="ocsf_file"}') ?? 0).toBe(0);
      expect(metrics.get('acs_guardian_telemetry_dropped_total{exporter="pipeline"}') ?? 0).toBe(0);
      // An answer observed once close() has begun is no longer exported: counted, not lost unsaid.
      await handOver(g, exchanges, 2, Number.POSITIVE_INFINITY);
      const later = parsePrometheus(await (await telemetry.metrics())!.render());
      expect(later.get('acs_guardian_telemetry_dropped_total{exporter="pipeline"}')).toBe(2);
      await eventually(() => g.logs.some((l) => l.includes('"reason":"telemetry closed"')));
    } finally {
      await g.close();
      rmSync(dir, { recursive: true, force: true });
    }
  }, 60_000);
});

/** What close-telemetry.mjs printed, and how its process ended. */
interface ClosedInChild {
  /** The exit code, or null when the process had to be killed (it did not exit by itself). */
  status: number | null;
  stderr: string;
  /** Lines on stdout other than the report (OCSF events with GUARDIAN_OCSF_STDOUT=1). */
  stdout: string[];
  handed: number;
  closeMs: number;
  before: Map<string, number>;
  after: Map<string, number>;
  logs: Record<string, unknown>[];
}

const CLOSE_TELEMETRY = fileURLToPath(new URL('./fixtures/close-telemetry.mjs', import.meta.url));

/**
 * Runs test/telemetry/fixtures/close-telemetry.mjs in a process of its own, under plain node on dist/ (built by the
 * test setup), with `plan`; killed if it has not exited after `ms`. Asynchronous, so this process's receivers keep
 * taking connections meanwhile.
 */
async function closeInChild(
  plan: { env: Record<string, string>; exchanges: [AcsRequest, ResponseEnvelope][]; steps: object[] },
  nodeOptions: string[] = [],
  ms = 90_000,
): Promise<ClosedInChild> {
  const dir = mkdtempSync(join(tmpdir(), 'acs-close-plan-'));
  const file = join(dir, 'plan.json');
  writeFileSync(file, JSON.stringify({ ...plan, stages: STAGES }));
  const env: NodeJS.ProcessEnv = { ...process.env };
  delete env.NODE_OPTIONS;
  try {
    const child = spawn(process.execPath, [...nodeOptions, CLOSE_TELEMETRY, file], { env, stdio: 'pipe' });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (c: Buffer) => (stdout += c.toString('utf8')));
    child.stderr.on('data', (c: Buffer) => (stderr += c.toString('utf8')));
    const timer = setTimeout(() => child.kill('SIGKILL'), ms);
    const status = await new Promise<number | null>((resolve) => child.once('close', (code) => resolve(code)));
    clearTimeout(timer);
    const lines = stdout.split('\n').filter((l) => l !== '');
    const at = lines.findIndex((l) => l.startsWith('{"handed":'));
    const report = (at >= 0 ? JSON.parse(lines.splice(at, 1)[0]) : {}) as {
      handed?: number;
      closeMs?: number;
      before?: string;
      after?: string;
      logs?: string[];
    };
    return {
      status,
      stderr,
      stdout: lines,
      handed: report.handed ?? 0,
      closeMs: report.closeMs ?? Number.NaN,
      before: parsePrometheus(report.before ?? ''),
      after: parsePrometheus(report.after ?? ''),
      logs: (report.logs ?? []).map((l) => JSON.parse(l) as Record<string, unknown>),
    };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** acs_guardian_telemetry_dropped_total per exporter. */
const droppedOf = (m: Map<string, number>): Record<string, number> =>
  Object.fromEntries(
    [...m]
      .map(([k, v]) => [/^acs_guardian_telemetry_dropped_total\{exporter="([^"]+)"\}$/.exec(k)?.[1], v] as const)
      .filter(([exporter]) => exporter !== undefined),
  );

/** What the drop warnings said per exporter, summed: every count in the metric is said once, and only once. */
function warnedOf(logs: Record<string, unknown>[]): Record<string, number> {
  const warned: Record<string, number> = {};
  for (const l of logs)
    if (l.level === 'warn' && typeof l.exporter === 'string' && typeof l.dropped === 'number')
      warned[l.exporter] = (warned[l.exporter] ?? 0) + l.dropped;
  return warned;
}

const messagesOf = (logs: Record<string, unknown>[], text: string): number =>
  logs.filter((l) => typeof l.msg === 'string' && l.msg.includes(text)).length;

describe('the export thread in a process of its own (close-telemetry.mjs, on dist/): at its limits, and on stdout', () => {
  /** Real answers of a Guardian with telemetry off: three allowed steps, then a deny with a long reasoning. */
  let exchanges: [AcsRequest, ResponseEnvelope][] = [];
  const ALLOWED = [0, 1, 2];
  const DENY = 3;

  beforeAll(async () => {
    const g = await startGuardian({ GUARDIAN_METRICS: 'off' });
    try {
      exchanges = await realExchanges(g);
      // An evaluator's reasoning can run long (a model's explanation): 64 KiB, carried by the Detection Finding.
      const c = g.client();
      await c.hello({ methods_implemented: ALL_STEPS });
      const reasoning = 'the command reaches outside the workspace; '.repeat(1600);
      const deny = { decision: 'deny', reasoning, reason_codes: ['tool_blocked'] };
      expect((await c.step('steps/toolCallRequest', { ...TOOL, want: deny })).decision).toBe('deny');
      const at = g.wire.length - 2;
      exchanges.push([JSON.parse(g.wire[at]) as AcsRequest, JSON.parse(g.wire[at + 1]) as ResponseEnvelope]);
    } finally {
      await g.close();
    }
    expect(exchanges.map(([r]) => r.method)).toEqual([
      'steps/userMessage',
      'steps/toolCallRequest',
      'steps/toolCallResult',
      'steps/toolCallRequest',
    ]);
  });

  it('a thread still busy when the shutdown deadline passes is stopped: close() returns, the process exits, and each item it held or was handed is counted once', async () => {
    // A deadline far shorter than the thread needs to take 4000 records: it is still reading them when the deadline
    // passes, and answers nothing. Before, it holds the first steps: their spans sent to a collector that never
    // answers, their OCSF events waiting for a batch to fill.
    const otlp = await startOtlpReceiver({ hang: true });
    const dir = mkdtempSync(join(tmpdir(), 'acs-close-busy-'));
    const file = join(dir, 'ocsf.jsonl');
    const N = 4000;
    try {
      const run = await closeInChild({
        env: {
          OTEL_EXPORTER_OTLP_ENDPOINT: otlp.url,
          OTEL_EXPORTER_OTLP_TIMEOUT: '600000',
          OTEL_BSP_SCHEDULE_DELAY: '10',
          GUARDIAN_OCSF_FILE: file,
          GUARDIAN_OCSF_BATCH_SIZE: '100000',
          GUARDIAN_OCSF_FLUSH_MS: '600000',
          GUARDIAN_TELEMETRY_SHUTDOWN_MS: '20',
        },
        exchanges,
        steps: [{ hand: ALLOWED.length, exchanges: ALLOWED }, { settle: true }, { hand: N, exchanges: ALLOWED }],
      });
      expect(run.status, run.stderr).toBe(0);
      expect(run.handed).toBe(ALLOWED.length + N);
      // What the thread said it held when close() began: each first step's span and stage spans, its OCSF event.
      const spans = run.before.get('acs_guardian_telemetry_queue_depth{exporter="otlp"}');
      const events = run.before.get('acs_guardian_telemetry_queue_depth{exporter="ocsf_file"}');
      expect(spans).toBe(ALLOWED.length * (1 + STAGES.length));
      expect(events).toBe(ALLOWED.length);
      // Nothing was exported, and every item accepted is counted as dropped, once.
      expect(existsSync(file)).toBe(false);
      expect(droppedOf(run.after)).toEqual({ otlp: spans, ocsf_file: events, pipeline: N });
      expect(warnedOf(run.logs)).toEqual(droppedOf(run.after));
      for (const l of run.logs.filter((l) => typeof l.exporter === 'string'))
        expect(l.reason).toBe('export thread stopped at the shutdown deadline');
      expect(messagesOf(run.logs, 'exporters did not finish before the shutdown deadline')).toBe(1);
      // Stopping it fails its shutdown request: that is the deadline's doing, not a second failure to report.
      expect(messagesOf(run.logs, 'the last export failed')).toBe(0);
      for (const exporter of ['otlp', 'ocsf_file', 'pipeline'])
        expect(run.after.get(`acs_guardian_telemetry_queue_depth{exporter="${exporter}"}`), exporter).toBe(0);
      // Bounded by the deadline, with room for a busy machine (the thread would have needed far longer).
      expect(run.closeMs).toBeLessThan(5000);
    } finally {
      await otlp.close();
      rmSync(dir, { recursive: true, force: true });
    }
  }, 120_000);

  it('a thread that runs out of heap dies, is started again three times, then given up: what each held, and what close() is left with, is counted once', async () => {
    // A SIEM collector that never answers and a queue bound far above what the heap holds: the thread keeps every
    // event (each deny a class event and a Detection Finding carrying the 64 KiB reasoning) until its heap is
    // full, and Node stops it (ERR_WORKER_OUT_OF_MEMORY). The process's heap bound is the thread's.
    const siem = await startSiemCollector({ hang: true });
    const M = 50;
    try {
      const run = await closeInChild(
        {
          env: {
            GUARDIAN_OCSF_HTTP_URL: siem.url,
            GUARDIAN_OCSF_HTTP_TIMEOUT_MS: '600000',
            GUARDIAN_OCSF_QUEUE_SIZE: '1000000',
            GUARDIAN_OCSF_FLUSH_MS: '5',
            GUARDIAN_TELEMETRY_SHUTDOWN_MS: '2000',
          },
          exchanges,
          steps: [
            { handUntil: 'export thread given up', exchanges: [DENY], slice: 100 },
            // The thread is gone: these wait in the backlog and go to close(), which has no thread to hand them to.
            { hand: M, exchanges: [DENY] },
          ],
        },
        ['--max-old-space-size=48'],
      );
      expect(run.status, run.stderr).toBe(0);
      const died = run.logs.filter((l) => l.msg === 'telemetry: the export thread died');
      expect(died).toHaveLength(4);
      for (const l of died) expect(l.err).toMatch(/memory limit/);
      expect(messagesOf(run.logs, 'export thread given up')).toBe(1);
      // Nothing reached the collector's answer, so every step handed over is lost, and counted once: as the records
      // it was (the backlog, batches a thread had not answered) or as the OCSF events a thread held.
      const dropped = droppedOf(run.after);
      expect(Object.keys(dropped).sort()).toEqual(['ocsf_http', 'pipeline']);
      expect(dropped.pipeline + dropped.ocsf_http / 2).toBe(run.handed);
      expect(dropped.ocsf_http).toBeGreaterThan(0);
      expect(dropped.pipeline).toBeGreaterThanOrEqual(M);
      expect(warnedOf(run.logs)).toEqual(dropped);
      const last = run.logs.filter((l) => l.exporter === 'pipeline').pop();
      expect(last?.reason).toBe('telemetry export thread unavailable');
      expect(run.after.get('acs_guardian_telemetry_queue_depth{exporter="ocsf_http"}')).toBe(0);
      expect(run.closeMs).toBeLessThan(5000);
    } finally {
      await siem.close();
    }
  }, 120_000);

  it('OCSF on stdout (GUARDIAN_OCSF_STDOUT=1): the export thread writes one JSON line per event to the process stdout', async () => {
    const run = await closeInChild({
      env: { GUARDIAN_OCSF_STDOUT: '1', GUARDIAN_OCSF_FLUSH_MS: '5' },
      exchanges,
      steps: [{ hand: ALLOWED.length, exchanges: ALLOWED }, { settle: true }, { hand: 1, exchanges: [DENY] }],
    });
    expect(run.status, run.stderr).toBe(0);
    const events = run.stdout.map((l) => JSON.parse(l) as Record<string, unknown>);
    for (const event of events) expect(validateOcsf(event) ? null : validateOcsf.errors).toBeNull();
    const ids = events.map((e) => (e.unmapped as { acs: { step: { id: string } } }).acs.step.id);
    // Each allowed step its class event; the deny (handed over at close) its class event and a Detection Finding.
    expect(ids.sort()).toEqual(['close-0', 'close-1', 'close-2', 'close-3', 'close-3']);
    expect(events.filter((e) => e.class_uid === 2004)).toHaveLength(1);
    expect(droppedOf(run.after)).toEqual({});
  }, 60_000);

  it('an OCSF file that is a named pipe no one reads: each batch fails at once (ENXIO) and is counted; close() returns, the process exits', async () => {
    // A blocking open of the pipe would wait for a reader in a libuv thread: the export thread would answer at its
    // deadline, but could not be stopped, close() would not return and the process could not exit.
    const dir = mkdtempSync(join(tmpdir(), 'acs-close-pipe-'));
    const pipe = join(dir, 'ocsf.pipe');
    execFileSync('mkfifo', [pipe]);
    const N = 100;
    try {
      const run = await closeInChild(
        {
          env: { GUARDIAN_OCSF_FILE: pipe, GUARDIAN_OCSF_FLUSH_MS: '5', GUARDIAN_TELEMETRY_SHUTDOWN_MS: '2000' },
          exchanges,
          steps: [{ hand: ALLOWED.length, exchanges: ALLOWED }, { settle: true }, { hand: N, exchanges: ALLOWED }],
        },
        [],
        30_000,
      );
      expect(run.status, run.stderr).toBe(0);
      // One class event per allowed step, none written.
      expect(droppedOf(run.after)).toEqual({ ocsf_file: ALLOWED.length + N });
      expect(warnedOf(run.logs)).toEqual(droppedOf(run.after));
      for (const l of run.logs.filter((l) => l.exporter === 'ocsf_file')) expect(l.reason).toMatch(/^ENXIO/);
      expect(messagesOf(run.logs, 'shutdown deadline')).toBe(0);
      expect(run.closeMs).toBeLessThan(2000);
      expect(lstatSync(pipe).isFIFO()).toBe(true);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }, 60_000);
});
