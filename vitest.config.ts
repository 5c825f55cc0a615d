import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    // Tests that spawn bin/guardian.mjs run dist/: built (or found up to date) once before any file runs.
    globalSetup: ['test/build-dist.ts'],
    testTimeout: 60_000,
    hookTimeout: 120_000,
    // Two cores on CI: forks keep PGlite and Wasm memory per test file isolated.
    pool: 'forks',
    maxWorkers: 2,
  },
});
