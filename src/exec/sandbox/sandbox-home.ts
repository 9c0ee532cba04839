// The $HOME of a sandboxed step: a private, writable folder of the task's own (<task folder>/home),
// so that tools keeping caches and state in the home folder (nyc through spawn-wrap writes
// ~/.node-spawn-wrap-*, npm ~/.npm, pip ~/.cache/pip) work, and nothing they write there reaches
// the person's home. The person's tool configuration comes along where it holds no secret:
// ~/.gitconfig and ~/.npmrc are copied without their credential entries; Claude Code's state
// (~/.claude, ~/.claude.json) is linked, because the agent keeps its sessions there (the policy
// decides what of it is writable). Everything else of the real home stays where it was.
import { existsSync, lstatSync, mkdirSync, readFileSync, readlinkSync, rmSync, symlinkSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { writeFileAtomic } from '../../store/atomic-write.js';

export function sandboxHomeDir(taskDir: string): string {
  return join(taskDir, 'home');
}

/** git config sections that can carry credentials: a helper, an Authorization header, a token in a URL. */
const GIT_SECRET_SECTIONS = /^\s*\[\s*(credential|http|https|url|sendemail)\b/i;

/** ~/.gitconfig without the sections that can hold credentials. */
export function gitConfigWithoutSecrets(text: string): string {
  const out: string[] = [];
  let skipping = false;
  for (const line of text.split('\n')) {
    if (/^\s*\[/.test(line)) skipping = GIT_SECRET_SECTIONS.test(line);
    if (!skipping) out.push(line);
  }
  return out.join('\n');
}

/** npm settings that are credentials (per registry or global): _auth, _authToken, _password, certfile, keyfile, username. */
const NPM_SECRET_KEY = /(^|:)(_auth|_authtoken|_password|username|certfile|keyfile|email)\s*=/i;

/** ~/.npmrc without its credential lines (the registry settings stay). */
export function npmrcWithoutSecrets(text: string): string {
  return text
    .split('\n')
    .filter((line) => !NPM_SECRET_KEY.test(line.trim()))
    .join('\n');
}

const COPIED: readonly { name: string; filter: (text: string) => string }[] = [
  { name: '.gitconfig', filter: gitConfigWithoutSecrets },
  { name: '.config/git/config', filter: gitConfigWithoutSecrets },
  { name: '.npmrc', filter: npmrcWithoutSecrets },
];

/**
 * Makes (or refreshes) the task's private home: the filtered copies of the person's configuration
 * as it is now, and links to the agent's state. Returns its path.
 */
export function prepareSandboxHome(taskDir: string, userHome: string, linked: readonly string[]): string {
  const home = sandboxHomeDir(taskDir);
  mkdirSync(home, { recursive: true, mode: 0o700 });
  for (const { name, filter } of COPIED) {
    const target = join(home, name);
    let text: string;
    try {
      text = readFileSync(join(userHome, name), 'utf8');
    } catch {
      // Gone from the real home: gone from the copy too (it may have held what was removed on purpose).
      if (realFolders(home, name, false)) rmSync(target, { force: true });
      continue;
    }
    realFolders(home, name, true);
    writeFileAtomic(target, filter(text));
  }
  for (const source of linked) {
    if (!source.startsWith(`${userHome}/`) || !existsSync(source)) continue;
    const rel = source.slice(userHome.length + 1);
    const target = join(home, rel);
    if (isLinkTo(target, source)) continue;
    // A step may have put a file there: the link wins (what the step wrote is its own to lose).
    realFolders(home, rel, true);
    rmSync(target, { recursive: true, force: true });
    symlinkSync(source, target);
  }
  return home;
}

/**
 * Whether the folders of `rel` under `home` are real folders of their own; with `make`, makes them
 * so. A step can write the home: a link it put at `.config` would send atlas's write (outside the
 * sandbox) into a folder of its choosing. A link or file in the way is removed, never followed.
 */
function realFolders(home: string, rel: string, make: boolean): boolean {
  let dir = home;
  for (const part of dirname(rel)
    .split('/')
    .filter((p) => p !== '' && p !== '.')) {
    dir = join(dir, part);
    let isDir = false;
    try {
      const st = lstatSync(dir);
      isDir = st.isDirectory();
      if (!isDir && make) rmSync(dir, { force: true });
    } catch {
      // absent: made below, or nothing under it to remove
    }
    if (isDir) continue;
    if (!make) return false;
    mkdirSync(dir, { mode: 0o700 });
  }
  return true;
}

function isLinkTo(path: string, source: string): boolean {
  try {
    return lstatSync(path).isSymbolicLink() && readlinkSync(path) === source;
  } catch {
    return false;
  }
}
