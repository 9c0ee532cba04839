// Where steps run (execution.mode): on this machine, or in the OS sandbox (src/exec). Sandbox mode
// on a machine that cannot sandbox stops here, before anything is created or run.
import type { Config } from '../config/schema.js';

export async function assertExecutionReady(config: Config, env: NodeJS.ProcessEnv = process.env): Promise<void> {
  if (config.execution.mode === 'local') return;
  const { assertSandboxReady } = await import('../exec/readiness.js');
  await assertSandboxReady(env);
}
