// Compiles a TypeScript fixture to a runnable .mjs (esbuild), so tests can run src/ code in a
// real child process and kill it.
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { build } from 'esbuild';
import { REPO_ROOT, tempDir } from './core-fixtures.js';

/**
 * `linked`: packages left out of the bundle and imported from this checkout's node_modules by
 * absolute path (native addons such as better-sqlite3 cannot be bundled).
 */
export async function compileFixture(relativePath: string, linked: string[] = []): Promise<string> {
  const require = createRequire(join(REPO_ROOT, 'package.json'));
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
    plugins: [
      {
        name: 'linked',
        setup(b) {
          for (const pkg of linked) b.onResolve({ filter: new RegExp(`^${pkg}$`) }, () => ({ path: require.resolve(pkg), external: true }));
        },
      },
    ],
  });
  return outfile;
}
