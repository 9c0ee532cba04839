// Reads the board needs beyond the task API (docs/ui.md, docs/server.md): a stopped task's
// diagnosis and recovery actions, why a failed task failed, one of its artifacts as text, and the
// repositories and templates a new task can start from.
import { lstatSync, readdirSync, readFileSync, realpathSync } from 'node:fs';
import { join, sep } from 'node:path';
import type { Hook } from '../../domain/hook.js';
import { readHookFile } from '../../store/hook-file.js';
import { taskFiles } from '../../store/paths.js';
import { readTask } from '../../store/task-store.js';
import { listTemplates } from '../../templates/search.js';
import { failureOf, recoveryPlan } from '../board/board-recovery.js';
import type { ServerContext } from '../http/context.js';
import { HttpError, sendJson } from '../http/http.js';
import type { Router } from '../http/router.js';
import type { Tasks } from '../tasks/tasks.js';
import type { Handler } from './request.js';

/** An artifact's path as the hook records it: artifacts/<step>/<file>, nothing else. */
const ARTIFACT = /^artifacts\/[\w.-]{1,200}\/[\w.-]{1,200}$/;
const MAX_ARTIFACT = 256 * 1024;

export function addBoardRoutes(router: Router<Handler>, ctx: ServerContext, tasks: Tasks): void {
  router.add('GET', '/tasks/:id/diagnosis', async (r) => {
    const record = await tasks.owned(r.account, r.params['id']!);
    const hook = readHookFile(taskFiles(record.dir).hook);
    const summary = tasks.summary(record);
    const stopped = summary.activity === 'crashed' || summary.activity === 'paused';
    sendJson(r.res, 200, {
      task_id: record.task_id,
      recovery: stopped ? recoveryPlan(readTask(record.dir), hook, new Date().toISOString()) : null,
      failure: hook.state === 'failed' ? (failureOf(hook) ?? null) : null,
      prompt: hook.state === 'awaiting_human' ? promptOf(record.dir, hook.current_step?.step_index) : null,
    });
  });

  // The text of a file the task's own steps wrote: whatever a command printed, so text/plain,
  // never sniffed, and read only inside the task's artifacts folder (no link followed out of it).
  router.add('GET', '/tasks/:id/artifact', async (r) => {
    const record = await tasks.owned(r.account, r.params['id']!);
    const path = r.url.searchParams.get('path') ?? '';
    if (!ARTIFACT.test(path) || path.includes('..'))
      throw new HttpError(400, 'invalid_field', 'path: an artifact path as the hook records it (artifacts/<step>/<file>)', {
        field: 'path',
      });
    const root = realpathSync(record.dir);
    const file = join(root, path);
    let text: string;
    try {
      if (!lstatSync(file).isFile() || realpathSync(file) !== file || !file.startsWith(root + sep)) throw new Error('not a plain file');
      text = readFileSync(file, 'utf8').slice(0, MAX_ARTIFACT);
    } catch {
      throw new HttpError(404, 'not_found', `task ${record.task_id} has no artifact ${path}`);
    }
    r.res.writeHead(200, {
      'content-type': 'text/plain; charset=utf-8',
      'cache-control': 'no-store',
      'x-content-type-options': 'nosniff',
      'content-security-policy': "default-src 'none'; sandbox",
    });
    r.res.end(text);
  });

  // What a card shows beyond GET /tasks: when the current step started and the last output line.
  router.add('GET', '/board/cards', async (r) => {
    const cards: { id: string; step_started_at: string | null; last_line: string }[] = [];
    for (const record of (await tasks.recordsOf(r.account)).slice(0, 5000)) {
      try {
        cards.push({ id: record.task_id, ...cardOf(readHookFile(taskFiles(record.dir).hook)) });
      } catch {
        // Removed by `atlas cleanup`, or unreadable: GET /tasks leaves it out too.
      }
    }
    sendJson(r.res, 200, { cards });
  });

  // The repositories under server.repos_root (one level down) and the templates each offers.
  router.add('GET', '/board/repos', async (r) => {
    const root = ctx.config.server.repos_root;
    if (!root)
      return sendJson(r.res, 200, {
        repos: [],
        hint: 'set server.repos_root to the folder that holds your repositories to start tasks from the board',
      });
    const repos: { name: string; templates: string[] }[] = [];
    let names: string[] = [];
    try {
      names = readdirSync(root, { withFileTypes: true })
        .filter((d) => d.isDirectory() && !d.name.startsWith('.'))
        .map((d) => d.name)
        .sort()
        .slice(0, 200);
    } catch {
      throw new HttpError(500, 'repos_root_missing', 'server.repos_root cannot be read on the server');
    }
    for (const name of names) {
      const dir = join(root, name);
      try {
        lstatSync(join(dir, '.git'));
      } catch {
        continue;
      }
      const listed = await listTemplates({ repoRoot: dir, home: ctx.home, dirs: ctx.config.templates.dirs, cwd: dir });
      repos.push({ name, templates: [...new Set(listed.filter((t) => !t.shadowed && !t.error).map((t) => t.name))] });
    }
    const local = ctx.local || ctx.config.execution.mode === 'local';
    sendJson(r.res, 200, { repos, mode: ctx.config.execution.mode, modes: local ? ['sandbox', 'local'] : ['sandbox'] });
  });
}

/** The current step's start and the last non-empty line of its output (at most 300 characters). */
export function cardOf(hook: Hook): { step_started_at: string | null; last_line: string } {
  const lines = (hook.current_step?.last_output ?? '').split('\n').filter((l) => l.trim() !== '');
  const ended = hook.state === 'completed' || hook.state === 'failed' || hook.state === 'abandoned';
  return {
    step_started_at: ended ? null : (hook.current_step?.started_at ?? null),
    last_line: (lines[lines.length - 1] ?? '').slice(0, 300),
  };
}

/** The prompt of the human step the task waits at, from task.json. */
function promptOf(dir: string, index: number | undefined): string | null {
  if (index === undefined) return null;
  const step = readTask(dir).steps[index] as { type?: string; prompt?: string } | undefined;
  return step?.type === 'human' && typeof step.prompt === 'string' ? step.prompt : null;
}
