// A progress line on a terminal for long transfers (stderr, redrawn at most 5 times a second);
// nothing at all when stderr is not a terminal or under --json.
import { formatBytes } from './render.js';

export interface Progress {
  start(label: string, files: number, bytes: number): void;
  advance(bytes: number): void;
  finish(): void;
}

export const silentProgress: Progress = { start() {}, advance() {}, finish() {} };

export function terminalProgress(stream: NodeJS.WriteStream = process.stderr): Progress {
  if (!stream.isTTY) return silentProgress;
  let label = '';
  let total = 0;
  let totalBytes = 0;
  let done = 0;
  let bytes = 0;
  let drawn = 0;
  let shown = false;
  const draw = (force: boolean) => {
    const now = Date.now();
    if (!force && now - drawn < 200) return;
    drawn = now;
    shown = true;
    stream.write(`\r\x1b[2K${label} ${done}/${total} files, ${formatBytes(bytes)} of ${formatBytes(totalBytes)}`);
  };
  return {
    start(l, files, b) {
      label = l;
      total = files;
      totalBytes = b;
      done = 0;
      bytes = 0;
    },
    advance(b) {
      done++;
      bytes += b;
      draw(false);
    },
    finish() {
      if (shown) stream.write('\r\x1b[2K');
      shown = false;
    },
  };
}
