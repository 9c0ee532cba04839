/// <reference lib="dom" />
// The board's entry: sign-in (a token posted once to POST /session; the server answers with an
// HttpOnly cookie, so the page never keeps the token), then the board or a task's page by hash.
import { render } from 'preact';
import { useEffect, useState } from 'preact/hooks';
import type { Session } from './api.js';
import { ApiError, api } from './api.js';
import { BoardView } from './board-view.js';
import { ConversationList, ConversationView } from './conversation-view.js';
import { html } from './html.js';
import { usePage } from './page.js';
import { StartView } from './start-view.js';
import { TaskView } from './task-view.js';
import { UsageView } from './usage-view.js';

/** `atlas ui`'s page (the server says so in a meta tag): signed in by the printed link only. */
const LOCAL = document.querySelector('meta[name="atlas-board"]')?.getAttribute('content') === 'local';

function SignedOut() {
  usePage('Signed out');
  return html`<section class="signin">
    <h1>atlas board: signed out</h1>
    <p>This board belongs to <code>atlas ui</code> on this machine, and signs in through the link it printed, once. That link was used, or the board restarted.</p>
    <p>Restart <code>atlas ui</code> for a new link (Ctrl+C in its terminal, then <code>atlas ui</code> again).</p>
  </section>`;
}

function SignIn({ onDone }: { onDone: (s: Session) => void }) {
  const [error, setError] = useState('');
  usePage('Sign in');
  const submit = async (e: Event) => {
    e.preventDefault();
    const input = (e.target as HTMLFormElement).elements.namedItem('token') as HTMLInputElement;
    try {
      const s = await api<Session>('POST', '/session', { token: input.value });
      input.value = '';
      onDone(s);
    } catch (err) {
      setError((err as Error).message);
    }
  };
  return html`<form class="signin" onSubmit=${submit}>
    <h1>Sign in to the atlas board</h1>
    <label for="token">API token (<code>atlas serve token create --account NAME</code>)</label>
    <input id="token" name="token" type="password" autocomplete="off" required />
    <button type="submit">Sign in</button>
    ${error ? html`<p class="error" role="alert">${error}</p>` : null}
  </form>`;
}

function useHash(): string {
  const [hash, setHash] = useState(location.hash);
  useEffect(() => {
    const on = () => setHash(location.hash);
    addEventListener('hashchange', on);
    return () => removeEventListener('hashchange', on);
  }, []);
  return hash;
}

function App() {
  const [session, setSession] = useState<Session | null | undefined>(undefined);
  const hash = useHash();
  useEffect(() => {
    api<Session>('GET', '/session').then(setSession, (e: unknown) => setSession(e instanceof ApiError && e.status === 401 ? null : null));
  }, []);
  if (session === undefined) return html`<main><h1>atlas board</h1><p>Loading…</p></main>`;
  if (session === null) return html`<main>${LOCAL ? html`<${SignedOut} />` : html`<${SignIn} onDone=${setSession} />`}</main>`;
  const signOut = () => void api('DELETE', '/session').finally(() => setSession(null));
  const task = /^#\/tasks\/([A-Za-z0-9_-]+)$/.exec(hash);
  const conv = /^#\/conversations\/([A-Za-z0-9][A-Za-z0-9_-]{0,79})$/.exec(hash);
  const ro = session.read_only;
  // Every view is keyed by what it shows: going from task A to task B builds B's page anew, so no
  // state or stream of A's survives into it.
  const page = task
    ? html`<${TaskView} key=${`task-${task[1]}`} id=${task[1]} readOnly=${ro} />`
    : conv
      ? html`<${ConversationView} key=${`conv-${conv[1]}`} id=${conv[1]} />`
      : hash === '#/conversations'
        ? html`<${ConversationList} key="conversations" />`
        : hash === '#/usage'
          ? html`<${UsageView} key="usage" />`
          : hash === '#/new' && !ro
            ? html`<${StartView} key="new" />`
            : html`<${BoardView} key="board" hash=${hash} readOnly=${ro} />`;
  return html`<header><a href="#/" class="brand">atlas</a><nav aria-label="Pages"><a href="#/">Tasks</a> ${ro ? null : html`<a href="#/new">New task</a> `}<a href="#/conversations">Conversations</a> <a href="#/usage">Usage</a></nav><span class="meta">${session.account}${ro ? ' (read-only)' : ''}</span><button type="button" onClick=${signOut}>Sign out</button></header>
    <main>${page}</main>`;
}

render(html`<${App} />`, document.getElementById('app')!);
