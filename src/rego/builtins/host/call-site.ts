// Where a strict host builtin failed, for the host that catches its error (no Wasm toolchain imports here, and
// not under wasm/: the Guardian engine reads it at run time, and runs compiled modules only).

/**
 * Strict modules, and modules linked for the authoring tools (LinkOptions.hostCallSites): an exported mutable i32
 * global holding the address of the NUL-terminated `<file>:<row>` of the host builtin call in progress. A host
 * builtin aborts by throwing from JavaScript, where the call site is unknown; the host reads this global to
 * prefix the message as OPA does (withHostCallSite).
 */
export const HOST_CALL_SITE_GLOBAL = 'guardian_host_call_site';

/** What withHostCallSite needs of a loaded module: opa-wasm's policy object, or the engine's own. */
export interface HostCallSiteSource {
  readonly mem: { readonly buffer: ArrayBufferLike };
  readonly wasmInstance?: unknown;
}

function cstringAt(mem: HostCallSiteSource['mem'], addr: number): string {
  const bytes = new Uint8Array(mem.buffer);
  let end = addr;
  while (end < bytes.length && bytes[end] !== 0) end++;
  return new TextDecoder().decode(bytes.subarray(addr, end));
}

/**
 * A strict host builtin aborts by throwing `<code>: <name>: <message>`; OPA reports builtin errors at their
 * call site (`<file>:<row>: eval_builtin_error: …`, topdown's Location.String), which a strict module of ours
 * (or one linked with hostCallSites) records in HOST_CALL_SITE_GLOBAL before each host call. This puts that site in front of such a message;
 * other messages, and messages from modules without that global (OPA-built ones), are returned as they are.
 */
export function withHostCallSite(policy: HostCallSiteSource, message: string): string {
  // opa-wasm keeps the Instance itself; an exported global reads through `.value`.
  const exported = (policy.wasmInstance as { exports?: Record<string, unknown> } | undefined)?.exports;
  const addr = (exported?.[HOST_CALL_SITE_GLOBAL] as { value?: unknown } | undefined)?.value;
  if (typeof addr !== 'number' || addr === 0 || !/^eval_[a-z_]+_error: /.test(message)) return message;
  return `${cstringAt(policy.mem, addr)}: ${message}`;
}
