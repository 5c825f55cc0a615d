// A replay engine from bundle bytes. Its own module, apart from policy.ts: worker threads load engines with it
// and must not import the Rego compiler (policy.ts compiles directories), which takes seconds to load.
import { createWasmPolicyEngine, type PolicyEngine } from '../policy/index.ts';
import { ReplayError } from './errors.ts';

export async function engineFromBundle(bytes: Uint8Array, timeoutMs: number, revision?: string): Promise<PolicyEngine> {
  try {
    return await createWasmPolicyEngine({ bundle: bytes, timeoutMs, warmupRuns: 1, ...(revision ? { revision } : {}) });
  } catch (err) {
    throw new ReplayError(
      'policy_invalid',
      `policy bundle does not load: ${err instanceof Error ? err.message : String(err)}`,
    );
  }
}
