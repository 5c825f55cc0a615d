// Postgres settings of the embedded store, kept apart from the worker so the main thread can name them without
// loading PGlite.

/**
 * Postgres' default shared_buffers (128MB) is sized for a server with many connections; PGlite has one, its pages
 * live in the process heap (Wasm memory that Postgres zeroes at every start) and its files are cached by the OS
 * anyway (NODEFS reads the real data directory).
 */
export const PGLITE_SHARED_BUFFERS = '16MB';

/** PGlite's own start parameters, with the settings above. */
export function pgliteStartParams(defaults: readonly string[]): string[] {
  return [...defaults, '-c', `shared_buffers=${PGLITE_SHARED_BUFFERS}`];
}
