// Splits streamed text into whole lines; a partial line waits for its end (or a flush).
export class LineBuffer {
  private partial = '';

  /** Whole lines completed by this text (without their newlines). */
  push(text: string): string[] {
    const parts = (this.partial + text).replace(/\r\n/g, '\n').split('\n');
    this.partial = parts.pop() ?? '';
    // A carriage return redraws a line in place (progress bars): keep what it ended as.
    return parts.map((line) => line.slice(line.lastIndexOf('\r') + 1));
  }

  /** The unfinished line so far. */
  get pending(): string {
    return this.partial.slice(this.partial.lastIndexOf('\r') + 1);
  }

  flush(): string | undefined {
    const rest = this.pending;
    this.partial = '';
    return rest.length > 0 ? rest : undefined;
  }
}
