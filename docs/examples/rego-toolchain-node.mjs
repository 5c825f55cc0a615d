// Compile Rego with acs-guardian/rego, then evaluate it: as an OPA bundle, as a bare Wasm module, and with a
// compile error. Run from the repository: node --import tsx docs/examples/rego-toolchain-node.mjs
import {
  compileBundle,
  compilePolicyWasm,
  evaluateEntrypoint,
  hostBuiltins,
  instantiatePolicy,
  loadBundle,
  RegoErrors,
} from 'acs-guardian/rego';

const sources = [
  {
    file: 'authz.rego',
    text: `package authz

default allow := false

allow if {
  some role in data.roles[input.user]
  role == "admin"
}

allow if {
  regex.match(\`^read:\`, input.action)
  input.user in object.keys(data.roles)
}
`,
  },
];
const data = { roles: { ada: ['admin'], bob: ['viewer'] } };

// 1. Sources → OPA bundle (.tar.gz with /policy.wasm, /data.json, the sources) → loaded policy.
const { bundle, manifest } = await compileBundle({ sources, entrypoints: ['authz/allow'], data, revision: 'v1' });
console.log('bundle revision:', manifest.revision, 'entrypoints:', manifest.wasm.map((w) => w.entrypoint).join());
const loaded = await loadBundle(bundle);
console.log('ada writes:', JSON.stringify(evaluateEntrypoint(loaded, 'authz/allow', { user: 'ada', action: 'write:x' })));
console.log('bob writes:', JSON.stringify(evaluateEntrypoint(loaded, 'authz/allow', { user: 'bob', action: 'write:x' })));

// 2. Sources → bare Wasm module → opa-wasm, with the toolchain's host builtins (regex.match runs on the host).
const { wasm } = await compilePolicyWasm({ sources, entrypoints: ['authz/allow'] });
const policy = await instantiatePolicy(wasm, hostBuiltins());
policy.setData(data);
console.log('bob reads:', JSON.stringify(evaluateEntrypoint(policy, 'authz/allow', { user: 'bob', action: 'read:x' })));

// 3. Errors: parse and compile errors are RegoErrors, each formatted as OPA prints it.
try {
  await compilePolicyWasm({
    sources: [{ file: 'bad.rego', text: 'package bad\n\nx if { y }\n' }],
    entrypoints: ['bad/x'],
  });
} catch (err) {
  if (!(err instanceof RegoErrors)) throw err;
  for (const e of err.errors) console.log(e.format());
}
