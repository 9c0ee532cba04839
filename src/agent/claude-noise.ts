// Claude Code's stderr, less its own noise: "Could not parse message into JSON" lines, which it
// prints about stream lines it skipped, say nothing the person can act on (issue 35). Whole
// lines are passed on as they complete; the rest when the stream ends.
const NOISE = /^Could not parse message into JSON\b/;

export class StderrFilter {
  private partial = '';

  push(text: string): string {
    const lines = (this.partial + text).split('\n');
    this.partial = lines.pop() ?? '';
    return lines
      .filter((l) => !NOISE.test(l.trim()))
      .map((l) => `${l}\n`)
      .join('');
  }

  end(): string {
    const rest = this.partial;
    this.partial = '';
    return rest.length > 0 && !NOISE.test(rest.trim()) ? rest : '';
  }
}
