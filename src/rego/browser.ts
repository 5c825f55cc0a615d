// Entry for browser bundles (and any other JavaScript host without Node built-ins): the platform-neutral
// toolchain API of ./portable.ts. The page supplies the runtime module bytes (runtime/runtime.wasm) to
// compilePolicyWasm; see docs/rego-toolchain.md.
export * from './portable.ts';
