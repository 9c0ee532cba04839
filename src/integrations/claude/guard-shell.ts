// What a Bash command reaches on disk, for the guard: its words with quotes and backslashes
// taken out, `$PWD` and `~` expanded, relative paths resolved against the folder the command's
// `cd`s lead to, and globs matched against what exists (bounded). Not a shell: a command built at
// run time (eval, variables set in it) escapes it; the sandbox is the wall, this a second fence.
import { readdirSync } from 'node:fs';
import { dirname, isAbsolute, join, resolve, sep } from 'node:path';

export interface ShellPath {
  path: string;
  /** Reached through a relative word or a `cd` (an absolute path is judged as written). */
  relative: boolean;
  /** The folder a recursive glob (`**`) searches. */
  searchRoot: boolean;
}

export interface ShellReach {
  paths: ShellPath[];
  /** Files the command writes by redirection or tee. */
  writes: string[];
  /** The command without quotes and backslashes (for the name checks). */
  unquoted: string;
}

const GLOB = /[*?[]/;
const MAX_MATCHES = 200;
const MAX_READS = 50;

export function unquote(command: string): string {
  return command.replace(/\\(.)/g, '$1').replace(/['"]/g, '');
}

function globRegex(segment: string): RegExp {
  let out = '';
  for (let i = 0; i < segment.length; i++) {
    const c = segment[i]!;
    if (c === '*') out += '[^/]*';
    else if (c === '?') out += '[^/]';
    else if (c === '[') {
      const end = segment.indexOf(']', i + 1);
      if (end < 0) out += '\\[';
      else {
        out += `[${segment
          .slice(i + 1, end)
          .replace(/^!/, '^')
          .replace(/\\/g, '\\\\')}]`;
        i = end;
      }
    } else out += c.replace(/[.+^${}()|\\]/g, '\\$&');
  }
  // Case-insensitive: on such a volume `K*` reaches keys/ too.
  return new RegExp(`^${out}$`, 'i');
}

/** What a glob matches on disk (bounded), and the folder a `**` in it searches. */
function expand(pattern: string, budget: { reads: number }): { matches: string[]; searchRoot?: string } {
  const parts = pattern.split(sep);
  let current = [parts[0] === '' ? sep : parts[0]!];
  for (let i = 1; i < parts.length; i++) {
    const seg = parts[i]!;
    if (seg === '**') return { matches: current, searchRoot: current[0] ?? sep };
    if (!GLOB.test(seg)) {
      current = current.map((c) => join(c, seg));
      continue;
    }
    const re = globRegex(seg);
    const next: string[] = [];
    for (const dir of current) {
      if (budget.reads-- <= 0) break;
      try {
        for (const name of readdirSync(dir)) if (re.test(name) && next.length < MAX_MATCHES) next.push(join(dir, name));
      } catch {
        // not a folder, or unreadable: nothing matches there
      }
    }
    current = next;
  }
  return { matches: current };
}

/** Simple commands: split on ; & | ( ) and newlines (quotes already taken out). */
function simpleCommands(text: string): string[][] {
  return text
    .split(/[;&|()\n`]+/)
    .map((c) =>
      c
        .replace(/(\d?[<>]+\|?)/g, ' $1 ')
        .trim()
        .split(/\s+/)
        .filter(Boolean),
    )
    .filter((w) => w.length > 0);
}

export function shellReach(command: string, cwd: string, env: NodeJS.ProcessEnv): ShellReach {
  const unquoted = unquote(command);
  const home = env['HOME'] ?? '';
  const paths: ShellPath[] = [];
  const writes: string[] = [];
  const budget = { reads: MAX_READS };
  let dir = cwd;
  let moved = false;
  const word = (w: string) =>
    w
      .replace(/\$\{?PWD\}?/g, dir)
      .replace(/\$\{?HOME\}?/g, home)
      .replace(/^~(?=\/|$)/, home);
  for (const words of simpleCommands(unquoted)) {
    const [name, ...args] = words.map(word);
    if ((name === 'cd' || name === 'pushd') && words.length <= 3) {
      const target = args.find((a) => !a.startsWith('-')) ?? home;
      dir = resolve(dir, GLOB.test(target) ? (expand(resolve(dir, target), budget).matches[0] ?? target) : target);
      moved = true;
      paths.push({ path: dir, relative: true, searchRoot: false });
      continue;
    }
    for (let i = 0; i < words.length; i++) {
      let w = i === 0 ? name! : args[i - 1]!;
      if (/^\d?[<>]+\|?$/.test(w)) {
        if (w.includes('>') && args[i]) writes.push(resolve(dir, word(words[i + 1]!)));
        continue;
      }
      const flag = /^--?[\w-]+=(.+)$/.exec(w);
      if (flag) w = flag[1]!;
      else if (w.startsWith('-')) continue;
      if (/^[a-z][a-z0-9+.-]*:\/\//i.test(w)) continue;
      if (!(w.includes('/') || w === '.' || w === '..' || GLOB.test(w))) continue;
      const rel = !isAbsolute(w) || moved;
      const full = resolve(dir, w);
      if (GLOB.test(w)) {
        const { matches, searchRoot } = expand(full, budget);
        for (const m of matches) paths.push({ path: m, relative: rel, searchRoot: false });
        if (searchRoot) paths.push({ path: searchRoot, relative: true, searchRoot: true });
        // The folder the glob's first wildcard reads.
        paths.push({ path: dirname(`${full.split(/[*?[]/)[0]!}x`), relative: rel, searchRoot: false });
      } else paths.push({ path: full, relative: rel, searchRoot: false });
    }
    if (name === 'tee') for (const a of args) if (!a.startsWith('-')) writes.push(resolve(dir, a));
  }
  return { paths, writes, unquoted };
}
