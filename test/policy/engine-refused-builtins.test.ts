// The Guardian's bundle loading stays closed to builtins it refuses (docs/policy-authoring.md, "Refused builtins"),
// now that the authoring tools compile them: a module importing http.send, bare or in a bundle, is refused at load
// even when the engine's host table (an embedder's factory, or a deployment's builtins module) would supply it.
import { beforeAll, describe, expect, it } from 'vitest';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseSources } from '../../src/rego/index.ts';
import { writeBundle } from '../../src/rego/bundle/index.ts';
import { compileModules } from '../../src/rego/semantic/index.ts';
import { planEntrypoints } from '../../src/rego/planner/index.ts';
import { linkPolicyWasm } from '../../src/rego/wasm/index.ts';
import { createWasmPolicyEngine, PolicyLoadError, projectHostBuiltins } from '../../src/policy/index.ts';

const SOURCE = `package acs

decision := {"decision": "allow", "reasoning": resp.body} if {
	resp := http.send({"method": "get", "url": "http://127.0.0.1:9/verdict"})
}
`;

let wasm: Uint8Array;
let bundle: Uint8Array;

beforeAll(async () => {
  // The authoring tools' compile path: the call becomes an http.send host import.
  const program = compileModules(parseSources([{ file: 'acs.rego', text: SOURCE }]), {
    refusedBuiltins: 'evaluation-error',
  });
  const plan = planEntrypoints(program, ['acs/decision']);
  wasm = await linkPolicyWasm(plan);
  bundle = writeBundle({
    manifest: { revision: 'refused-1', roots: [''], wasm: [{ entrypoint: 'acs/decision', module: '/policy.wasm' }] },
    wasm,
    plan,
    data: {},
    sources: [{ path: 'acs.rego', text: SOURCE }],
  });
}, 120_000);

const REFUSED =
  'policy module calls builtins the Guardian refuses: http.send (network I/O during policy evaluation is not allowed: decisions must be replayable from the audit log)';

describe('engine: modules importing refused builtins', () => {
  it('a bundle carrying one, and the bare module, are refused at load', async () => {
    for (const b of [bundle, wasm]) {
      const err = await createWasmPolicyEngine({ bundle: b, entrypoint: 'acs/decision', warmupRuns: 0 }).catch(
        (e: unknown) => e,
      );
      expect(err).toBeInstanceOf(PolicyLoadError);
      expect((err as Error).message).toBe(REFUSED);
    }
  });

  it('even when the host table supplies an implementation', async () => {
    const err = await createWasmPolicyEngine({
      bundle,
      entrypoint: 'acs/decision',
      warmupRuns: 0,
      hostBuiltins: (clock) => ({ ...projectHostBuiltins(clock), 'http.send': () => ({ body: 'allowed' }) }),
    }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(PolicyLoadError);
    expect((err as Error).message).toBe(REFUSED);
  });

  it('a deployment builtins module naming one does not load', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'refused-builtins-'));
    const file = join(dir, 'builtins.mjs');
    writeFileSync(file, "export default { 'http.send': () => ({ body: 'allowed' }) };\n");
    await expect(
      createWasmPolicyEngine({ bundle, entrypoint: 'acs/decision', customBuiltinsModule: file }),
    ).rejects.toThrow(
      `${file}: custom builtin http.send: the Guardian refuses http.send: network I/O during policy evaluation is not allowed: decisions must be replayable from the audit log`,
    );
  });
});
