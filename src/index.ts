// The package's main entry (`acs-guardian`): a Guardian embedded in another Node process — the runtime (store,
// keys, policy engine) and its HTTP and stdio transports, as `guardian serve` wires them. The agent-side SDK is
// `acs-guardian/client`, the Rego toolchain `acs-guardian/rego`.
export * from './server/index.ts';
