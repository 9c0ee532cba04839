// How a step's processes run (docs/execution-modes.md): on the host, or in the sandbox.
export type ExecutionMode = 'local' | 'sandbox';
export const EXECUTION_MODES: readonly ExecutionMode[] = ['local', 'sandbox'];
