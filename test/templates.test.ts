// Template parsing, the search order and validation command detection.
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { AtlasError } from '../src/domain/errors.js';
import { detectValidationCommands, makefileTargets, resolveValidationCommands } from '../src/templates/detect-validation.js';
import { parseTemplateData, parseTemplateText } from '../src/templates/parse.js';
import { listTemplates, loadTemplate } from '../src/templates/search.js';

const dirs: string[] = [];
function tempDir(files: Record<string, string> = {}): string {
  const dir = mkdtempSync(join(tmpdir(), 'atlas-tpl-'));
  dirs.push(dir);
  for (const [path, content] of Object.entries(files)) {
    mkdirSync(join(dir, path, '..'), { recursive: true });
    writeFileSync(join(dir, path), content);
  }
  return dir;
}
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

function parseError(data: unknown): AtlasError {
  try {
    parseTemplateData(data, '/repo/.atlas/templates/t.yaml', 't');
  } catch (error) {
    expect(error).toBeInstanceOf(AtlasError);
    return error as AtlasError;
  }
  throw new Error('expected the template to be rejected');
}

describe('template parsing', () => {
  it('fills defaults', () => {
    const t = parseTemplateData(
      {
        steps: [
          { name: 'a', type: 'ai', prompt: 'do' },
          { name: 'v', type: 'validation', commands: 'npm test' },
          { name: 'c', type: 'git', action: 'commit' },
        ],
      },
      'f.yaml',
      'mine',
    );
    expect(t).toMatchObject({ name: 'mine', description: '', branch_prefix: 'atlas/', worktree: true, source: 'f.yaml' });
    expect(t.steps[0]).toEqual({ name: 'a', type: 'ai', prompt: 'do', max_attempts: 3, on_failure: 'fail' });
    expect(t.steps[1]).toEqual({ name: 'v', type: 'validation', commands: ['npm test'], max_attempts: 1, on_failure: 'fail' });
    expect(t.steps[2]).toMatchObject({ type: 'git', action: 'commit', max_attempts: 1 });
  });

  it('reads timeouts, attempts, on_failure and idempotent', () => {
    const t = parseTemplateData(
      { steps: [{ name: 'x', type: 'command', run: ['a', 'b'], timeout: '1m30s', max_attempts: 2, on_failure: 'ask', idempotent: true }] },
      'f',
      'f',
    );
    expect(t.steps[0]).toEqual({
      name: 'x',
      type: 'command',
      run: ['a', 'b'],
      timeout_ms: 90_000,
      max_attempts: 2,
      on_failure: 'ask',
      idempotent: true,
    });
  });

  it('names the file, the step by index and name, the field and what is allowed', () => {
    const bad = parseError({
      steps: [
        { name: 'ok', type: 'ai', prompt: 'p' },
        { name: 'implement', type: 'ai', prompt: 'p', max_attempts: 'three' },
      ],
    });
    expect(bad.message).toBe(
      '/repo/.atlas/templates/t.yaml: step 2 "implement": field "max_attempts": expected a whole number from 1 to 100, got "three"',
    );
    expect(bad.exitCode).toBe(2);

    const type = parseError({ steps: [{ name: 'x', type: 'shell' }] });
    expect(type.message).toContain('step 1 "x": field "type": unknown step type "shell"');
    expect(type.hint).toBe('allowed: ai, command, validation, git, human');

    const field = parseError({ steps: [{ name: 'x', type: 'validation', run: 'npm test' }] });
    expect(field.message).toContain('step 1 "x": field "run": is not a field of validation steps');
    expect(field.hint).toContain('commands');

    expect(parseError({ steps: [{ name: 'x', type: 'ai' }] }).message).toContain('step 1 "x": field "prompt": is required');
    expect(parseError({ steps: [{ name: 'x', type: 'git', action: 'merge' }] }).hint).toBe('allowed: commit, push, pr');
    expect(parseError({ steps: [{ name: 'x', type: 'command', run: 'a', timeout: '5 minutes' }] }).message).toContain(
      'field "timeout": expected a duration',
    );
    expect(parseError({ steps: [{ name: 'x', type: 'command', run: 'a', on_failure: 'retry' }] }).message).toContain(
      'field "on_failure": expected fail or ask',
    );
    expect(parseError({ steps: [{ type: 'ai', prompt: 'p' }] }).message).toContain('step 1: field "name": is required');
    expect(parseError({ steps: [{ name: 'a/b', type: 'command', run: 'x' }] }).message).toContain('cannot be used in file names');
    expect(
      parseError({
        steps: [
          { name: 'a', type: 'command', run: 'x' },
          { name: 'a', type: 'command', run: 'y' },
        ],
      }).message,
    ).toContain('step 2 "a": field "name": another step is already named "a"');
    expect(parseError({ steps: [] }).message).toContain('field "steps": expected a non-empty list');
    expect(parseError({ steps: [{ name: 'a', type: 'command', run: 'x' }], worktre: false }).message).toContain(
      'field "worktre": is not a template field',
    );
    expect(parseError({ steps: [{ name: 'a', type: 'command', run: [] }] }).message).toContain('field "run": is an empty list');
  });

  it('reports YAML syntax errors with the file', async () => {
    await expect(parseTemplateText('steps: [\n', '/x/bad.yaml', 'bad')).rejects.toThrow(/^\/x\/bad.yaml: not valid YAML/);
  });

  it('parses the built-in templates', async () => {
    const home = tempDir();
    const all = await listTemplates({ home, dirs: [], cwd: home });
    const builtins = all.filter((t) => t.origin === 'builtin');
    expect(builtins.map((t) => t.name).sort()).toEqual(['bugfix', 'check', 'feature']);
    for (const t of builtins) expect(t.error).toBeUndefined();
    const check = builtins.find((t) => t.name === 'check')!.template!;
    expect(check.worktree).toBe(false);
    expect(check.steps.map((s) => s.type)).toEqual(['validation']);
    expect(builtins.find((t) => t.name === 'bugfix')!.template!.steps.map((s) => s.type)).toEqual(['ai', 'ai', 'git', 'validation']);
  });
});

describe('template search order', () => {
  it('prefers the repository, then config dirs, then ATLAS_HOME, then built-in', async () => {
    const tpl = (d: string) => `description: ${d}\nsteps:\n  - name: s\n    type: command\n    run: "true"\n`;
    const repo = tempDir({ '.atlas/templates/check.yaml': tpl('repo check') });
    const extra = tempDir({ 'check.yaml': tpl('extra check'), 'bugfix.yml': tpl('extra bugfix') });
    const home = tempDir({ 'templates/bugfix.yaml': tpl('home bugfix'), 'templates/feature.yaml': tpl('home feature') });
    const options = { repoRoot: repo, home, dirs: [extra], cwd: repo };
    expect((await loadTemplate('check', options)).template.description).toBe('repo check');
    expect(await loadTemplate('bugfix', options)).toMatchObject({ origin: 'config', template: { description: 'extra bugfix' } });
    expect(await loadTemplate('feature', options)).toMatchObject({ origin: 'home', template: { description: 'home feature' } });
    expect((await loadTemplate('check', { home, dirs: [], cwd: home })).origin).toBe('builtin');
    const listed = await listTemplates(options);
    expect(listed.filter((l) => l.name === 'check').map((l) => [l.origin, l.shadowed])).toEqual([
      ['repo', false],
      ['config', true],
      ['builtin', true],
    ]);
  });

  it('says which templates exist when the name is unknown', async () => {
    const home = tempDir();
    await expect(loadTemplate('nope', { home, dirs: [], cwd: home })).rejects.toMatchObject({
      exitCode: 4,
      hint: expect.stringContaining('available: bugfix, check, feature'),
    });
  });
});

describe('validation command detection', () => {
  it('package.json: lint, typecheck, test; skips the npm placeholder test', () => {
    const dir = tempDir({
      'package.json': JSON.stringify({ scripts: { lint: 'eslint .', typecheck: 'tsc', test: 'vitest run', build: 'x' } }),
    });
    expect(detectValidationCommands(dir)).toEqual({
      commands: ['npm run lint', 'npm run typecheck', 'npm test'],
      source: 'package.json scripts',
    });
    const placeholder = tempDir({
      'package.json': JSON.stringify({ scripts: { 'type-check': 'tsc', test: 'echo "Error: no test specified" && exit 1' } }),
    });
    expect(detectValidationCommands(placeholder)?.commands).toEqual(['npm run type-check']);
  });

  it('Makefile targets lint, test, check (not variables)', () => {
    expect([...makefileTargets('CC := gcc\nX ::= y\nlint test: deps\n\techo hi\ncheck:\nbuild: ; x\n')]).toEqual([
      'lint',
      'test',
      'check',
      'build',
    ]);
    const dir = tempDir({ Makefile: 'test:\n\tgo test ./...\ncheck: test\nrelease:\n' });
    expect(detectValidationCommands(dir)).toEqual({ commands: ['make test', 'make check'], source: 'Makefile' });
  });

  it('go.mod, Cargo.toml, pyproject.toml', () => {
    expect(detectValidationCommands(tempDir({ 'go.mod': 'module x\n' }))).toEqual({
      commands: ['go vet ./...', 'go test ./...'],
      source: 'go.mod',
    });
    expect(detectValidationCommands(tempDir({ 'Cargo.toml': '[package]\n' }))).toEqual({ commands: ['cargo test'], source: 'Cargo.toml' });
    expect(detectValidationCommands(tempDir({ 'pyproject.toml': '[project]\n' }))).toEqual({
      commands: ['python3 -m pytest'],
      source: 'pyproject.toml',
    });
  });

  it('the first source with commands wins; package.json without scripts falls through', () => {
    const dir = tempDir({ 'package.json': '{"name":"x"}', Makefile: 'lint:\n', 'go.mod': 'module x\n' });
    expect(detectValidationCommands(dir)?.source).toBe('Makefile');
  });

  it('step commands, then config, then detection; nothing found names validation.commands', () => {
    const empty = tempDir();
    expect(resolveValidationCommands(['a'], ['b'], empty).commands).toEqual(['a']);
    expect(resolveValidationCommands([], ['b'], empty)).toEqual({ commands: ['b'], source: 'config validation.commands' });
    expect(() => resolveValidationCommands([], [], empty)).toThrow(/no validation commands found/);
    try {
      resolveValidationCommands([], [], empty);
    } catch (error) {
      expect((error as AtlasError).hint).toContain('validation.commands in .atlas/config.yaml');
    }
  });
});
