// `guardian serve` policy sources: bundles/acs.tar.gz when present, else rego/ compiled at start by our Rego→Wasm
// toolchain; neither → a precise start-up error.
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { loadPolicyEngine } from '../../src/server/app.ts';

const dir = mkdtempSync(join(tmpdir(), 'acs-policy-src-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
const input = {
  method: 'steps/userMessage',
  params: {},
  session: {},
  client: { modify_capable: true, ask_capable: true },
  guardian: { now: '2026-01-01T00:00:00Z', policy_version: 'x' },
};

describe('loadPolicyEngine', () => {
  it('without a bundle, compiles rego/ (tests excluded) at start and evaluates acs/decision', async () => {
    mkdirSync(join(dir, 'rego', 'acs'), { recursive: true });
    writeFileSync(
      join(dir, 'rego', 'acs', 'tiny.rego'),
      'package acs\n\ndecision := {"decision": "deny", "reasoning": sprintf("tiny policy saw %s", [input.method])}\n',
    );
    writeFileSync(join(dir, 'rego', 'acs', 'tiny_test.rego'), 'package acs_test\n\nthis is not rego\n');
    const { engine, source } = await loadPolicyEngine({ cwd: dir, evaluationTimeoutMs: 5000 });
    expect(source).toMatch(/compiled at start/);
    const out = await engine.evaluate(input);
    expect(out.decision).toEqual({ decision: 'deny', reasoning: 'tiny policy saw steps/userMessage' });
    expect(out.revision).toMatch(/^[0-9a-f]{64}$/);
  });

  it('an explicit --bundle that does not exist, or no policy at all, is a precise error', async () => {
    await expect(loadPolicyEngine({ cwd: dir, bundlePath: 'nope.tar.gz' })).rejects.toThrow(/nope\.tar\.gz not found/);
    const empty = mkdtempSync(join(tmpdir(), 'acs-policy-none-'));
    try {
      await expect(loadPolicyEngine({ cwd: empty })).rejects.toThrow(/no policy: neither/);
    } finally {
      rmSync(empty, { recursive: true, force: true });
    }
  });
});
