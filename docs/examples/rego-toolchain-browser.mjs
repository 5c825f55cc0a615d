// Compiles the policy in the page with acs-guardian/rego (its browser entry) and evaluates it with opa-wasm.
// Bundle: esbuild rego-toolchain-browser.mjs --bundle --platform=browser --format=esm
//   --external:node:module --outfile=rego-toolchain-browser.js
import { compilePolicyWasm, evaluateEntrypoint, hostBuiltins, instantiatePolicy, RegoErrors } from 'acs-guardian/rego';

// The runtime module, served next to the page (src/rego/wasm/runtime/runtime.wasm).
const runtimeWasm = new Uint8Array(await (await fetch('runtime.wasm')).arrayBuffer());
const result = document.getElementById('result');

document.getElementById('evaluate').addEventListener('click', async () => {
  try {
    const text = document.getElementById('policy').value;
    const { wasm } = await compilePolicyWasm({
      sources: [{ file: 'authz.rego', text }],
      entrypoints: ['authz/allow'],
      runtimeWasm,
    });
    const policy = await instantiatePolicy(wasm, hostBuiltins());
    policy.setData({});
    const input = JSON.parse(document.getElementById('input').value);
    result.textContent = JSON.stringify(evaluateEntrypoint(policy, 'authz/allow', input));
  } catch (err) {
    result.textContent = err instanceof RegoErrors ? err.errors.map((e) => e.format()).join('\n') : String(err);
  }
});
document.body.dataset.state = 'ready';
