// Where steps run. This release runs commands and agents on this machine only; a configuration
// that asks for a sandbox is refused rather than silently run unsandboxed.
import type { Config } from '../config/schema.js';
import { AtlasError, EXIT } from '../domain/errors.js';

export function assertExecutionMode(config: Config): void {
  if (config.execution.mode === 'local') return;
  throw new AtlasError(
    `execution.mode is "${config.execution.mode}", but this atlas can only run steps locally; nothing was run`,
    {
      exitCode: EXIT.input,
      hint: 'set execution.mode: local (or remove it) in your config, or pass -c execution.mode=local, to run the steps on this machine',
    },
  );
}
