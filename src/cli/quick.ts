// The commands run most often (`atlas hook status`, and `atlas checkpoint` from agents and git
// hooks) parsed without commander and the command table: ~15 ms of every start, 1.3x `node -e 0`
// against 1.6x. Only a line this parser fully understands runs here; anything else (help, an
// unknown or repeated option, a bad value) goes to the full CLI, which then says what is wrong.
import { CHECKPOINT_TRIGGERS } from '../domain/checkpoint.js';
import type { GlobalFlags } from './context.js';
import type { Handler } from './run-handler.js';

export interface QuickCommand {
  load: () => Promise<{ default: Handler }>;
  flags: GlobalFlags;
  args: unknown[];
}

interface Spec {
  words: string[];
  /** Options taking a value, with the values allowed (undefined: any). */
  values: Record<string, readonly string[] | undefined>;
  switches: string[];
  positionals: number;
  defaults: Record<string, string>;
  load: QuickCommand['load'];
}

const SPECS: Spec[] = [
  {
    words: ['hook', 'status'],
    values: { task: undefined },
    switches: [],
    positionals: 0,
    defaults: {},
    load: () => import('./commands/hook-status.js'),
  },
  {
    words: ['checkpoint'],
    values: { task: undefined, trigger: CHECKPOINT_TRIGGERS, commit: undefined },
    switches: ['quiet'],
    positionals: 1,
    defaults: { trigger: 'manual' },
    load: () => import('./commands/checkpoint.js'),
  },
];

/** The command of `argv` (process.argv minus node and script) when it can run on the fast path. */
export function quickCommand(argv: string[]): QuickCommand | undefined {
  const spec = SPECS.find((s) => s.words.every((word, i) => argv[i] === word));
  if (!spec) return undefined;
  const flags: GlobalFlags = {};
  const opts: Record<string, string | boolean> = {};
  const positionals: string[] = [];
  const rest = argv.slice(spec.words.length);
  for (let i = 0; i < rest.length; i++) {
    const arg = rest[i]!;
    // `--` ends the options, as in commander: the git hooks pass `-- DESCRIPTION`.
    if (arg === '--') {
      positionals.push(...rest.slice(i + 1));
      break;
    }
    if (!arg.startsWith('-') || arg === '-') {
      positionals.push(arg);
      continue;
    }
    const eq = arg.indexOf('=');
    const name = arg.startsWith('--') ? arg.slice(2, eq < 0 ? undefined : eq) : arg === '-c' ? 'config' : undefined;
    if (name === undefined || name === '') return undefined;
    const inline = arg.startsWith('--') && eq >= 0 ? arg.slice(eq + 1) : undefined;
    if (name === 'json' || name === 'verbose' || spec.switches.includes(name)) {
      if (inline !== undefined || (name === 'json' ? flags.json : name === 'verbose' ? flags.verbose : opts[name])) return undefined;
      if (name === 'json') flags.json = true;
      else if (name === 'verbose') flags.verbose = true;
      else opts[name] = true;
      continue;
    }
    if (name !== 'config' && !Object.hasOwn(spec.values, name)) return undefined;
    const value = inline ?? rest[++i];
    // A value that looks like an option is a mistake commander explains better.
    if (value === undefined || (inline === undefined && value.startsWith('-'))) return undefined;
    if (name === 'config') {
      flags.config = [...(flags.config ?? []), value];
      continue;
    }
    const allowed = spec.values[name];
    if (opts[name] !== undefined || (allowed && !allowed.includes(value))) return undefined;
    opts[name] = value;
  }
  if (positionals.length !== spec.positionals) return undefined;
  return { load: spec.load, flags, args: [...positionals, { ...spec.defaults, ...opts }] };
}
