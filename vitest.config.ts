import { availableParallelism } from 'node:os';
import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    testTimeout: 60_000,
    hookTimeout: 60_000,
    // Many tests wait on real processes and servers: on two cores a third worker fills those waits
    // (the suite spends about a third of its time waiting with two).
    maxWorkers: Math.max(2, Math.ceil(availableParallelism() * 1.5)),
    pool: 'forks',
    globalSetup: ['test/global-build.ts'],
    // `npm run coverage`: v8 coverage of the sources (code run in child processes of the built
    // CLI is not counted, so the figure is a floor).
    coverage: {
      provider: 'v8',
      include: ['src/**/*.ts'],
      reporter: ['text-summary', 'json-summary'],
      reportsDirectory: 'coverage',
    },
  },
});
