// Control paths: files in a tree that other programs run or obey later, outside any sandbox (the
// person's next `atlas start`, `claude`, direnv, git, husky, CI, npm). A branch that changes one
// changes what runs on the person's machine, so atlas shows it for review (issue 34).
import { posix } from 'node:path';

/** npm runs these scripts on install, pack and publish: a change runs code on the next `npm ci`. */
export const LIFECYCLE_SCRIPTS = [
  'preinstall',
  'install',
  'postinstall',
  'preuninstall',
  'uninstall',
  'postuninstall',
  'prepublish',
  'preprepare',
  'prepare',
  'postprepare',
  'prepublishOnly',
  'prepack',
  'postpack',
  'dependencies',
] as const;

const FOLDERS: ReadonlyArray<readonly [string, string]> = [
  ['.atlas/', 'atlas configuration and templates (lifecycle hooks, validation commands)'],
  ['.claude/', 'Claude Code settings, hooks and commands'],
  ['.husky/', 'husky git hooks (the stubs in .husky/_ run these)'],
  ['.github/workflows/', 'CI workflows'],
  ['.git/', 'a git folder'],
];

const FILES: ReadonlyArray<readonly [string, string]> = [
  ['.envrc', 'direnv runs it on entering the folder'],
  ['.gitattributes', 'selects git filters and diff drivers'],
  ['.gitmodules', 'submodules git clones and enters'],
  ['.mcp.json', 'MCP servers Claude Code starts'],
  ['.npmrc', 'npm configuration (script shell, registries)'],
];

/**
 * Why `path` (relative, '/'-separated) is a control path, or undefined. Compared without case:
 * on a case-insensitive volume `.Claude/` is `.claude/`. `hooksPath` is core.hooksPath when it
 * names a folder in the tree.
 */
export function controlReason(path: string, hooksPath?: string): string | undefined {
  const p = posix.normalize(path).toLowerCase();
  const base = posix.basename(p);
  for (const [name, why] of FILES) {
    // .gitattributes and .envrc act at any depth; the others at the top.
    if (p === name || ((name === '.gitattributes' || name === '.envrc') && base === name)) return `${name}: ${why}`;
  }
  for (const [folder, why] of FOLDERS) {
    if (p.startsWith(folder) || (folder === '.claude/' && p.includes('/.claude/'))) return `${folder} ${why}`;
  }
  if (hooksPath) {
    const hooks = posix.normalize(hooksPath).toLowerCase().replace(/\/+$/, '');
    if (p.startsWith(`${hooks}/`)) return `${hooks}/: core.hooksPath, git runs what is there`;
    // husky's layout: the stubs in <dir>/_ run <dir>/<hook>.
    if (posix.basename(hooks) === '_' && p.startsWith(`${posix.dirname(hooks)}/`))
      return `${posix.dirname(hooks)}/: what the core.hooksPath stubs run`;
  }
  return undefined;
}

/** A package manifest (package.json at any depth): its lifecycle scripts are compared. */
export function isManifest(path: string): boolean {
  return posix.basename(path.toLowerCase()) === 'package.json';
}

/** The lifecycle scripts of a manifest's text (empty when it is not JSON). */
export function lifecycleScripts(text: string | undefined): Record<string, string> {
  if (text === undefined) return {};
  try {
    const scripts = (JSON.parse(text) as { scripts?: unknown }).scripts;
    if (typeof scripts !== 'object' || scripts === null) return {};
    const out: Record<string, string> = {};
    for (const name of LIFECYCLE_SCRIPTS) {
      const value = (scripts as Record<string, unknown>)[name];
      if (value !== undefined) out[name] = String(value);
    }
    return out;
  } catch {
    return {};
  }
}

/** The lifecycle scripts that differ between two versions of a manifest. */
export function changedLifecycle(before: string | undefined, after: string | undefined): string[] {
  const a = lifecycleScripts(before);
  const b = lifecycleScripts(after);
  return LIFECYCLE_SCRIPTS.filter((name) => a[name] !== b[name]);
}
