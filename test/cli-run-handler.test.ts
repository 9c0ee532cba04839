// One way to run a command's handler, in this process: the exit code from its result or its error
// (runHandler), and the fast path's entry saying which lines it runs (runQuick).
import { afterEach, describe, expect, it, vi } from 'vitest';
import { runQuick } from '../src/cli/quick-main.js';
import { runHandler } from '../src/cli/run-handler.js';
import { AtlasError } from '../src/domain/errors.js';
import { tempDir } from './helpers/core-fixtures.js';

const umask = process.umask();
afterEach(() => {
  process.exitCode = 0;
  process.umask(umask);
  vi.restoreAllMocks();
  vi.unstubAllEnvs();
});

describe('runHandler', () => {
  it('sets the exit code from the result, 0 for none, and from an error, which it reports', async () => {
    const stderr = vi.spyOn(process.stderr, 'write').mockImplementation(() => true);
    await runHandler({}, async () => ({ default: async () => 5 }), []);
    expect(process.exitCode).toBe(5);
    await runHandler({}, async () => ({ default: async () => undefined }), []);
    expect(process.exitCode).toBe(0);
    await runHandler(
      {},
      async () => ({
        default: async () => {
          throw new AtlasError('no such task', { exitCode: 4, hint: 'try another' });
        },
      }),
      [],
    );
    expect(process.exitCode).toBe(4);
    expect(stderr.mock.calls.map((c) => String(c[0])).join('')).toBe('atlas: no such task\nhint: try another\n');
  });
});

describe('runQuick', () => {
  it('runs a line it understands (here: no such task, exit 4) and leaves the others', async () => {
    vi.stubEnv('ATLAS_HOME', tempDir());
    const stderr = vi.spyOn(process.stderr, 'write').mockImplementation(() => true);
    expect(await runQuick(['status'])).toBe(false);
    expect(await runQuick(['hook', 'status', '--help'])).toBe(false);
    expect(await runQuick(['hook', 'status', '--task', 'task-20260101-000000'])).toBe(true);
    expect(process.exitCode).toBe(4);
    expect(String(stderr.mock.calls[0]?.[0])).toContain('no task task-20260101-000000');
  });
});
