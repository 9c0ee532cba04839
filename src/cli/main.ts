// atlas command line. Each command's module is loaded only when that command runs, so a quick
// command never pays for the heavy ones (agent runner, crypto, prompts).
import { Command, Option } from 'commander';
import { CHECKPOINT_TRIGGERS } from '../domain/checkpoint.js';
import { EXIT } from '../domain/errors.js';
import { CliContext } from './context.js';
import type { GlobalFlags } from './context.js';
import { reportError } from './output.js';

declare const ATLAS_VERSION: string;

type Handler = (ctx: CliContext, ...args: any[]) => Promise<number | void>;

function collect(value: string, previous: string[]): string[] {
  return [...previous, value];
}

const program = new Command('atlas')
  .description('Task runner for AI-assisted development with crash recovery and signed validation receipts')
  .version(typeof ATLAS_VERSION === 'string' ? ATLAS_VERSION : '0.0.0-dev', '-V, --version')
  .option('--json', 'print machine-readable JSON on stdout')
  .option('-c, --config <key=value>', 'override a configuration key for this run (repeatable)', collect, [])
  .showHelpAfterError('(run `atlas help` for usage)')
  .configureOutput({ outputError: (text, write) => write(`atlas: ${text.replace(/^error: /, '')}`) })
  .exitOverride();

/** Wraps a lazily imported handler: builds the context, runs, maps errors to exit codes. */
function run(load: () => Promise<{ default: Handler }>) {
  return async (...args: unknown[]) => {
    const command = args[args.length - 1] as Command;
    const flags = command.optsWithGlobals() as GlobalFlags;
    const ctx = new CliContext(flags);
    try {
      const handler = (await load()).default;
      const code = await handler(ctx, ...args.slice(0, -1));
      process.exitCode = code ?? EXIT.ok;
    } catch (error) {
      process.exitCode = reportError(error, Boolean(flags.json));
    }
  };
}

program
  .command('checkpoint')
  .description('record a checkpoint of the current task (git state and touched files)')
  .argument('<description>', 'what was accomplished')
  .addOption(new Option('--trigger <trigger>', 'what caused it').choices([...CHECKPOINT_TRIGGERS]).default('manual'))
  .option('--task <id>', 'task id (default: the running task of this directory)')
  .option('--quiet', 'print nothing, and exit 0 when no task owns this directory (for git hooks)')
  .action(run(() => import('./commands/checkpoint.js')));

const hook = program.command('hook').description('inspect and maintain a task\'s hook (hook.json and HOOK.md)');
hook
  .command('status')
  .description('state, current step, checkpoints and receipts of a task')
  .option('--task <id>', 'task id (default: the task of this directory)')
  .action(run(() => import('./commands/hook-status.js')));
hook
  .command('checkpoints')
  .description('list a task\'s checkpoints, newest first')
  .option('--task <id>', 'task id (default: the task of this directory)')
  .action(run(() => import('./commands/hook-checkpoints.js')));
hook
  .command('export')
  .description('print hook.json (validated) for a bug report or another tool')
  .option('--task <id>', 'task id (default: the task of this directory)')
  .action(run(() => import('./commands/hook-export.js')));
hook
  .command('regenerate')
  .description('rewrite HOOK.md from hook.json')
  .option('--task <id>', 'task id (default: the task of this directory)')
  .action(run(() => import('./commands/hook-regenerate.js')));

const key = program.command('key').description('the signing key: show it, export public keys for CI and other tools');
key
  .command('show')
  .description('key files, permissions, fingerprints and derivation (never the private key)')
  .action(run(() => import('./commands/key-show.js')));
key
  .command('export')
  .description('print the account xpub that `atlas verify` needs (or the public key at --path)')
  .option('--path <path>', "a key path, e.g. m/44'/236'/0'/5/0 (hardened levels need the master key)")
  .option('--pem', 'print the public key as PEM (SubjectPublicKeyInfo, secp256k1) for openssl')
  .action(run(() => import('./commands/key-export.js')));

const receipts = program.command('receipts').description('signed validation receipts');
receipts
  .command('export')
  .description('write a JSON bundle of a task\'s receipts for CI (`atlas verify BUNDLE`)')
  .option('--task <id>', 'task id, repeatable (default: the task of this directory)', collect, [])
  .option('--out <file>', 'write the bundle to a file instead of stdout')
  .action(run(() => import('./commands/receipts-export.js')));
receipts
  .command('message')
  .description('print the exact message a receipt signs (for checking it with other tools)')
  .argument('<receipt-id>', 'e.g. rcpt-1a2b3c4d')
  .option('--task <id>', 'task id (default: the task of this directory)')
  .option('--signature <file>', 'also write the receipt\'s signature to a file, as DER bytes')
  .action(run(() => import('./commands/receipts-message.js')));

program
  .command('verify')
  .description('check signed receipts with a public key alone (exit 0 ok, 1 invalid or policy unmet, 2 bad input, 3 key problem)')
  .argument('[paths...]', 'receipt bundles, hook.json files or task ids (default: the task of this directory)')
  .option('--xpub <xpub>', 'account xpub to verify with (default: --xpub-file, $ATLAS_XPUB, then $ATLAS_HOME/keys/account.xpub)')
  .option('--xpub-file <file>', 'read the account xpub from a file')
  .option('--require-step <name>', 'require a valid passing receipt of this step (repeatable)', collect, [])
  .option('--commit <sha>', 'count only receipts made on this commit (id or ref, e.g. HEAD) with a clean tree; require one')
  .option('--require-pass', 'require that the last run of each command passed')
  .option('--junit <file>', 'also write a JUnit XML report')
  .option('--artifacts <dir>', 'for bundles: folder holding the tasks\' artifacts/ to check output hashes against')
  .action(run(() => import('./commands/verify.js')));

try {
  await program.parseAsync(process.argv);
} catch (error) {
  // commander's exitOverride: --help and --version exit 0, usage errors exit 2.
  const code = (error as { exitCode?: number }).exitCode;
  process.exitCode = code === 0 ? EXIT.ok : EXIT.input;
}
