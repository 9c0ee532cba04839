// `atlas claude install` / `uninstall`: atlas's handlers merged into a Claude Code settings file
// as text edits, the user's keys and hooks kept byte for byte, nothing added twice, and uninstall
// putting the file back exactly.
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readFileSync, realpathSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { CLAUDE_HOOK_EVENTS } from '../src/integrations/claude/event.js';
import { scanJson } from '../src/integrations/claude/json-spans.js';
import { hookCommand, installHooks, isAtlasHookCommand, launchSettings, uninstallHooks } from '../src/integrations/claude/settings.js';
import { ATLAS_BIN, HOOK_BIN, runAsync } from './helpers/claude-hook-fixtures.js';
import { ensureBuilt, git } from './helpers/engine-fixtures.js';

const CMD = hookCommand('/usr/bin/node', '/opt/atlas/bin/claude-hook.cjs');

/** A user's settings with odd formatting, own hooks and keys. */
const USER_SETTINGS = `{
    "model": "opus",
    "permissions": { "allow": ["Bash(npm test)"], "deny": [] },
    "hooks": {
        "PreToolUse": [
            { "matcher": "Bash", "hooks": [ { "type": "command", "command": "~/bin/check.sh" } ] }
        ],
        "Notification": [{"hooks":[{"type":"command","command":"notify-send hi"}]}]
    },
    "env": {"FOO": "bar \\u00e9"}
}
`;

describe('settings text edits', () => {
  it('adds every event once, keeps the user text byte for byte, and removes exactly what it added', () => {
    const installed = installHooks(USER_SETTINGS, CMD);
    const parsed = JSON.parse(installed);
    for (const e of CLAUDE_HOOK_EVENTS) expect(parsed.hooks[e].filter((g: any) => isAtlasHookCommand(g.hooks[0].command))).toHaveLength(1);
    expect(parsed.hooks.PreToolUse[0].hooks[0].command).toBe('~/bin/check.sh');
    expect(parsed.hooks.PreToolUse[1]).toEqual({ matcher: '*', hooks: [{ type: 'command', command: CMD, timeout: 30 }] });
    expect(parsed.hooks.Stop[0].matcher).toBeUndefined();
    expect(parsed.env.FOO).toBe('bar é');
    // Every line of the user's file is still there, in order.
    let at = 0;
    for (const line of USER_SETTINGS.split('\n')) {
      const found = installed.indexOf(line.replace(/\s+$/, ''), at);
      expect(found, line).toBeGreaterThanOrEqual(0);
      at = found;
    }
    expect(installHooks(installed, CMD)).toBe(installed);
    expect(uninstallHooks(installed)).toEqual({ text: USER_SETTINGS, emptied: false });
  });

  it('moves its entries in place when atlas moved, and handles empty and missing files', () => {
    const first = installHooks(USER_SETTINGS, CMD);
    const moved = installHooks(first, hookCommand('/usr/bin/node', '/new place/x/bin/claude-hook.cjs'));
    expect(moved).toContain("'/new place/x/bin/claude-hook.cjs'");
    expect(moved).not.toContain('/opt/atlas');
    expect(uninstallHooks(moved).text).toBe(USER_SETTINGS);
    const fresh = installHooks(undefined, CMD);
    expect(uninstallHooks(fresh)).toEqual({ text: '{}\n', emptied: true });
    for (const start of [
      '{}',
      '{"a":1}',
      '{\n  "hooks": {}\n}\n',
      '{"hooks":{"Stop":[]}}',
      '{\n\t"hooks": {\n\t\t"Stop": [\n\t\t\t{"hooks": [{"type": "command", "command": "x"}]}\n\t\t]\n\t}\n}',
    ]) {
      const out = installHooks(start, CMD);
      expect(Object.keys(JSON.parse(out).hooks).sort()).toEqual([...CLAUDE_HOOK_EVENTS].sort());
      const back = uninstallHooks(out).text;
      expect(JSON.parse(back)).toEqual(JSON.parse(start === '{"hooks":{"Stop":[]}}' || start.includes('"hooks": {}') ? '{}' : start));
    }
  });

  it('refuses settings it cannot edit safely', () => {
    expect(() => installHooks('[1]', CMD)).toThrow(/not a JSON object/);
    expect(() => installHooks('{"hooks": 3}', CMD)).toThrow(/"hooks" .* not an object/);
    expect(() => installHooks('{"hooks": {"Stop": {}}}', CMD)).toThrow(/hooks.Stop/);
    expect(() => installHooks('{"a": ', CMD)).toThrow();
    expect(uninstallHooks('{"hooks": 1}').text).toBe('{"hooks": 1}');
    expect(() => scanJson('{"a": 1} x')).toThrow(/trailing/);
    expect(() => scanJson('{"a" 1}')).toThrow(/":"/);
    expect(() => scanJson('[1 2]')).toThrow(/","/);
    expect(scanJson('[1, "a\\"b", true, null, -2.5e3]').kind).toBe('array');
  });

  it('builds the launch settings atlas passes with --settings', () => {
    const s = JSON.parse(launchSettings(CMD));
    expect(s.disableAllHooks).toBe(false);
    expect(s.env).toEqual({ ATLAS_CLAUDE_LAUNCHED: '1' });
    expect(Object.keys(s.hooks)).toEqual([...CLAUDE_HOOK_EVENTS]);
    expect(isAtlasHookCommand("'/x y/node' /a/atlas.js claude-hook")).toBe(true);
    expect(isAtlasHookCommand("node '/x y/bin/claude-hook.cjs'")).toBe(true);
    expect(isAtlasHookCommand('my-hook claude-hook')).toBe(false);
  });
});

describe('atlas claude install / uninstall (the built CLI)', () => {
  beforeAll(() => ensureBuilt(), 180_000);

  it('keeps the user file byte for byte through install, install again and uninstall, in each scope', async () => {
    const base = realpathSync(mkdtempSync(join(tmpdir(), 'atlas-claude-install-')));
    const repo = join(base, 'repo');
    mkdirSync(join(repo, '.claude'), { recursive: true });
    git(repo, 'init', '-q');
    const projectFile = join(repo, '.claude', 'settings.json');
    writeFileSync(projectFile, USER_SETTINGS);
    chmodSync(projectFile, 0o600);
    const env = { ...process.env, ATLAS_HOME: join(base, 'home'), CLAUDE_CONFIG_DIR: join(base, 'user-claude') };
    const cli = (...args: string[]) => runAsync(process.execPath, [ATLAS_BIN, ...args], { cwd: repo, env });

    const first = await cli('claude', 'install');
    expect(first.code, first.stderr).toBe(0);
    expect(first.stdout).toContain("atlas's hooks added");
    const installed = readFileSync(projectFile, 'utf8');
    expect(JSON.parse(installed).hooks.SessionStart[0].hooks[0].command).toBe(hookCommand(process.execPath, HOOK_BIN));
    expect(statSync(projectFile).mode & 0o777).toBe(0o600);
    const again = await cli('claude', 'install', '--json');
    expect(JSON.parse(again.stdout)).toMatchObject({ action: 'unchanged', scope: 'project' });
    expect(readFileSync(projectFile, 'utf8')).toBe(installed);
    const removed = await cli('claude', 'uninstall');
    expect(removed.stdout).toContain('removed');
    expect(readFileSync(projectFile, 'utf8')).toBe(USER_SETTINGS);
    expect((await cli('claude', 'uninstall')).stdout).toContain('not there');

    // local and user scopes: files atlas creates are deleted again by uninstall.
    expect((await cli('claude', 'install', '--scope', 'local')).stdout).toContain('created');
    expect(existsSync(join(repo, '.claude', 'settings.local.json'))).toBe(true);
    expect((await cli('claude', 'uninstall', '--scope', 'local')).stdout).toContain('deleted');
    expect(existsSync(join(repo, '.claude', 'settings.local.json'))).toBe(false);
    await cli('claude', 'install', '--scope', 'user');
    expect(existsSync(join(base, 'user-claude', 'settings.json'))).toBe(true);
    await cli('claude', 'uninstall', '--scope', 'user');
    expect(existsSync(join(base, 'user-claude', 'settings.json'))).toBe(false);

    writeFileSync(projectFile, '{ "hooks": ');
    const broken = await cli('claude', 'install');
    expect(broken.code).toBe(2);
    expect(broken.stderr).toMatch(/not a settings file atlas can edit/);
    expect(readFileSync(projectFile, 'utf8')).toBe('{ "hooks": ');
  });
});
