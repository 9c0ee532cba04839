// What subagents hand back in their final message (seed 004): `<context>...</context>` extracts
// for context.md and `<work filename="...">...</work>` files for work/. Pure.

export interface WorkFile {
  /** Sanitized: a plain relative path inside work/, never absolute, never with "..". */
  name: string;
  content: string;
}

export function extractContexts(text: string): string[] {
  const found: string[] = [];
  for (const m of text.matchAll(/<context>([\s\S]*?)<\/context>/g)) {
    const body = m[1]!.trim();
    if (body.length > 0) found.push(body);
  }
  return found;
}

/**
 * A file name from an agent made safe: separators normalised, `.`/`..` and empty segments
 * dropped, control and reserved characters replaced, each segment bounded. Undefined when
 * nothing usable is left.
 */
export function sanitizeWorkName(name: string): string | undefined {
  const segments = name
    .replace(/\\/g, '/')
    .split('/')
    .map((s) => s.replace(/[\u0000-\u001f<>:"|?*]/g, '_').trim())
    .filter((s) => s.length > 0 && s !== '.' && s !== '..')
    .map((s) => (s.startsWith('.') ? `_${s.slice(1)}` : s).slice(0, 120));
  if (segments.length === 0) return undefined;
  return segments.slice(-8).join('/');
}

export function extractWorkFiles(text: string): WorkFile[] {
  const files: WorkFile[] = [];
  for (const m of text.matchAll(/<work\s+filename\s*=\s*(?:"([^"]*)"|'([^']*)')\s*>([\s\S]*?)<\/work>/g)) {
    const name = sanitizeWorkName(m[1] ?? m[2] ?? '');
    if (name) files.push({ name, content: m[3]!.replace(/^\n/, '') });
  }
  return files;
}
