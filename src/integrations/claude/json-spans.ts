// Where things are in a JSON text, so `atlas claude install` can insert and remove its own
// entries without re-serialising the file: every byte it did not add stays as the user wrote it.

export interface Span {
  start: number;
  end: number;
}

export interface MemberSpan {
  key: string;
  /** From the key's opening quote to the end of its value. */
  span: Span;
  value: ValueSpan;
}

export type ValueSpan =
  | (Span & { kind: 'object'; members: MemberSpan[] })
  | (Span & { kind: 'array'; items: ValueSpan[] })
  | (Span & { kind: 'scalar' });

export class JsonSpanError extends Error {
  override name = 'JsonSpanError';
}

/** Spans of a JSON document (which must also be valid for JSON.parse). */
export function scanJson(text: string): ValueSpan {
  let i = 0;
  const ws = () => {
    while (i < text.length && /\s/.test(text[i]!)) i++;
  };
  const fail = (what: string): never => {
    throw new JsonSpanError(`${what} at offset ${i}`);
  };
  const string = (): string => {
    const start = i;
    i++;
    while (i < text.length && text[i] !== '"') i += text[i] === '\\' ? 2 : 1;
    if (i >= text.length) fail('unterminated string');
    i++;
    return JSON.parse(text.slice(start, i)) as string;
  };
  const value = (): ValueSpan => {
    ws();
    const start = i;
    const c = text[i];
    if (c === '{') {
      i++;
      const members: MemberSpan[] = [];
      ws();
      if (text[i] === '}') return { kind: 'object', start, end: ++i, members };
      for (;;) {
        ws();
        if (text[i] !== '"') fail('expected a key');
        const keyStart = i;
        const key = string();
        ws();
        if (text[i] !== ':') fail('expected ":"');
        i++;
        const v = value();
        members.push({ key, span: { start: keyStart, end: v.end }, value: v });
        ws();
        if (text[i] === ',') {
          i++;
          continue;
        }
        if (text[i] === '}') return { kind: 'object', start, end: ++i, members };
        fail('expected "," or "}"');
      }
    }
    if (c === '[') {
      i++;
      const items: ValueSpan[] = [];
      ws();
      if (text[i] === ']') return { kind: 'array', start, end: ++i, items };
      for (;;) {
        items.push(value());
        ws();
        if (text[i] === ',') {
          i++;
          continue;
        }
        if (text[i] === ']') return { kind: 'array', start, end: ++i, items };
        fail('expected "," or "]"');
      }
    }
    if (c === '"') {
      string();
      return { kind: 'scalar', start, end: i };
    }
    const m = /^(?:-?\d+(?:\.\d+)?(?:[eE][+-]?\d+)?|true|false|null)/.exec(text.slice(i, i + 64));
    if (!m) fail('unexpected character');
    i += m![0].length;
    return { kind: 'scalar', start, end: i };
  };
  const root = value();
  ws();
  if (i !== text.length) fail('trailing text');
  return root;
}

/** The indentation of the line holding `offset`. */
export function indentAt(text: string, offset: number): string {
  const lineStart = text.lastIndexOf('\n', offset - 1) + 1;
  return /^[ \t]*/.exec(text.slice(lineStart))![0];
}

/** The indent unit the file uses (two spaces when it cannot tell). */
export function indentUnit(text: string): string {
  const m = /\n([ \t]+)\S/.exec(text);
  return m ? m[1]! : '  ';
}
