// Starting an agent blocks the event loop (a fork and exec: 20 ms or more on a busy machine).
// When many turns start at once, their starts would run back to back in one pass of the loop and
// hold every stream and every new request for a second or more. `paced()` lets one start through
// per pass, with the loop free to answer requests and write events in between.
const waiting: (() => void)[] = [];
let draining = false;

function next(): void {
  const release = waiting.shift();
  if (!release) {
    draining = false;
    return;
  }
  release();
  setImmediate(next);
}

/** Resolves when it is this caller's turn to start something costly (at most one per loop pass). */
export function paced(): Promise<void> {
  return new Promise((resolve) => {
    waiting.push(resolve);
    if (!draining) {
      draining = true;
      setImmediate(next);
    }
  });
}

/** How many starts wait now (the queue depth /metrics reports). */
export function pacedWaiting(): number {
  return waiting.length;
}
