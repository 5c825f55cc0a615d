// The front door with the project's real policy: rego/ compiled by our Rego→Wasm toolchain into
// bundles/acs.tar.gz, loaded the way `guardian serve` loads it (loadPolicyEngine).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadPolicyEngine } from '../../src/server/app.ts';
import { startHarness, type Harness } from './fixtures/harness.ts';

const ROOT = new URL('../../', import.meta.url).pathname;
let h: Harness;
let revision: string;
beforeAll(async () => {
  // A generous deadline: this test is about behaviour, and the machine is shared (latency lives in bench/).
  const { engine } = await loadPolicyEngine({ cwd: ROOT, evaluationTimeoutMs: 5000 });
  revision = engine.revision;
  h = await startHarness({ engine });
});
afterAll(async () => {
  await h.close();
});

describe('compiled rego/ bundle behind POST /acs', () => {
  it('denies a destructive shell command with the policy reason code, allows a benign one, cites the bundle revision', async () => {
    const c = h.client();
    await c.hello({ methods_implemented: ['steps/sessionStart', 'steps/toolCallRequest'] });
    expect((await c.step('steps/sessionStart', {})).decision).toBe('allow');
    const rm = await c.step('steps/toolCallRequest', {
      tool: { name: 'shell' },
      arguments: { command: { value: 'rm -rf /' } },
    });
    expect(rm.failure).toBeUndefined();
    expect(rm.result?.reasoning).not.toMatch(/fail closed/);
    expect(rm.decision).toBe('deny');
    expect(rm.result?.reason_codes).toContain('destructive_shell_command_blocked');
    expect(rm.result?.policy_references?.every((r) => r.policy_version === revision)).toBe(true);
    expect(rm.result?.chain_hash).toBe(c.chainHash);
    const ls = await c.step('steps/toolCallRequest', {
      tool: { name: 'shell' },
      arguments: { command: { value: 'ls' } },
    });
    expect(ls.decision).toBe('allow');
  });
});
