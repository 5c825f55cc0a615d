// A replay engine from bundle bytes. Its own module, apart from policy.ts: worker threads load engines with it
// and must not import the Rego compiler (policy.ts compiles directories), which takes seconds to load.
import { createWasmPolicyEngine, type PolicyEngine } from '../policy/index.ts';
import { ReplayError } from './errors.ts';

/**
 * `customBuiltinsModule` is the deployment's custom builtins module (an absolute path, as `guardian serve` loads it
 * from --builtins / GUARDIAN_POLICY_BUILTINS; docs/policy-authoring.md): a bundle calling a custom builtin the module
 * does not supply does not load, and the message says where replay takes the module from.
 */
export async function engineFromBundle(
  bytes: Uint8Array,
  timeoutMs: number,
  revision?: string,
  customBuiltinsModule?: string,
): Promise<PolicyEngine> {
  try {
    return await createWasmPolicyEngine({
      bundle: bytes,
      timeoutMs,
      warmupRuns: 1,
      ...(revision ? { revision } : {}),
      ...(customBuiltinsModule ? { customBuiltinsModule } : {}),
    });
  } catch (err) {
    const reason = err instanceof Error ? err.message : String(err);
    const unsupplied = /calls builtins no implementation is loaded for: ([^ ]+(?:, [^ ]+)*)/.exec(reason);
    if (unsupplied)
      throw new ReplayError(
        'policy_invalid',
        `policy bundle does not load: it calls custom builtins ${customBuiltinsModule ? `${customBuiltinsModule} does not supply` : 'and no builtins module is loaded'}: ${unsupplied[1]} (replay takes the deployment's builtins module as serve does: --builtins MODULE or GUARDIAN_POLICY_BUILTINS)`,
      );
    throw new ReplayError('policy_invalid', `policy bundle does not load: ${reason}`);
  }
}
