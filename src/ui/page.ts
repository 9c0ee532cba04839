/// <reference lib="dom" />
// Each view names itself: the tab's title, and keyboard and screen-reader focus on the view's
// heading once it is drawn (a hash change otherwise leaves focus on <body> or a vanished link).
import { useEffect, useRef } from 'preact/hooks';

export function usePage(title: string | undefined): void {
  const focused = useRef(false);
  useEffect(() => {
    if (title === undefined) return;
    document.title = `${title} · atlas board`;
    if (focused.current) return;
    focused.current = true;
    const heading = document.querySelector<HTMLElement>('main h1');
    if (heading) {
      heading.tabIndex = -1;
      heading.focus({ preventScroll: true });
    }
  }, [title]);
}
