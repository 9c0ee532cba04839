// A command's colours on the board: ANSI SGR sequences become runs of text with class names
// (style.css maps them to the page's palette). Only the text is ever drawn, as text; every other
// escape sequence (cursor moves, titles, links) is dropped.

export interface AnsiRun {
  text: string;
  /** e.g. "ansi-fg-1 ansi-bold"; empty for plain text. */
  cls: string;
}

interface Pen {
  fg?: number;
  bg?: number;
  bold?: boolean;
  dim?: boolean;
  italic?: boolean;
  underline?: boolean;
}

// CSI … final byte, OSC … BEL/ST, and the other escapes (intermediate bytes, then one final byte).
const ESCAPES = /\x1b\[([0-9;?]*)([@-~])|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)?|\x1b[\x20-\x2f]*[\x30-\x7e]?/g;

function classOf(p: Pen): string {
  const out: string[] = [];
  if (p.fg !== undefined) out.push(`ansi-fg-${p.fg}`);
  if (p.bg !== undefined) out.push(`ansi-bg-${p.bg}`);
  if (p.bold) out.push('ansi-bold');
  if (p.dim) out.push('ansi-dim');
  if (p.italic) out.push('ansi-italic');
  if (p.underline) out.push('ansi-underline');
  return out.join(' ');
}

function apply(pen: Pen, params: string): Pen {
  const codes = params === '' ? [0] : params.split(';').map((c) => Number(c) || 0);
  let p = { ...pen };
  for (let i = 0; i < codes.length; i++) {
    const c = codes[i]!;
    if (c === 0) p = {};
    else if (c === 1) p.bold = true;
    else if (c === 2) p.dim = true;
    else if (c === 3) p.italic = true;
    else if (c === 4) p.underline = true;
    else if (c === 22) p.bold = p.dim = false;
    else if (c === 23) p.italic = false;
    else if (c === 24) p.underline = false;
    else if (c >= 30 && c <= 37) p.fg = c - 30;
    else if (c >= 90 && c <= 97) p.fg = c - 90 + 8;
    else if (c === 39) delete p.fg;
    else if (c >= 40 && c <= 47) p.bg = c - 40;
    else if (c >= 100 && c <= 107) p.bg = c - 100 + 8;
    else if (c === 49) delete p.bg;
    else if (c === 38 || c === 48) {
      // 256-colour and true-colour: the first 16 map to the palette, the rest are drawn plain.
      const key = c === 38 ? 'fg' : 'bg';
      if (codes[i + 1] === 5) {
        const n = codes[i + 2] ?? 0;
        if (n < 16) p[key] = n;
        else delete p[key];
        i += 2;
      } else if (codes[i + 1] === 2) {
        delete p[key];
        i += 4;
      }
    }
  }
  return p;
}

/** Splits text with ANSI escapes into runs of plain text, each with its classes; `pen` carries over between lines. */
export function ansiRuns(text: string, pen: Pen = {}): { runs: AnsiRun[]; pen: Pen } {
  const runs: AnsiRun[] = [];
  let at = 0;
  let p = pen;
  const push = (t: string) => {
    if (!t) return;
    const cls = classOf(p);
    const last = runs[runs.length - 1];
    if (last && last.cls === cls) last.text += t;
    else runs.push({ text: t, cls });
  };
  for (const m of text.matchAll(ESCAPES)) {
    push(text.slice(at, m.index));
    at = m.index + m[0].length;
    if (m[2] === 'm' && !m[1]!.includes('?')) p = apply(p, m[1]!);
  }
  push(text.slice(at));
  return { runs, pen: p };
}

/** Text without any escape sequence (for titles and the last line on a card). */
export function stripAnsi(text: string): string {
  return text.replace(ESCAPES, '');
}
