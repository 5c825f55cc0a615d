// The few members of the WebAssembly JS API the engine touches, typed locally: the project's lib settings carry
// no DOM/WebAssembly typings. Also the memory reads every part of the engine shares.

export interface WasmMemoryView {
  readonly buffer: ArrayBuffer;
}
export interface WasmMemory extends WasmMemoryView {
  grow(pages: number): number;
}
export type CompiledWasmModule = object;

export const WasmApi = (
  globalThis as unknown as {
    WebAssembly: {
      compile(bytes: Uint8Array): Promise<CompiledWasmModule>;
      instantiate(module: CompiledWasmModule, imports: object): Promise<{ exports: object }>;
      Memory: new (descriptor: { initial: number; maximum: number }) => WasmMemory;
    };
  }
).WebAssembly;

export const PAGE_BYTES = 64 * 1024;

export const utf8Encoder = new TextEncoder();
const utf8Decoder = new TextDecoder();

/** Reads a NUL-terminated UTF-8 string out of the instance's memory. */
export function readCString(memory: WasmMemoryView, addr: number): string {
  const bytes = new Uint8Array(memory.buffer);
  const nul = bytes.indexOf(0, addr);
  return utf8Decoder.decode(bytes.subarray(addr, nul < 0 ? bytes.length : nul));
}
