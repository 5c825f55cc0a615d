// Resettable bump allocator over the host-imported memory (docs/wasm-abi.md, memory): the host saves
// opa_heap_ptr_get() after loading data and resets to it before every evaluation, so nothing is freed.

@external("env", "opa_abort")
declare function opa_abort_import(addr: usize): void;

// The linker appends its static data after the runtime's and rewrites this global's initial value to the
// first free byte after it (exported only so binaryen keeps it a real, rewritable global).
export let rt_heap_base: usize = __heap_base;

let heapPtr: usize = 0;

// Our own cap, because the npm host creates memory without a maximum by default.
const HEAP_CAP: usize = 1 << 30;

const ABORT_BUF: usize = memory.data(1024, 8);

/** Abort with an ASCII message given as an AS string literal (static, no allocation). */
export function abortWith(msg: string): void {
  const n = msg.length < 1000 ? msg.length : 1000;
  for (let i = 0; i < n; i++) store<u8>(ABORT_BUF + i, <u8>msg.charCodeAt(i));
  store<u8>(ABORT_BUF + n, 0);
  opa_abort_import(ABORT_BUF);
  unreachable();
}

/** Abort with a message assembled in memory (NUL-terminated). */
export function abortAt(addr: usize): void {
  opa_abort_import(addr);
  unreachable();
}

// AssemblyScript's own abort (assertions, bounds) is routed here via `--use abort=…` (no env.abort import).
export function asAbort(message: string | null, fileName: string | null, line: u32, column: u32): void {
  if (message === null) abortWith("internal: runtime abort");
  else abortWith(message);
}

@inline function heapInit(): void {
  if (heapPtr == 0) heapPtr = (rt_heap_base + 7) & ~(<usize>7);
}

export function opa_malloc(size: usize): usize {
  heapInit();
  const p = heapPtr;
  if (size > HEAP_CAP) abortWith("opa_malloc: failed: allocation exceeds the 1 GiB heap limit");
  const end = (p + size + 7) & ~(<usize>7);
  ensureMemory(end);
  heapPtr = end;
  return p;
}

/** Grows memory so that addresses below `end` exist (aborting past the heap cap); allocates nothing. */
export function ensureMemory(end: usize): void {
  if (end > HEAP_CAP) abortWith("opa_malloc: failed: heap limit of 1 GiB exceeded");
  const cur = (<usize>memory.size()) << 16;
  if (end > cur) {
    const need = <i32>((end - cur + 0xffff) >> 16);
    // Grow geometrically (fewer, cheaper grows for big evaluations), capped at 64 MiB per step and at
    // the heap cap; fall back to the exact need when the host's maximum refuses the larger step.
    const curPages = memory.size();
    let step = curPages < 1024 ? curPages : 1024;
    if (step < need) step = need;
    if ((<usize>(curPages + step)) << 16 > HEAP_CAP) step = need;
    if (memory.grow(step) < 0 && (step == need || memory.grow(need) < 0)) abortWith("opa_malloc: failed: cannot grow memory");
  }
}

/** Zero-initialised allocation. */
export function allocZ(size: usize): usize {
  const p = opa_malloc(size);
  memory.fill(p, 0, size);
  return p;
}

// A bump allocator cannot free individual blocks; the host resets the heap pointer instead.
export function opa_free(addr: usize): void {}

export function opa_heap_ptr_get(): usize {
  heapInit();
  return heapPtr;
}

export function opa_heap_ptr_set(addr: usize): void {
  heapPtr = addr;
}

// ABI 1.3 free-list stash: a bump allocator has no free lists, so these are no-ops.
export function opa_heap_blocks_stash(): void {}
export function opa_heap_blocks_restore(): void {}
export function opa_heap_stash_clear(): void {}
