// Everything atlas creates is private (0700 folders, 0600 files) whatever the person's umask:
// atlas's own process runs under umask 077, so no mkdir, append or copy anywhere in atlas can
// make a file others may read, even one that names no mode. The processes atlas runs for the
// person (validation commands, the agent, git in their repository) get the umask they had: files
// those make in a repository keep the modes the person expects, as do the files atlas writes for
// the person (personMode).
import { mkdirSync } from 'node:fs';

let personUmask: number | undefined;

/** Called first by each entry point (the CLI, its fast path, the Claude Code hook). */
export function enterPrivateUmask(): void {
  personUmask ??= process.umask(0o077);
}

/** Runs `spawn` (which starts a child process synchronously) under the person's own umask. */
export function withPersonUmask<T>(spawn: () => T): T {
  if (personUmask === undefined) return spawn();
  process.umask(personUmask);
  try {
    return spawn();
  } finally {
    process.umask(0o077);
  }
}

/**
 * For a file or folder atlas makes for the person (a bundle or report they asked for, a pulled
 * file, a folder in their repository): the mode `mode` gets under their umask, where atlas's own
 * took more away; undefined when atlas's umask changed nothing.
 */
export function personMode(mode: number): number | undefined {
  if (personUmask === undefined || (mode & 0o077) === 0) return undefined;
  return mode & ~personUmask;
}

/** mkdir -p of folders made for the person, with the modes their umask gives. */
export function mkdirForPerson(path: string): void {
  withPersonUmask(() => mkdirSync(path, { recursive: true }));
}
