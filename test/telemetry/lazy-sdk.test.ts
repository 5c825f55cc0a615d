// The OpenTelemetry SDK is loaded only when an exporter is configured: with tracing off, opening telemetry (and
// answering through it) resolves no @opentelemetry module. prom-client is loaded on the first recording or scrape,
// not when telemetry opens, and what was recorded before it loaded is counted. Run on dist/ (built by the test setup) in a child
// process whose resolve hook prints every module it reaches, dynamic imports included.
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { parsePrometheus } from './prometheus-text.ts';

const root = fileURLToPath(new URL('../..', import.meta.url));
const hook = `data:text/javascript,${encodeURIComponent(
  "import { register } from 'node:module'; register('data:text/javascript,' + encodeURIComponent('export async function resolve(s, c, n) { const r = await n(s, c); process.stderr.write(\"resolved \" + r.url + \"\\\\n\"); return r; }'));",
)}`;

/** Runs `code` (an ES module body, cwd the repository) with the resolve hook; its stdout and stderr. */
function runHooked(code: string): { stdout: string; stderr: string } {
  const run = spawnSync(process.execPath, ['--import', hook, '--input-type=module', '-e', code], {
    cwd: root,
    encoding: 'utf8',
    timeout: 120_000,
  });
  expect(run.status, run.stderr).toBe(0);
  return { stdout: run.stdout, stderr: run.stderr };
}

function otelModulesReached(env: Record<string, string>): string[] {
  const code = `const m = await import('./dist/telemetry/index.js');
    const t = await m.openTelemetry({ env: ${JSON.stringify(env)}, logger: m.createLogger({ level: 'silent' }),
      policyRevision: () => 'r', serviceVersion: '0' });
    const o = t.begin('http');
    t.end(o, { jsonrpc: '2.0', id: 1, error: { code: -32600, message: 'x' } });
    await t.close();`;
  return runHooked(code)
    .stderr.split('\n')
    .filter((l) => l.startsWith('resolved ') && l.includes('/node_modules/@opentelemetry/'))
    .map((l) => l.slice('resolved '.length));
}

describe('OpenTelemetry SDK loading', () => {
  it('tracing off: no @opentelemetry module is reached; an OTLP endpoint: the OTLP export delegate is, in either encoding', () => {
    expect(otelModulesReached({})).toEqual([]);
    const endpoint = { OTEL_EXPORTER_OTLP_ENDPOINT: 'http://127.0.0.1:9', GUARDIAN_TELEMETRY_SHUTDOWN_MS: '200' };
    for (const protocol of ['http/protobuf', 'http/json']) {
      const reached = otelModulesReached({ ...endpoint, OTEL_EXPORTER_OTLP_PROTOCOL: protocol });
      expect(
        reached.some((u) => u.includes('/otlp-exporter-base/')),
        protocol,
      ).toBe(true);
      // Spans are encoded from the step records: the SDK's tracer is never loaded (docs/telemetry.md "Spans").
      expect(
        reached.some((u) => u.includes('/sdk-trace-base/')),
        protocol,
      ).toBe(false);
    }
  }, 240_000);

  it('prom-client: not reached when telemetry opens; loaded on the first recording, which still counts', () => {
    const { stdout, stderr } = runHooked(`const m = await import('./dist/telemetry/index.js');
      const t = await m.openTelemetry({ env: {}, logger: m.createLogger({ level: 'silent' }),
        policyRevision: () => 'r', serviceVersion: '0' });
      process.stderr.write('opened\\n');
      for (let i = 0; i < 3; i++) t.end(t.begin('http'), { jsonrpc: '2.0', id: i, error: { code: -32600, message: 'x' } });
      t.recordCommit('step', 4, 0.002);
      t.recordReplayJob('running');
      process.stdout.write(await (await t.metrics()).render());
      await t.close();`);
    const lines = stderr.split('\n');
    const opened = lines.indexOf('opened');
    const promClient = lines.findIndex((l) => l.startsWith('resolved ') && l.includes('/node_modules/prom-client/'));
    expect(opened).toBeGreaterThan(-1);
    expect(promClient).toBeGreaterThan(opened);
    const m = parsePrometheus(stdout);
    const errors = [...m].filter(([k]) => k.startsWith('acs_guardian_errors_total{')).reduce((n, [, v]) => n + v, 0);
    expect(errors).toBe(3);
    expect(m.get('acs_guardian_store_commit_batch_size_sum{kind="step"}')).toBe(4);
    expect(m.get('acs_guardian_store_commit_batch_size_count{kind="step"}')).toBe(1);
    expect(m.get('acs_guardian_replay_jobs_started_total')).toBe(1);
  }, 240_000);
});
