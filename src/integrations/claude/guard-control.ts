// Files whose contents run later outside the agent: a person's shell (.envrc through direnv),
// git (.git/hooks), Claude Code (its settings' hooks), atlas (.atlas/: lifecycle hooks and
// validation commands). The guard refuses writes to them (issue 34, attack family 7). Compared
// without case: on a case-insensitive volume `.Claude/Settings.json` is the same file.
import { basename, relative, sep } from 'node:path';
import { inside } from './guard-paths.js';

/** What the control file is, for the refusal; undefined for an ordinary file. */
export function controlFile(path: string, home: string, env: NodeJS.ProcessEnv): string | undefined {
  const lower = path.toLowerCase();
  const configDir = env['CLAUDE_CONFIG_DIR'];
  const name = basename(lower);
  if (
    configDir &&
    inside(lower, configDir.toLowerCase()) &&
    /^settings.*\.json$/.test(name) &&
    relative(configDir.toLowerCase(), lower) === name
  )
    return "Claude Code's settings";
  // Inside ATLAS_HOME (~/.atlas by default) only the part below it counts: its own folder is not
  // a repository's .atlas/.
  const own = inside(lower, home.toLowerCase()) ? relative(home.toLowerCase(), lower) : lower;
  const parts = own.split(sep).filter(Boolean);
  if (name === '.envrc') return '.envrc';
  const parent = parts[parts.length - 2];
  if (parent === '.claude' && /^settings.*\.json$/.test(name)) return "Claude Code's settings";
  for (let i = 0; i < parts.length - 1; i++) {
    if (parts[i] === '.git' && parts[i + 1] === 'hooks') return "git's hooks";
    if (parts[i] === '.atlas') return "atlas's repository configuration (.atlas/)";
  }
  return undefined;
}

export function controlDenial(tool: string, raw: string, what: string): string {
  return `atlas guard: ${tool} on ${raw} is refused: it is a control file (${what}) whose commands run outside the agent later (a person's shell, git, Claude Code or atlas). Ask the person to change it.`;
}
