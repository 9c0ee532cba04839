import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    testTimeout: 60_000,
    hookTimeout: 60_000,
    // Two cores: integration tests spawn real processes, so keep parallelism modest.
    maxWorkers: 2,
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
