/// <reference lib="dom" />
// A task's live output: ANSI colours as spans with classes (ansi.ts; never HTML), and the pane
// follows the newest line unless the person scrolled up to read (then it stays where they are,
// and a button takes them back to the end).
import { useLayoutEffect, useRef, useState } from 'preact/hooks';
import { ansiRuns } from './ansi.js';
import { html } from './html.js';

/** Within this many pixels of the bottom counts as "at the end". */
const NEAR_END = 24;

export function OutputLines({ lines }: { lines: string[] }) {
  let pen = {};
  return lines.map((line, i) => {
    const { runs, pen: next } = ansiRuns(line, pen);
    pen = next;
    return html`<div key=${i} class="line">${runs.map((r) => (r.cls ? html`<span class=${r.cls}>${r.text}</span>` : r.text))}${'\n'}</div>`;
  });
}

export function OutputPane({ lines, label, empty }: { lines: string[]; label: string; empty: string }) {
  const box = useRef<HTMLDivElement>(null);
  const [following, setFollowing] = useState(true);
  const follow = useRef(true);
  useLayoutEffect(() => {
    const el = box.current;
    if (el && follow.current) el.scrollTop = el.scrollHeight;
  }, [lines]);
  const onScroll = () => {
    const el = box.current!;
    const atEnd = el.scrollHeight - el.scrollTop - el.clientHeight <= NEAR_END;
    follow.current = atEnd;
    if (atEnd !== following) setFollowing(atEnd);
  };
  const toEnd = () => {
    follow.current = true;
    setFollowing(true);
    box.current!.scrollTop = box.current!.scrollHeight;
  };
  return html`<div class="output-wrap">
    <div class="output" data-testid="output" data-following=${following ? 'yes' : 'no'} ref=${box} onScroll=${onScroll} role="log" aria-label=${label} tabindex="0">${lines.length ? html`<${OutputLines} lines=${lines} />` : html`<span class="meta">${empty}</span>`}</div>
    ${following ? null : html`<button type="button" class="to-end" onClick=${toEnd}>Follow the newest output</button>`}
  </div>`;
}
