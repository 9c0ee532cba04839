// Claude Code fires Stop as the turn ends, and under load before the transcript holds the turn's
// last assistant message: usage read at that moment misses it. The Stop payload carries that
// message's text, so the reader waits (bounded) until the transcript's last assistant message is
// it; without the text, until the last message is not a tool call (one that is has a successor).
import { readFileSync } from 'node:fs';

interface Block {
  type?: unknown;
  text?: unknown;
}

/** The last assistant message's blocks (one transcript line per block, joined by message id). */
function lastAssistantBlocks(text: string): Block[] {
  const lines = text.split('\n');
  let id: string | undefined;
  const blocks: Block[] = [];
  for (let i = lines.length - 1; i >= 0; i--) {
    const line = lines[i]!;
    if (!line.includes('"assistant"')) continue;
    let entry: { type?: unknown; message?: { id?: unknown; content?: unknown } };
    try {
      entry = JSON.parse(line);
    } catch {
      continue; // a line being written as we read
    }
    if (entry.type !== 'assistant' || typeof entry.message?.id !== 'string') continue;
    if (id === undefined) id = entry.message.id;
    else if (entry.message.id !== id) break;
    if (Array.isArray(entry.message.content)) blocks.unshift(...(entry.message.content as Block[]));
  }
  return blocks;
}

const squash = (s: string) => s.replace(/\s+/g, ' ').trim();

/** Does the transcript hold the turn's final assistant message? */
export function transcriptHasFinalMessage(text: string, lastAssistantMessage: string | undefined): boolean {
  const blocks = lastAssistantBlocks(text);
  if (blocks.length === 0) return false;
  if (blocks.some((b) => b.type === 'tool_use')) return false;
  if (!lastAssistantMessage || !squash(lastAssistantMessage)) return true;
  const written = squash(
    blocks
      .filter((b) => b.type === 'text' && typeof b.text === 'string')
      .map((b) => b.text as string)
      .join('\n'),
  );
  return written !== '' && (written === squash(lastAssistantMessage) || squash(lastAssistantMessage).endsWith(written));
}

/**
 * Resolves once the transcript holds the final message, or after `timeoutMs` (the usage is then
 * read as it is: a transcript that never gets the message must not hold the hook up).
 */
export async function waitForFinalMessage(
  path: string,
  lastAssistantMessage: string | undefined,
  timeoutMs = 2000,
  pollMs = 25,
): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    let text = '';
    try {
      text = readFileSync(path, 'utf8');
    } catch {
      // not there yet
    }
    if (transcriptHasFinalMessage(text, lastAssistantMessage)) return true;
    if (Date.now() >= deadline) return false;
    await new Promise((r) => setTimeout(r, pollMs));
  }
}
