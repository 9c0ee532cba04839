/// <reference lib="dom" />
// Start a task from the board (POST /tasks, as `atlas start` does): a repository the server knows
// (under server.repos_root), one of its templates, a description, and sandbox or local where the
// server allows local. On success, the new task's page.
import { useEffect, useState } from 'preact/hooks';
import { api } from './api.js';
import { html } from './html.js';
import { usePage } from './page.js';

interface Repos {
  repos: { name: string; templates: string[] }[];
  mode?: 'local' | 'sandbox';
  modes?: ('local' | 'sandbox')[];
  hint?: string;
}

export function StartView() {
  const [repos, setRepos] = useState<Repos | undefined>();
  const [repo, setRepo] = useState('');
  const [template, setTemplate] = useState('');
  const [mode, setMode] = useState<'local' | 'sandbox'>('sandbox');
  const [error, setError] = useState('');
  const [busy, setBusy] = useState(false);
  usePage('New task');
  useEffect(() => {
    api<Repos>('GET', '/board/repos').then(
      (r) => {
        setRepos(r);
        const first = r.repos[0];
        if (first) setRepo(first.name), setTemplate(first.templates[0] ?? '');
        setMode(r.mode === 'local' && r.modes?.includes('local') ? 'local' : 'sandbox');
      },
      (e: Error) => setError(e.message),
    );
  }, []);
  const templates = repos?.repos.find((r) => r.name === repo)?.templates ?? [];
  const submit = async (e: Event) => {
    e.preventDefault();
    const form = e.target as HTMLFormElement;
    const description = (form.elements.namedItem('description') as HTMLTextAreaElement).value;
    setBusy(true);
    setError('');
    try {
      const r = await api<{ task: { id: string } }>('POST', '/tasks', { repo, template, description, mode });
      location.hash = `#/tasks/${encodeURIComponent(r.task.id)}`;
    } catch (err) {
      setError((err as Error).message);
    } finally {
      setBusy(false);
    }
  };
  const value = (e: Event) => (e.target as HTMLSelectElement).value;
  return html`<section aria-labelledby="start-title">
    <p><a href="#/">← Board</a></p>
    <h1 id="start-title">New task</h1>
    ${repos && repos.repos.length === 0 ? html`<p class="advice">No repository to start from: ${repos.hint ?? 'server.repos_root holds no git repository'}.</p>` : null}
    <form class="start" onSubmit=${submit}>
      <label for="repo">Repository</label>
      <select id="repo" name="repo" required value=${repo} onChange=${(e: Event) => (setRepo(value(e)), setTemplate(repos?.repos.find((r) => r.name === value(e))?.templates[0] ?? ''))}>
        ${(repos?.repos ?? []).map((r) => html`<option value=${r.name}>${r.name}</option>`)}
      </select>
      <label for="template">Template</label>
      <select id="template" name="template" required value=${template} onChange=${(e: Event) => setTemplate(value(e))}>
        ${templates.map((t) => html`<option value=${t}>${t}</option>`)}
      </select>
      <label for="description">What to do</label>
      <textarea id="description" name="description" rows="4" maxlength="10000" placeholder="e.g. fix the null pointer in parseConfig"></textarea>
      <fieldset><legend>Where its steps run</legend>
        <label><input type="radio" name="mode" value="sandbox" checked=${mode === 'sandbox'} onChange=${() => setMode('sandbox')} /> In the sandbox (bubblewrap: the agent reaches only the worktree)</label>
        <label><input type="radio" name="mode" value="local" checked=${mode === 'local'} disabled=${!repos?.modes?.includes('local')} onChange=${() => setMode('local')} /> On this machine, unsandboxed${repos?.modes?.includes('local') ? '' : ' (this server does not allow it)'}</label>
      </fieldset>
      <button type="submit" class="primary" disabled=${busy || !repo || !template}>${busy ? 'Starting…' : 'Start the task'}</button>
      ${error ? html`<p class="error" role="alert">${error}</p>` : null}
    </form>
  </section>`;
}
