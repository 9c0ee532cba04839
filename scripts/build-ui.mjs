// The web board's browser bundle (docs/ui.md): src/ui/main.ts and its CSS, minified, with hashed
// names, into dist/ui/ with a manifest.json the server reads (src/server/board/board.ts).

import { mkdirSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { basename, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';

const root = fileURLToPath(new URL('..', import.meta.url));

export async function buildUi(outdir = join(root, 'dist', 'ui')) {
  rmSync(outdir, { recursive: true, force: true });
  mkdirSync(outdir, { recursive: true });
  const result = await build({
    entryPoints: { app: join(root, 'src/ui/main.ts'), style: join(root, 'src/ui/style.css') },
    bundle: true,
    format: 'esm',
    platform: 'browser',
    target: ['chrome110', 'firefox110', 'safari16'],
    minify: true,
    entryNames: '[name]-[hash]',
    outdir,
    metafile: true,
    legalComments: 'none',
    logLevel: 'warning',
  });
  const files = readdirSync(outdir);
  const names = Object.keys(result.metafile.outputs).map((p) => basename(p));
  const manifest = {
    js: names.find((n) => n.startsWith('app-') && n.endsWith('.js')),
    css: names.find((n) => n.startsWith('style-') && n.endsWith('.css')),
    files,
  };
  writeFileSync(join(outdir, 'manifest.json'), `${JSON.stringify(manifest)}\n`);
  return { outdir, manifest };
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  const { outdir } = await buildUi(process.argv[2]);
  console.log(`board built in ${outdir}`);
}
