import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    testTimeout: 60_000,
    hookTimeout: 60_000,
    // Two cores: integration tests spawn real processes, so keep parallelism modest.
    maxWorkers: 2,
    pool: 'forks',
  },
});
