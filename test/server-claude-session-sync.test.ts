// The session's own tree in the store, in process (the cluster test runs it through real servers):
// pushed after a turn, pulled by another server's folder, and never a failure of the turn.
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { pushSession, restoreSession, sessionBuiltins, sessionTravels } from '../src/server/conversations/claude-session-sync.js';
import { sessionSyncTarget } from '../src/server/conversations/lifecycle-adapter.js';
import { configWith, readTree, removeScratch, scratch } from './helpers/sync-fixtures.js';

afterEach(removeScratch);

/** A conversation's folder as a server keeps it: accounts/<account>/conversations/<id>. */
function conversationDir(home: string, id: string): string {
  const dir = join(home, 'server', 'accounts', 'alice', 'conversations', id);
  mkdirSync(dir, { recursive: true });
  return dir;
}

describe("a Claude Code session's tree in the store", () => {
  it('a push from one server is what a restore on another finds; the user sync.exclude does not apply to it', async () => {
    const home = scratch('atlas-home-');
    const config = configWith({ store: join(home, 'store'), exclude: ['*.jsonl'], init_from_store: true });
    const warnings: string[] = [];
    const warn = (text: string) => warnings.push(text);
    const a = sessionSyncTarget(conversationDir(join(home, 'a'), 'c1'));
    mkdirSync(join(a.root, 'projects'), { recursive: true });
    writeFileSync(join(a.root, 'projects', '11111111-2222-4333-8444-555555555555.jsonl'), '{"type":"user"}\n');
    let fenced = 0;
    await pushSession(home, config, a, warn, async () => void fenced++);
    expect(fenced).toBe(1);
    const b = sessionSyncTarget(conversationDir(join(home, 'b'), 'c1'));
    expect(b.tree).toBe(a.tree);
    await restoreSession(home, config, b, warn);
    expect(readTree(b.root)).toEqual({ 'projects/11111111-2222-4333-8444-555555555555.jsonl': '{"type":"user"}\n' });
    expect(warnings).toEqual([]);
  });

  it('without a store nothing travels; a folder without a session pushes nothing; a store that fails is a warning, never a throw', async () => {
    const home = scratch('atlas-home-');
    const none = configWith({ store: '' });
    expect(sessionTravels(none)).toBe(false);
    expect(sessionBuiltins(home, none, () => {}, sessionSyncTarget)).toEqual({});
    const target = sessionSyncTarget(conversationDir(home, 'c2'));
    const warnings: string[] = [];
    await pushSession(home, none, target, (t) => warnings.push(t));
    await restoreSession(home, none, target, (t) => warnings.push(t));
    const config = configWith({ store: join(home, 'store') });
    await pushSession(home, config, target, (t) => warnings.push(t));
    expect(warnings).toEqual([]);
    // A store path that is a file: both directions warn and return.
    const file = join(home, 'not-a-folder');
    writeFileSync(file, 'x');
    const broken = configWith({ store: file, init_from_store: true });
    mkdirSync(target.root, { recursive: true });
    writeFileSync(join(target.root, 'a.jsonl'), '{}\n');
    await pushSession(home, broken, target, (t) => warnings.push(t));
    await restoreSession(home, broken, target, (t) => warnings.push(t));
    expect(warnings).toHaveLength(2);
    expect(warnings[0]).toMatch(/the Claude Code session was not pushed to/);
    expect(warnings[1]).toMatch(/the Claude Code session was not restored from/);
    const builtins = sessionBuiltins(home, config, () => {}, sessionSyncTarget);
    expect(typeof builtins.on_stream_finish).toBe('function');
  });
});
