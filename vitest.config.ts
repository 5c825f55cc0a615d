import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    testTimeout: 60_000,
    hookTimeout: 120_000,
    // Two cores on CI: forks keep PGlite and Wasm memory per test file isolated.
    pool: 'forks',
    maxWorkers: 2,
  },
});
