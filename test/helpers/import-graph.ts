// The import graph of a source folder, read with the TypeScript compiler's own pre-processor (every
// import, `export … from` and `import()`, type-only ones too, since a type import still ties two
// files together), and its circles: the strongly connected components of more than one file, or a
// file importing itself (Tarjan's algorithm).
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import ts from 'typescript';

/** File → the files it imports, both as paths relative to `root` with forward slashes. */
export type ImportGraph = Map<string, string[]>;

function tsFiles(dir: string): string[] {
  const found: string[] = [];
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) found.push(...tsFiles(path));
    else if (entry.name.endsWith('.ts')) found.push(path);
  }
  return found;
}

/** Where a relative specifier leads: `./x.js` is the source `./x.ts` (NodeNext), else the file itself. */
function resolveSpecifier(from: string, specifier: string): string | undefined {
  const target = resolve(dirname(from), specifier);
  for (const candidate of [target.replace(/\.js$/, '.ts'), target, `${target}.ts`, join(target, 'index.ts')]) {
    if (candidate.endsWith('.ts') && existsSync(candidate)) return candidate;
  }
  return undefined;
}

export function importGraph(root: string): ImportGraph {
  const graph: ImportGraph = new Map();
  const key = (path: string) => relative(root, path).split('\\').join('/');
  for (const file of tsFiles(root)) {
    const info = ts.preProcessFile(readFileSync(file, 'utf8'), true, true);
    const targets = new Set<string>();
    for (const { fileName } of info.importedFiles) {
      if (!fileName.startsWith('.')) continue;
      const target = resolveSpecifier(file, fileName);
      if (target !== undefined) targets.add(key(target));
    }
    graph.set(key(file), [...targets].sort());
  }
  return graph;
}

/** Each circle as the files in it, in an order that walks it (a imports b imports … imports a). */
export function circles(graph: ImportGraph): string[][] {
  let next = 0;
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const found: string[][] = [];
  // Recursive Tarjan: src/ is a few hundred files deep at most, far below the stack's limit.
  const visit = (v: string): void => {
    index.set(v, next);
    low.set(v, next);
    next++;
    stack.push(v);
    onStack.add(v);
    for (const w of graph.get(v) ?? []) {
      if (!index.has(w)) {
        visit(w);
        low.set(v, Math.min(low.get(v)!, low.get(w)!));
      } else if (onStack.has(w)) low.set(v, Math.min(low.get(v)!, index.get(w)!));
    }
    if (low.get(v) !== index.get(v)) return;
    const component: string[] = [];
    let w: string;
    do {
      w = stack.pop()!;
      onStack.delete(w);
      component.push(w);
    } while (w !== v);
    if (component.length > 1 || (graph.get(v) ?? []).includes(v)) found.push(walkOf(graph, component));
  };
  for (const v of [...graph.keys()].sort()) if (!index.has(v)) visit(v);
  return found;
}

/** One path around a component, from its first file back to it, for the failure message. */
function walkOf(graph: ImportGraph, component: string[]): string[] {
  const inside = new Set(component);
  const start = [...component].sort()[0]!;
  // Breadth-first from start's imports back to start, inside the component: the shortest circle.
  const cameFrom = new Map<string, string>();
  const queue = (graph.get(start) ?? []).filter((w) => inside.has(w));
  for (const w of queue) cameFrom.set(w, start);
  while (queue.length > 0) {
    const v = queue.shift()!;
    if (v === start) break;
    for (const w of graph.get(v) ?? []) {
      if (inside.has(w) && !cameFrom.has(w)) {
        cameFrom.set(w, v);
        queue.push(w);
      }
    }
  }
  const path = [start];
  for (let v = cameFrom.get(start)!; v !== start; v = cameFrom.get(v)!) path.unshift(v);
  path.unshift(start);
  return path;
}
