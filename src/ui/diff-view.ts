// The review of a task's changes: a list of files with their added/removed counts, then each file's
// lines coloured by kind (add, del, hunk), each file collapsible (<details>), all as text.
import type { DiffFile } from './diff.js';
import { parseDiff } from './diff.js';
import { html } from './html.js';

/** Files with more lines than this start folded: the list stays readable. */
const OPEN_UP_TO = 400;

export function DiffView({ diff, truncated, untracked }: { diff: string; truncated: boolean; untracked: string[] }) {
  const files: DiffFile[] = parseDiff(diff);
  if (files.length === 0 && untracked.length === 0) return html`<p class="meta">No changes against the task's base commit.</p>`;
  const added = files.reduce((n, f) => n + f.added, 0);
  const removed = files.reduce((n, f) => n + f.removed, 0);
  return html`<div class="diff" data-testid="diff">
    <p class="meta">${files.length} file${files.length === 1 ? '' : 's'} changed, <span class="diff-add-count">+${added}</span> <span class="diff-del-count">−${removed}</span>${truncated ? ' (the diff is cut at 2 MB)' : ''}</p>
    <ul class="diff-files" aria-label="Changed files">${files.map((f, i) => html`<li key=${f.path}><a href=${`#diff-file-${i}`} onClick=${(e: Event) => (e.preventDefault(), document.getElementById(`diff-file-${i}`)?.scrollIntoView())}>${f.path}</a> <span class="meta">${f.status}</span> <span class="diff-add-count" aria-label=${`${f.added} added`}>+${f.added}</span> <span class="diff-del-count" aria-label=${`${f.removed} removed`}>−${f.removed}</span></li>`)}</ul>
    ${files.map(
      (
        f,
        i,
      ) => html`<details key=${f.path} id=${`diff-file-${i}`} class="diff-file" data-file=${f.path} open=${f.lines.length <= OPEN_UP_TO}>
      <summary><code>${f.oldPath && f.oldPath !== f.path ? `${f.oldPath} → ${f.path}` : f.path}</code> <span class="diff-add-count">+${f.added}</span> <span class="diff-del-count">−${f.removed}</span></summary>
      <div class="diff-body" tabindex="0" role="region" aria-label=${`Changes in ${f.path}`}>${f.lines.map((l, j) => html`<div key=${j} class=${`dl dl-${l.kind}`}>${l.text || ' '}</div>`)}</div>
    </details>`,
    )}
    ${untracked.length ? html`<p class="meta">Untracked (not in the diff): ${untracked.join(', ')}</p>` : null}
  </div>`;
}
