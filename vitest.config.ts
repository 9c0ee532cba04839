import { readdirSync, readFileSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import { dirname, join } from 'node:path';
import { defineConfig } from 'vitest/config';

// A test file that changes what its whole process shares (the environment, the folder, the
// umask, module mocks), itself or through a helper it imports, runs in a process of its own. The
// others share a worker's process across files: each is spared a process start and a second load
// of the same modules (about 20 s of the suite's CPU).
const SHARED_STATE =
  /process\.env(?:\.\w+|\[[^\]]+\])?\s*(?:=[^=]|\?\?=)|delete process\.env|Object\.assign\(process\.env|vi\.(?:stubEnv|stubGlobal|mock|doMock)\(|process\.(?:chdir|umask)\(|process\.exitCode|enterPrivateUmask|setFlagsFromString/;
const HELPER_IMPORT = /from '(\.{1,2}\/(?:[\w.-]+\/)*helpers\/[\w.-]+)\.js'/g;

function touchesSharedState(file: string): boolean {
  const text = readFileSync(file, 'utf8');
  if (SHARED_STATE.test(text)) return true;
  return [...text.matchAll(HELPER_IMPORT)].some((m) => SHARED_STATE.test(readFileSync(join(dirname(file), `${m[1]}.ts`), 'utf8')));
}

const testFiles = readdirSync('test', { recursive: true, encoding: 'utf8' })
  .filter((name) => name.endsWith('.test.ts'))
  .map((name) => join('test', name));
const ownProcess = testFiles.filter(touchesSharedState);

const common = {
  testTimeout: 60_000,
  hookTimeout: 60_000,
  pool: 'forks' as const,
};

export default defineConfig({
  test: {
    // Many tests wait on real processes and servers: on two cores a third worker fills those waits
    // (the suite spends about a third of its time waiting with two).
    maxWorkers: Math.max(2, Math.ceil(availableParallelism() * 1.5)),
    globalSetup: ['test/global-build.ts'],
    projects: [
      { test: { ...common, name: 'own-process', include: ownProcess } },
      { test: { ...common, name: 'shared-process', include: ['test/**/*.test.ts'], exclude: ownProcess, isolate: false } },
    ],
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
