// A Claude Code session's files travelling with a conversation (src/server/conversations/claude-session.ts) are
// agent-written, or came from the store: kept and placed only as regular files under a UUID, into
// real folders, by new temp files renamed into place. A link, a bad id, a session too large, odd
// names or a project folder that is a link are refused without anything written outside.
import {
  closeSync,
  existsSync,
  ftruncateSync,
  lstatSync,
  mkdirSync,
  openSync,
  readdirSync,
  readFileSync,
  realpathSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import {
  claudeProjectDir,
  claudeProjectName,
  keepSession,
  MAX_SESSION_BYTES,
  placeSession,
  SESSION_FOLDER,
} from '../src/server/conversations/claude-session.js';
import { tempDir } from './helpers/core-fixtures.js';

const ID = '6068594b-2c76-4220-ad6c-ca43f5da2573';
const LINE = `${JSON.stringify({ type: 'user', sessionId: ID, message: { role: 'user', content: 'hello' } })}\n`;

/** A server conversation's folder and workspace, and a Claude Code folder of its own. */
function places() {
  const root = realpathSync(tempDir());
  const dir = join(root, 'server', 'accounts', 'alice', 'conversations', 'c');
  const workspace = join(dir, 'workspace');
  mkdirSync(workspace, { recursive: true });
  const env = { ...process.env, CLAUDE_CONFIG_DIR: join(root, 'claude') };
  return { root, dir, workspace, env };
}

function notes(): { note: (t: string) => void; seen: string[] } {
  const seen: string[] = [];
  return { note: (t) => seen.push(t), seen };
}

describe('a Claude Code session kept with its conversation and placed on another server', () => {
  it('names the project folder as Claude Code does, hashing a long path', () => {
    expect(claudeProjectName('/tmp/wsB.x_y-6OgaPk')).toBe('-tmp-wsB-x-y-6OgaPk');
    const long = `/srv/${'a'.repeat(300)}`;
    const name = claudeProjectName(long);
    expect(name.slice(0, 200)).toBe(`-srv-${'a'.repeat(195)}`);
    expect(name).toMatch(/^.{200}-[0-9a-z]+$/);
  });

  it('keeps the transcript and its folder, and places them under another workspace path, resumable there', () => {
    const a = places();
    const project = claudeProjectDir(a.workspace, a.env);
    mkdirSync(join(project, ID, 'subagents'), { recursive: true });
    writeFileSync(join(project, `${ID}.jsonl`), LINE);
    writeFileSync(join(project, ID, 'subagents', 'agent-1.jsonl'), LINE);
    // An older session's copy goes; the sync state beside it stays.
    mkdirSync(join(a.dir, SESSION_FOLDER), { recursive: true });
    writeFileSync(join(a.dir, SESSION_FOLDER, 'aaaaaaaa-2c76-4220-ad6c-ca43f5da2573.jsonl'), LINE);
    writeFileSync(join(a.dir, SESSION_FOLDER, '.sandbox-state'), '{}');
    const n = notes();
    expect(keepSession(a, ID, n.note)).toBe(true);
    expect(n.seen).toEqual([]);
    expect(readdirSync(join(a.dir, SESSION_FOLDER)).sort()).toEqual(['.sandbox-state', ID, `${ID}.jsonl`]);

    // Another server: another home (so another project folder name), another Claude Code folder.
    const b = places();
    mkdirSync(join(b.dir, SESSION_FOLDER), { recursive: true });
    for (const rel of [`${ID}.jsonl`, `${ID}/subagents/agent-1.jsonl`]) {
      mkdirSync(join(b.dir, SESSION_FOLDER, rel, '..'), { recursive: true });
      writeFileSync(join(b.dir, SESSION_FOLDER, rel), readFileSync(join(a.dir, SESSION_FOLDER, rel)));
    }
    expect(claudeProjectDir(b.workspace, b.env)).not.toBe(claudeProjectDir(a.workspace, b.env));
    expect(placeSession(b, ID, n.note)).toBe(true);
    const placed = claudeProjectDir(b.workspace, b.env);
    expect(readFileSync(join(placed, `${ID}.jsonl`), 'utf8')).toBe(LINE);
    expect(readFileSync(join(placed, ID, 'subagents', 'agent-1.jsonl'), 'utf8')).toBe(LINE);
    expect(lstatSync(join(placed, `${ID}.jsonl`)).mode & 0o777).toBe(0o600);
    // No temp file left behind.
    expect(readdirSync(placed).sort()).toEqual([ID, `${ID}.jsonl`]);
    // This server's own transcript, as long or longer (it ran the last turn), is left as it is.
    writeFileSync(join(placed, `${ID}.jsonl`), LINE + LINE);
    expect(placeSession(b, ID, n.note)).toBe(true);
    expect(readFileSync(join(placed, `${ID}.jsonl`), 'utf8')).toBe(LINE + LINE);
    expect(n.seen).toEqual([]);
  });

  it('refuses a planted session: a bad id, a link, a huge file, odd names, a project folder that is a link', () => {
    const outside = realpathSync(tempDir());
    const secret = join(outside, 'secret.txt');
    writeFileSync(secret, 'do not copy\n');

    // A bad id is never used as a name.
    const bad = places();
    const n = notes();
    mkdirSync(join(bad.dir, SESSION_FOLDER), { recursive: true });
    writeFileSync(join(bad.dir, SESSION_FOLDER, '..jsonl'), LINE);
    expect(placeSession(bad, '../../x', n.note)).toBe(false);
    expect(keepSession(bad, '../../x', n.note)).toBe(false);
    expect(existsSync(join(bad.env.CLAUDE_CONFIG_DIR, 'projects'))).toBe(false);

    // The stored copy is a link to a file outside: refused, nothing placed.
    const linked = places();
    mkdirSync(join(linked.dir, SESSION_FOLDER), { recursive: true });
    symlinkSync(secret, join(linked.dir, SESSION_FOLDER, `${ID}.jsonl`));
    expect(placeSession(linked, ID, n.note)).toBe(false);
    expect(existsSync(claudeProjectDir(linked.workspace, linked.env))).toBe(false);

    // Too large (a sparse file: nothing is read).
    const huge = places();
    mkdirSync(join(huge.dir, SESSION_FOLDER), { recursive: true });
    const fd = openSync(join(huge.dir, SESSION_FOLDER, `${ID}.jsonl`), 'w');
    ftruncateSync(fd, MAX_SESSION_BYTES + 1);
    closeSync(fd);
    expect(placeSession(huge, ID, n.note)).toBe(false);
    expect(existsSync(claudeProjectDir(huge.workspace, huge.env))).toBe(false);

    // A link or an odd name inside the session's folder.
    const inner = places();
    mkdirSync(join(inner.dir, SESSION_FOLDER, ID), { recursive: true });
    writeFileSync(join(inner.dir, SESSION_FOLDER, `${ID}.jsonl`), LINE);
    symlinkSync(outside, join(inner.dir, SESSION_FOLDER, ID, 'subagents'));
    expect(placeSession(inner, ID, n.note)).toBe(false);
    expect(existsSync(claudeProjectDir(inner.workspace, inner.env))).toBe(false);

    // Claude Code's project folder for this workspace is a link the agent planted: nothing is
    // written through it.
    const through = places();
    mkdirSync(join(through.dir, SESSION_FOLDER), { recursive: true });
    writeFileSync(join(through.dir, SESSION_FOLDER, `${ID}.jsonl`), LINE);
    const project = claudeProjectDir(through.workspace, through.env);
    mkdirSync(join(project, '..'), { recursive: true });
    symlinkSync(outside, project);
    expect(placeSession(through, ID, n.note)).toBe(false);
    expect(readdirSync(outside)).toEqual(['secret.txt']);

    // After a turn, a transcript the agent swapped for a link is not kept.
    const kept = places();
    const own = claudeProjectDir(kept.workspace, kept.env);
    mkdirSync(own, { recursive: true });
    symlinkSync(secret, join(own, `${ID}.jsonl`));
    expect(keepSession(kept, ID, n.note)).toBe(false);
    expect(existsSync(join(kept.dir, SESSION_FOLDER, `${ID}.jsonl`))).toBe(false);

    expect(readFileSync(secret, 'utf8')).toBe('do not copy\n');
    expect(n.seen.length).toBeGreaterThanOrEqual(6);
    for (const text of n.seen) expect(text).not.toContain('hello');
  });
});
