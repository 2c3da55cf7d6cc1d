import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    testTimeout: 30_000,
    hookTimeout: 60_000,
    // End-to-end files start real server processes; keep the 2-core machine from oversubscribing.
    maxWorkers: 2,
    reporters: ['default', './test/summary-reporter.ts'],
  },
});
