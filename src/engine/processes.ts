// Where the engine starts processes: the exec room (src/exec) owns process groups and the
// executor seam; this module keeps the engine's and the agents' imports in one place.
export { ProcessGroups } from '../exec/process-groups.js';
export type { RunProcessOptions, RunProcessResult } from '../exec/run-process.js';
export { runProcess, shellQuote } from '../exec/run-process.js';
