// atlas command line. Each command's module is loaded only when that command runs, so a quick
// command never pays for the heavy ones (agent runner, crypto, prompts). `atlas hook status` and
// `atlas checkpoint` start on a fast path of their own first (quick.ts, bin/atlas.cjs).
import { Command, Option } from 'commander';
import { CHECKPOINT_TRIGGERS } from '../domain/checkpoint.js';
import { EXIT } from '../domain/errors.js';
import { RECOVERY_ACTIONS } from '../domain/recovery-context.js';
import { enterPrivateUmask } from '../store/private-umask.js';
import type { GlobalFlags } from './context.js';
import type { Handler } from './run-handler.js';
import { runHandler } from './run-handler.js';

declare const ATLAS_VERSION: string;

enterPrivateUmask();

function collect(value: string, previous: string[] | undefined): string[] {
  return [...(previous ?? []), value];
}

const program = new Command('atlas')
  .description('Task runner for AI-assisted development with crash recovery and signed validation receipts')
  .version(typeof ATLAS_VERSION === 'string' ? ATLAS_VERSION : '0.0.0-dev', '-V, --version')
  .option('--json', 'print machine-readable JSON on stdout')
  .option('-c, --config <key=value>', 'override a configuration key for this run (repeatable)', collect)
  .option('--verbose', 'show every lifecycle hook run (docs/lifecycle-hooks.md)')
  .showHelpAfterError('(run `atlas help` for usage)')
  .configureOutput({ outputError: (text, write) => write(`atlas: ${text.replace(/^error: /, '')}`) })
  .exitOverride();

/** Wraps a lazily imported handler: its flags come from commander. */
function run(load: () => Promise<{ default: Handler }>) {
  return async (...args: unknown[]) => {
    const command = args[args.length - 1] as Command;
    await runHandler(command.optsWithGlobals() as GlobalFlags, load, args.slice(0, -1));
  };
}

program
  .command('init')
  .description('set up ATLAS_HOME (folders, config.yaml, the signing key); in a repository, offer the git hooks (safe to run again)')
  .option('--hooks', 'install the git hooks for automatic checkpoints without asking')
  .option('--no-hooks', 'do not install or offer the git hooks')
  .option('--sandbox', 'make the OS sandbox the default execution mode without asking (the default where it can run)')
  .addOption(new Option('--local', 'keep steps unsandboxed by default (execution.mode: local)').conflicts('sandbox'))
  .option('--no-interactive', 'never prompt (the sandbox becomes the default where it can run)')
  .action(run(() => import('./commands/init.js')));

program
  .command('demo')
  .description('see atlas work in a few seconds: a sample repository, a task, a crash, recover, verify (its own ATLAS_HOME unless --home)')
  .option('--dir <dir>', 'an empty or new folder for the demo (default: a new temporary folder)')
  .option('--home <dir>', 'ATLAS_HOME to use (default: a fresh one inside the demo folder; ~/.atlas is not touched)')
  .action(run(() => import('./commands/demo.js')));

program
  .command('start')
  .description("start a task: a new branch in a git worktree, then the template's steps with live progress")
  .argument('<template>', 'template name (atlas templates list)')
  .argument('[description]', 'what to do, e.g. "fix the null pointer in parseConfig"')
  .option('--in-place', 'run in the current checkout on its current branch instead of a new worktree')
  .option('--workspace <name>', 'workspace name (default: from the description)')
  .option('--no-interactive', 'never prompt: human steps wait in awaiting_human for atlas resume')
  .addOption(new Option('--agent <agent>', 'AI agent for this task (sets ai.agent)').choices(['claude', 'command']))
  .option('--model <model>', 'model passed to the agent (sets ai.model)')
  .option('--sandbox', "run the steps' processes in the OS sandbox (sets execution.mode)")
  .addOption(new Option('--local', "run the steps' processes on this machine, unsandboxed (sets execution.mode)").conflicts('sandbox'))
  .action(run(() => import('./commands/start.js')));

program
  .command('resume')
  .description('continue a task that waits for a person (approval, a failed step, an interrupt)')
  .option('--task <id>', 'task id (default: the task of this directory)')
  .option('--approve', 'approve the waiting step (or accept a failed or interrupted step as done)')
  .option('--reject', 'reject the waiting step: the task fails')
  .option('--note <text>', 'tell the agent (or the history) why, e.g. what you fixed')
  .option('--no-interactive', 'never prompt')
  .option('--sandbox', "run the steps' processes in the OS sandbox (sets execution.mode)")
  .addOption(new Option('--local', "run the steps' processes on this machine, unsandboxed (sets execution.mode)").conflicts('sandbox'))
  .action(run(() => import('./commands/resume.js')));

program
  .command('recover')
  .description('diagnose a crashed or interrupted task, choose how to go on, and run it to the end')
  .option('--task <id>', "task id (default: the one crashed or interrupted task, this repository's first)")
  .addOption(new Option('--action <action>', 'take this action instead of asking').choices([...RECOVERY_ACTIONS]))
  .option('--yes', 'take the recommended action without asking')
  .option('--sandbox', "run the steps' processes in the OS sandbox (sets execution.mode)")
  .addOption(new Option('--local', "run the steps' processes on this machine, unsandboxed (sets execution.mode)").conflicts('sandbox'))
  .option('--from-store [task]', 'first fetch the task and its workspace from sync.store into this ATLAS_HOME and repository')
  .action(run(() => import('./commands/recover.js')));

program
  .command('status')
  .description('list tasks, newest first: active ones and the last few that ended')
  .option('--all', 'include every ended task')
  .action(run(() => import('./commands/status.js')));

program
  .command('abandon')
  .description('stop a task for good (its working tree is kept)')
  .option('--task <id>', 'task id (default: the task of this directory)')
  .option('--yes', 'do not ask for confirmation')
  .option('--note <text>', 'why, recorded in the history')
  .action(run(() => import('./commands/abandon.js')));

const templates = program
  .command('templates')
  .description('task templates, first found wins: .atlas/templates, templates.dirs, $ATLAS_HOME/templates, built-in');
templates
  .command('list')
  .description('every template on the search path, in search order')
  .action(run(() => import('./commands/templates-list.js')));
templates
  .command('show')
  .description("a template's steps and settings")
  .argument('<name>', 'template name')
  .action(run(() => import('./commands/templates-show.js')));

const configCommand = program.command('config').description('configuration (config.yaml, .atlas/config.yaml, ATLAS_* env, -c flags)');
configCommand
  .command('list')
  .description('every key with its effective value and where it comes from')
  .action(run(() => import('./commands/config-list.js')));

program
  .command('checkpoint')
  .description('record a checkpoint of the current task (git state and touched files)')
  .argument('<description>', 'what was accomplished')
  .addOption(new Option('--trigger <trigger>', 'what caused it').choices([...CHECKPOINT_TRIGGERS]).default('manual'))
  .option('--task <id>', 'task id (default: the running task of this directory)')
  .option('--quiet', 'print nothing, and exit 0 when no task owns this directory (for git hooks)')
  .option('--commit <sha>', "record this commit instead of HEAD's (git hooks pin the commit they fired for)")
  .action(run(() => import('./commands/checkpoint.js')));

const hook = program.command('hook').description("inspect and maintain a task's hook (hook.json and HOOK.md)");
hook
  .command('status')
  .description('state, current step, checkpoints and receipts of a task')
  .option('--task <id>', 'task id (default: the task of this directory)')
  .action(run(() => import('./commands/hook-status.js')));
hook
  .command('checkpoints')
  .description("list a task's checkpoints, newest first")
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
hook
  .command('install')
  .description('install git hooks that record checkpoints on commit and push (your own hooks keep running)')
  .option('--repo <dir>', 'the repository (default: the current directory)')
  .option('--shared', 'install even when core.hooksPath comes from global or system git config (every repository uses that folder)')
  .action(run(() => import('./commands/hook-install.js')));
hook
  .command('uninstall')
  .description("remove atlas's git hooks and put back the hooks that were there before")
  .option('--repo <dir>', 'the repository (default: the current directory)')
  .action(run(() => import('./commands/hook-uninstall.js')));

// Conversations and the token ledger (docs/conversations.md).
program
  .command('usage')
  .description("tokens and cost of agent runs: totals over every task's conversations, grouped")
  .option('--task <id>', 'only this task')
  .option('--since <date>', 'only runs started on or after this date (2026-01-31) or time (UTC)')
  .addOption(new Option('--by <group>', 'one row per').choices(['task', 'step', 'template', 'day', 'model']).default('task'))
  .action(run(() => import('./commands/usage.js')));
program
  .command('conversation')
  .description("a task's agent transcript: prompts, answers, each tool call with its input and status")
  .argument('[task]', 'task id (default: the task of this directory)')
  .option('--step <name>', "only this step's conversations")
  .option('--attempt <n>', 'only this attempt of the step')
  .action(run(() => import('./commands/conversation.js')));

// Claude Code integration (docs/claude-code.md). bin/atlas.cjs runs `claude-hook` from its own
// small entry before this parser loads; this registration serves `node dist/cli.js` and help.
program
  .command('claude-hook')
  .description('handle one Claude Code hook event (JSON on stdin); Claude Code runs it, see `atlas claude install`')
  .action(async () => {
    const { runClaudeHook } = await import('../integrations/claude/entry.js');
    process.exitCode = await runClaudeHook();
  });
const claude = program.command('claude').description('Claude Code integration: atlas as the hook command of your own Claude Code sessions');
claude
  .command('install')
  .description("add atlas's hook handlers to a Claude Code settings file (every other key and hook kept byte for byte; safe to run again)")
  .addOption(
    new Option('--scope <scope>', 'project: .claude/settings.json, local: .claude/settings.local.json, user: ~/.claude/settings.json')
      .choices(['project', 'local', 'user'])
      .default('project'),
  )
  .action(run(() => import('./commands/claude-install.js')));
claude
  .command('uninstall')
  .description('remove exactly what `atlas claude install` added')
  .addOption(new Option('--scope <scope>', 'the settings file install wrote').choices(['project', 'local', 'user']).default('project'))
  .action(run(() => import('./commands/claude-uninstall.js')));

program
  .command('doctor')
  .description(
    'can steps run here: execution mode, sandbox readiness (bubblewrap, socat, ripgrep, a trial run) and the effective sandbox policy',
  )
  .option('--task <id>', 'show the policy of this task (default: the task of this directory)')
  .action(run(() => import('./commands/doctor.js')));

program
  .command('cleanup')
  .description(
    'delete ended tasks older than their retention (hooks.retention.*), with their clean worktrees, and what killed atlas runs left behind',
  )
  .option('--dry-run', 'change nothing; list what would be removed (ignored files included)')
  .option('--include-ignored', 'also remove worktrees holding ignored files (a .env, build output), deleting those files')
  .action(run(() => import('./commands/cleanup.js')));

const key = program.command('key').description('the signing key: show it, export public keys for CI and other tools');
key
  .command('show')
  .description('key files, permissions, fingerprints and derivation (never the private key)')
  .action(run(() => import('./commands/key-show.js')));
key
  .command('export')
  .description('print the account xpub that `atlas verify` needs (or the public key at --path, or the attestation key)')
  .option('--path <path>', "a key path, e.g. m/44'/236'/0'/5/0 (hardened levels need the master key)")
  .option('--pem', 'print the public key as PEM (SubjectPublicKeyInfo, secp256k1) for openssl (same as --format pem)')
  .addOption(new Option('--format <format>', 'text (xpub or hex) or pem').choices(['text', 'pem']))
  .addOption(
    new Option(
      '--for <use>',
      'receipts (secp256k1, the default) or attestations (the P-256 key of `receipts export --format in-toto`; needs the master key)',
    ).choices(['receipts', 'attestations']),
  )
  .action(run(() => import('./commands/key-export.js')));

const receipts = program.command('receipts').description('signed validation receipts');
receipts
  .command('export')
  .description("write a JSON bundle of a task's receipts for CI (`atlas verify BUNDLE`), or in-toto attestations of them")
  .option('--task <id>', 'task id, repeatable (default: the task of this directory)', collect)
  .option('--out <file>', 'write the bundle to a file instead of stdout')
  .addOption(
    new Option(
      '--format <format>',
      'atlas (a receipt bundle) or in-toto (DSSE envelopes of in-toto Statements, one per line: .intoto.jsonl)',
    )
      .choices(['atlas', 'in-toto'])
      .default('atlas'),
  )
  .action(run(() => import('./commands/receipts-export.js')));
receipts
  .command('message')
  .description('print the exact message a receipt signs (for checking it with other tools)')
  .argument('<receipt-id>', 'e.g. rcpt-1a2b3c4d')
  .option('--task <id>', 'task id (default: the task of this directory)')
  .option('--signature <file>', "also write the receipt's signature to a file, as DER bytes")
  .action(run(() => import('./commands/receipts-message.js')));

const sync = program
  .command('sync')
  .description('workspace sync through a store (sync.store: a folder, by default $ATLAS_HOME/store, or s3://bucket/prefix)');
const syncTarget = (c: Command) =>
  c
    .option('--task <id>', 'the task whose working tree to sync (default: the task of this directory)')
    .option('--dir <path>', "sync this folder instead of a task's working tree")
    .option(
      '--workspace <name>',
      "with --dir: its name in the store (default: the folder's name); versions, prune and export take it alone",
    );
syncTarget(sync.command('push').description("store the folder as a new version, sending only what changed (a task's own folder goes too)"))
  .option('--force', "behind the store with files changed on both sides: publish this folder's versions of them anyway")
  .option('--strict', 'a file that changes while it is pushed fails the push (by default it keeps its previous version, named)')
  .action(run(() => import('./commands/sync-push.js')));
syncTarget(sync.command('pull').description('make the folder equal to a stored version (the newest unless --version), by checksum'))
  .option('--version <ts>', 'pull this version (atlas sync versions)')
  .addOption(new Option('--stored-version <ts>').hideHelp())
  .option('--force', 'pull even when fresh, past sync.max_delete, and over files changed here')
  .action(run(() => import('./commands/sync-pull.js')));
syncTarget(sync.command('status').description('what push and pull would do now (changes nothing)')).action(
  run(() => import('./commands/sync-status.js')),
);
syncTarget(sync.command('versions').description('the stored versions of the workspace, oldest first')).action(
  run(() => import('./commands/sync-versions.js')),
);
syncTarget(
  sync
    .command('export')
    .description(
      "write a stored version (the newest unless --version) out as an ordinary folder or s3://bucket/prefix: no .sandbox-state, nothing of atlas's",
    ),
)
  .argument('<dest>', 'a new or empty folder')
  .option('--version <ts>', 'export this version (atlas sync versions)')
  .addOption(new Option('--stored-version <ts>').hideHelp())
  .action(run(() => import('./commands/sync-export.js')));
syncTarget(
  sync.command('prune').description('remove old stored versions, keeping the newest N complete ones (and any push still under way)'),
)
  .option('--keep <n>', 'how many complete versions to keep (default: sync.keep_versions)')
  .option('--dry-run', 'change nothing; list what would be removed')
  .action(run(() => import('./commands/sync-prune.js')));

program
  .command('verify')
  .description('check signed receipts with a public key alone (exit 0 ok, 1 invalid or policy unmet, 2 bad input, 3 key problem)')
  .argument(
    '[paths...]',
    'receipt bundles, in-toto envelopes (.intoto.jsonl), hook.json files or task ids (default: the task of this directory)',
  )
  .option('--xpub <xpub>', 'account xpub to verify with (default: --xpub-file, $ATLAS_XPUB, then $ATLAS_HOME/keys/account.xpub)')
  .option('--xpub-file <file>', 'read the account xpub from a file')
  .option(
    '--attestation-key <file>',
    'for in-toto envelopes: the P-256 public key PEM (default: $ATLAS_ATTESTATION_KEY, then the local master key)',
  )
  .option('--require-step <name>', 'require a valid passing receipt of this step (repeatable)', collect)
  .option('--commit <sha>', 'count only receipts made on this commit (id or ref, e.g. HEAD) with a clean tree; require one')
  .option('--require-pass', 'require that the last run of each command passed')
  .option('--require-command <command>', 'require a valid receipt of exactly this command whose last run passed (repeatable)', collect)
  .option('--no-repo-policy', 'do not require the validation.commands committed in .atlas/config.yaml at the verified commit')
  .option('--allow-empty', 'accept input with no receipts (otherwise exit 1: nothing to verify)')
  .option('--require-sandbox', 'require that every valid receipt (on --commit) was made in sandbox mode (signed execution_mode)')
  .option(
    '--require-pristine',
    'require that every valid receipt (on --commit) ran on a pristine tree (signed validation_tree; validation.tree: pristine)',
  )
  .option(
    '--require-control-review',
    'refuse tasks whose signed control review left control-path changes (.atlas/, .claude/, hooks, workflows, lifecycle scripts) unapproved by a person',
  )
  .option('--junit <file>', 'also write a JUnit XML report')
  .option('--artifacts <dir>', "for bundles: folder holding the tasks' artifacts/ to check output hashes against")
  .action(run(() => import('./commands/verify.js')));

// atlas serve: the HTTP API (src/server/, loaded only by these commands). docs/server.md
const serve = program
  .command('serve')
  .description('serve conversations and tasks over HTTP with SSE streams, for many accounts (docs/server.md)')
  .option('--host <host>', 'address to listen on (anything but loopback needs a TLS proxy in front)', '127.0.0.1')
  .option('--port <port>', 'port to listen on (0: any free port; the log says which)', '7420')
  .option('--local', 'run agents and commands UNSANDBOXED on this machine')
  .option('--recover', 'at start-up, continue conversations and tasks a stopped server cut off')
  .action(run(() => import('./commands/serve.js')));
// atlas ui: the web board for this machine's tasks (src/server/local-board.ts). docs/ui.md
program
  .command('ui')
  .description("open the web board for this machine's tasks on 127.0.0.1, signed in by a one-time link (docs/ui.md)")
  .option('--port <port>', 'port to listen on (0: any free port)', '0')
  .option('--open', 'open the link in the default browser')
  .action(run(() => import('./commands/ui.js')));
serve
  .command('migrate')
  .description(
    "import this ATLAS_HOME's server files (tokens, conversations, messages, events, tasks) into the server state: server.database or ATLAS_DATABASE_URL, else $ATLAS_HOME/server/state.db (safe to run again; the files are kept)",
  )
  .action(run(() => import('./commands/serve-migrate.js')));
const serveToken = serve.command('token').description('API tokens: each belongs to an account, stored as a SHA-256 hash');
serveToken
  .command('create')
  .description('create a token for an account and print it once')
  .requiredOption('--account <name>', 'the account the token acts as')
  .option('--expires-in <duration>', 'refuse the token after this long (e.g. 12h, 30d; default: never)')
  .option('--read-only', 'the token may only read (GET): no prompts, tasks, cancels or deletes')
  .action(run(() => import('./commands/serve-token-create.js')));
serveToken
  .command('list')
  .description('list token ids and their accounts (never the tokens)')
  .action(run(() => import('./commands/serve-token-list.js')));
serveToken
  .command('revoke')
  .description('revoke a token by id (a running server refuses it at once)')
  .argument('<id>', 'token id, e.g. tok-1a2b3c4d (atlas serve token list)')
  .action(run(() => import('./commands/serve-token-revoke.js')));

// Program options are recognized anywhere on the line, so atlas's own --version would swallow
// `atlas sync pull --version TS`: after `sync`, --version names a stored version.
const commandAt = process.argv.findIndex((arg, i) => i >= 2 && !arg.startsWith('-') && !['-c', '--config'].includes(process.argv[i - 1]!));
const argv = process.argv.map((arg, i) =>
  process.argv[commandAt] === 'sync' && i > commandAt && /^--version(=|$)/.test(arg) ? arg.replace('--version', '--stored-version') : arg,
);
try {
  await program.parseAsync(argv);
} catch (error) {
  // commander's exitOverride: --help and --version exit 0, usage errors exit 2.
  const code = (error as { exitCode?: number }).exitCode;
  process.exitCode = code === 0 ? EXIT.ok : EXIT.input;
}
