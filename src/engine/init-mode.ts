// `atlas init` makes the sandbox the default execution mode where this machine can run it (the
// safe mode by default, docs/security.md): it writes `execution.mode: sandbox` into
// $ATLAS_HOME/config.yaml unless the file already says which mode to use. A person opts out with
// `atlas init --local`, or later by setting execution.mode: local.
import { readFileSync } from 'node:fs';
import { parseYamlText } from '../config/yaml-lib.js';
import { writeFileAtomic } from '../store/atomic-write.js';

export type ModeChoice =
  | { action: 'set'; mode: 'sandbox' | 'local' }
  | { action: 'kept'; mode: string }
  | { action: 'unsupported'; reason: string }
  | { action: 'manual'; reason: string };

/** The mode config.yaml names, or 'section' when it has an execution section without a mode. */
async function configuredMode(text: string): Promise<string | 'section' | undefined> {
  const { data } = await parseYamlText(text);
  const execution = (data as { execution?: unknown } | null)?.execution;
  if (execution === undefined || execution === null) return undefined;
  if (typeof execution !== 'object') return 'section';
  const mode = (execution as { mode?: unknown }).mode;
  return typeof mode === 'string' ? mode : 'section';
}

/** Writes the chosen mode into config.yaml when it names none (its text otherwise untouched). */
export async function writeDefaultMode(configPath: string, mode: 'sandbox' | 'local'): Promise<ModeChoice> {
  const text = readFileSync(configPath, 'utf8');
  let current: string | undefined;
  try {
    current = await configuredMode(text);
  } catch (error) {
    return {
      action: 'manual',
      reason: `${configPath} does not parse (${error instanceof Error ? error.message.split('\n')[0] : String(error)})`,
    };
  }
  if (current === 'section') return { action: 'manual', reason: `${configPath} has an execution section without a mode` };
  if (current !== undefined) return { action: 'kept', mode: current };
  const why =
    mode === 'sandbox'
      ? 'steps run in the OS sandbox (docs/security.md); set mode: local to run them unsandboxed'
      : 'steps run on this machine, unsandboxed; set mode: sandbox to isolate them';
  const block = `\n# Written by atlas init: ${why}.\nexecution:\n  mode: ${mode}\n`;
  writeFileAtomic(configPath, `${text.endsWith('\n') ? text : `${text}\n`}${block}`);
  return { action: 'set', mode };
}
