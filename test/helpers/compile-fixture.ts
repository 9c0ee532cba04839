// Compiles a TypeScript fixture to a runnable .mjs (esbuild), so tests can run src/ code in a
// real child process and kill it.
import { join } from 'node:path';
import { build } from 'esbuild';
import { tempDir, REPO_ROOT } from './core-fixtures.js';

export async function compileFixture(relativePath: string): Promise<string> {
  const outfile = join(tempDir('atlas-fixture-'), 'fixture.mjs');
  await build({
    entryPoints: [join(REPO_ROOT, relativePath)],
    outfile,
    bundle: true,
    format: 'esm',
    platform: 'node',
    target: 'node20',
    logLevel: 'silent',
    banner: { js: "import { createRequire as __cr } from 'node:module'; const require = __cr(import.meta.url);" },
  });
  return outfile;
}
