// Everything atlas creates is private (0700 folders, 0600 files) whatever the person's umask:
// atlas's own process runs under umask 077, so no mkdir, append or copy anywhere in atlas can
// make a file others may read, even one that names no mode. The processes atlas runs for the
// person (validation commands, the agent, git in their repository) get the umask they had: files
// those make in a repository keep the modes the person expects.
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
