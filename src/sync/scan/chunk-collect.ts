// A body read from a socket or a file arrives in buffers of its own (64 KiB from a socket, up to
// 256 KiB from a folder store's file), which V8 frees only when it collects its young generation,
// and it collects it for their sake only once 32 MiB of them wait. A read that makes little else
// besides (whole packs of which a pull keeps a few contents) let 18-31 MB of dead buffers pile up
// at a pull's peak (docs/sync.md#peak-memory). A collection of the young generation after every
// 2 MiB read bounds them, for a fraction of a millisecond each. Every 512 KiB held the pull of an
// older version at 100,000 files to 4-6 MB of buffers when pieces crossed a promise each; since
// they are handed over from the stream's own events (body-pieces.ts) they die young, and 2 MiB
// peaks the same there (104-109 MB either way, alternated) while a pull of 10,000 files of 10 KiB
// collects a quarter as often: each collection moved what was alive at that moment (open files,
// reads under way) to the old generation, 84-93 MB at 512 KiB and 75-80 MB at 2 MiB, in 5-10%
// less time.
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';

const EVERY = 2 * 1024 * 1024;

type Collect = (options: { type: 'minor' }) => void;

let collect: Collect | undefined;
let since = 0;

/** Counts `bytes` read into buffers now dead; collects the young generation every 2 MiB. */
export function chunksRead(bytes: number): void {
  since += bytes;
  if (since < EVERY) return;
  since = 0;
  collect ??= youngCollector();
  collect({ type: 'minor' });
}

/** V8's own `gc` (only a context made once the flag is set has it; the program's globals stay as they are). */
function youngCollector(): Collect {
  setFlagsFromString('--expose-gc');
  return runInNewContext('gc') as Collect;
}
