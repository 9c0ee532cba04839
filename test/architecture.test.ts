// The plan of the house (docs/architecture.md), kept true: no import circle anywhere in src/, the
// domain imports nothing else, nothing imports the CLI, and the rooms of server/ and sync/ import
// only the rooms beneath them.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import type { ImportGraph } from './helpers/import-graph.js';
import { circles, importGraph } from './helpers/import-graph.js';

const SRC = fileURLToPath(new URL('../src', import.meta.url));
const graph = importGraph(SRC);

function edges(g: ImportGraph): [string, string][] {
  return [...g].flatMap(([from, targets]) => targets.map((to): [string, string] => [from, to]));
}

/**
 * The rooms of `folder`, from the ground up: a room imports only rooms on a lower floor (never one
 * on its own floor); files at the folder's root sit above every room and may import any.
 */
function roomBreaches(folder: string, floors: string[][]): string[] {
  const floorOf = (file: string): { room: string; floor: number } | undefined => {
    if (!file.startsWith(`${folder}/`)) return undefined;
    const parts = file.slice(folder.length + 1).split('/');
    if (parts.length === 1) return { room: '(root)', floor: floors.length };
    const floor = floors.findIndex((rooms) => rooms.includes(parts[0]!));
    return { room: parts[0]!, floor };
  };
  const breaches: string[] = [];
  for (const [from, to] of edges(graph)) {
    const a = floorOf(from);
    const b = floorOf(to);
    if (!a || !b || a.room === b.room) continue;
    if (a.floor < 0) breaches.push(`${from}: ${folder}/${a.room}/ is not in the plan (test/architecture.test.ts, docs/architecture.md)`);
    else if (b.floor < 0 || b.floor >= a.floor) breaches.push(`${from} imports ${to}: ${a.room}/ may not import ${b.room}/`);
  }
  return breaches;
}

describe('the plan of src/', () => {
  it('has no import circle (type-only imports count)', () => {
    const found = circles(graph).map((c) => c.join(' -> '));
    expect(found, `import circles in src/:\n${found.join('\n')}`).toEqual([]);
  });

  it('keeps src/domain free of the rest of src/', () => {
    const out = edges(graph).filter(([from, to]) => from.startsWith('domain/') && !to.startsWith('domain/'));
    expect(out.map(([from, to]) => `${from} imports ${to}`)).toEqual([]);
  });

  it('lets nothing outside src/cli import it', () => {
    const up = edges(graph).filter(([from, to]) => !from.startsWith('cli/') && to.startsWith('cli/'));
    expect(up.map(([from, to]) => `${from} imports ${to}`)).toEqual([]);
  });

  it('keeps the rooms of server/ in order', () => {
    const floors = [['state'], ['http'], ['conversations', 'tasks'], ['cluster'], ['accounts'], ['board'], ['api']];
    expect(roomBreaches('server', floors)).toEqual([]);
  });

  it('keeps the rooms of sync/ in order', () => {
    const floors = [['report', 'scan'], ['stores'], ['versions'], ['transfer']];
    expect(roomBreaches('sync', floors)).toEqual([]);
  });
});

describe('the import-graph check', () => {
  const dir = mkdtempSync(join(tmpdir(), 'atlas-graph-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));
  const write = (name: string, text: string) => writeFileSync(join(dir, name), text);

  it('finds a circle made of a type-only import, an export-from and a dynamic import, and walks it', () => {
    write('a.ts', "import type { B } from './b.js';\nexport type A = B;\n");
    write('b.ts', "export { c } from './c.js';\nexport type B = string;\n");
    write('c.ts', "export const c = () => import('./a.js');\n");
    write('d.ts', "import { c } from './c.js';\nimport 'node:fs';\nexport const d = c;\n");
    write('e.ts', "import { e2 } from './e.js';\nexport const e2 = 1;\nexport const e = e2;\n");
    const g = importGraph(dir);
    expect(g.get('d.ts')).toEqual(['c.ts']);
    expect(circles(g)).toEqual([
      ['a.ts', 'b.ts', 'c.ts', 'a.ts'],
      ['e.ts', 'e.ts'],
    ]);
  });
});
