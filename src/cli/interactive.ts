// May this run ask the person at the terminal? Only with a terminal on stdin and stderr (prompts
// are drawn on stderr so stdout stays clean for --json), and not with --no-interactive.
export function canPrompt(flag: boolean | undefined): boolean {
  return flag !== false && Boolean(process.stdin.isTTY) && Boolean(process.stderr.isTTY);
}
