// HOOK.md on the board: a small Markdown reader that emits only known elements (headings,
// paragraphs, lists, code blocks, quotes, rules, and inline code, bold and emphasis). Everything in
// it is text a preact node holds: an agent's `<img onerror>` or `[x](javascript:…)` is shown as
// written, never parsed as HTML, and no link is made.

export type Inline = { kind: 'text' | 'code' | 'strong' | 'em'; text: string };

export type Block =
  | { kind: 'h'; level: number; inline: Inline[] }
  | { kind: 'p'; inline: Inline[] }
  | { kind: 'ul' | 'ol'; items: Inline[][] }
  | { kind: 'pre'; text: string }
  | { kind: 'quote'; inline: Inline[] }
  | { kind: 'table'; head: Inline[][]; rows: Inline[][][] }
  | { kind: 'hr' };

const INLINE = /(`+)(.+?)\1(?!`)|\*\*([^*]+)\*\*|(?<![\w*])\*([^*\s][^*]*)\*(?![\w*])|(?<!\w)_([^_\s][^_]*)_(?!\w)/g;

export function inline(text: string): Inline[] {
  const out: Inline[] = [];
  let at = 0;
  for (const m of text.matchAll(INLINE)) {
    if (m.index > at) out.push({ kind: 'text', text: text.slice(at, m.index) });
    if (m[1] !== undefined) out.push({ kind: 'code', text: m[2]!.replace(/^ (.*) $/, '$1') });
    else if (m[3] !== undefined) out.push({ kind: 'strong', text: m[3] });
    else out.push({ kind: 'em', text: (m[4] ?? m[5])! });
    at = m.index + m[0].length;
  }
  if (at < text.length) out.push({ kind: 'text', text: text.slice(at) });
  return out;
}

/** A table row's cells: split on the pipes that are not escaped (`\|` is a pipe in a cell). */
function cells(line: string): Inline[][] {
  const inner = line
    .trim()
    .replace(/^\|/, '')
    .replace(/(?<!\\)\|$/, '');
  return inner.split(/(?<!\\)\|/).map((c) => inline(c.trim().replace(/\\\|/g, '|')));
}

export function parseMarkdown(text: string): Block[] {
  const blocks: Block[] = [];
  const lines = text.replace(/\r\n?/g, '\n').split('\n');
  let para: string[] = [];
  const flush = () => {
    if (para.length) blocks.push({ kind: 'p', inline: inline(para.join(' ')) });
    para = [];
  };
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i]!;
    const fence = /^\s*(```+|~~~+)/.exec(line);
    if (fence) {
      flush();
      const body: string[] = [];
      for (i++; i < lines.length && !lines[i]!.trimStart().startsWith(fence[1]!); i++) body.push(lines[i]!);
      blocks.push({ kind: 'pre', text: body.join('\n') });
      continue;
    }
    const h = /^(#{1,6})\s+(.*?)\s*#*\s*$/.exec(line);
    const item = /^\s*(?:([-*+])|(\d{1,9})[.)])\s+(.*)$/.exec(line);
    if (/^\s*\|/.test(line)) {
      flush();
      const rows = [line];
      while (i + 1 < lines.length && /^\s*\|/.test(lines[i + 1]!)) rows.push(lines[++i]!);
      const body = rows.filter((r) => !/^\s*\|?(\s*:?-{2,}:?\s*\|)+\s*:?-*:?\s*$/.test(r));
      blocks.push({ kind: 'table', head: cells(body[0]!), rows: body.slice(1).map(cells) });
    } else if (h) {
      flush();
      blocks.push({ kind: 'h', level: h[1]!.length, inline: inline(h[2]!) });
    } else if (/^\s*([-*_])(\s*\1){2,}\s*$/.test(line)) {
      flush();
      blocks.push({ kind: 'hr' });
    } else if (item) {
      flush();
      const kind = item[1] ? 'ul' : 'ol';
      const last = blocks[blocks.length - 1];
      if (last && last.kind === kind) last.items.push(inline(item[3]!));
      else blocks.push({ kind, items: [inline(item[3]!)] });
    } else if (/^\s*>/.test(line)) {
      flush();
      blocks.push({ kind: 'quote', inline: inline(line.replace(/^\s*>\s?/, '')) });
    } else if (/^ {4}|\t/.test(line) && para.length === 0) {
      const body = [line.replace(/^ {4}|\t/, '')];
      while (i + 1 < lines.length && /^ {4}|\t/.test(lines[i + 1]!)) body.push(lines[++i]!.replace(/^ {4}|\t/, ''));
      blocks.push({ kind: 'pre', text: body.join('\n') });
    } else if (line.trim() === '') {
      flush();
    } else {
      para.push(line.trim());
    }
  }
  flush();
  return blocks;
}
