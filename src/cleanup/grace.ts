// How old the debris of an interrupted atlas process must be before cleanup touches it. Younger, it
// may belong to a process still at work: an `atlas start` setting a task up, a write in progress.
export const DEBRIS_GRACE_MS = 60 * 60_000;
