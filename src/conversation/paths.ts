// Where a task's conversations live: <task dir>/conversations/<conversation id>/{conversation.json,messages.jsonl}.
import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import { CONVERSATION_FILE_NAME, CONVERSATION_ID_PATTERN, CONVERSATIONS_DIR_NAME, MESSAGES_FILE_NAME } from '../domain/conversation.js';

export function newConversationId(): string {
  return `conv-${randomBytes(6).toString('hex')}`;
}

export function conversationsDir(taskDir: string): string {
  return join(taskDir, CONVERSATIONS_DIR_NAME);
}

/** Only ids of the documented form name a folder: nothing is ever written outside the task's folder. */
export function conversationFiles(taskDir: string, id: string) {
  if (!CONVERSATION_ID_PATTERN.test(id)) throw new Error(`not a conversation id: ${JSON.stringify(id)}`);
  const dir = join(conversationsDir(taskDir), id);
  return { dir, record: join(dir, CONVERSATION_FILE_NAME), messages: join(dir, MESSAGES_FILE_NAME) };
}
