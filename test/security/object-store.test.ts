// Attack family 9 (issue 34): the repository's object store. A sandboxed step sees the
// repository's objects read-only and writes its own into its task's store; they enter the
// repository only through the crossing, which recomputes every id (src/git/cross-objects.ts).
// Forged loose objects, shadowing packs, a blob swapped under pristine validation and another
// task's uncommitted files read with `git cat-file --batch-all-objects` are each tried here.
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { listTaskRefs } from '../../src/store/task-store.js';
import { git } from '../helpers/core-fixtures.js';
import { ensureBuilt } from '../helpers/engine-fixtures.js';
import { skipSandbox } from '../helpers/sandbox-fixtures.js';
import {
  attempts,
  COMMIT_STEP,
  commandStep,
  onlyTask,
  prepareAttack,
  startSandboxed,
  writeTemplate,
} from '../helpers/security-fixtures.js';

beforeAll(() => ensureBuilt());

/** Writes a loose blob object holding file $2's bytes at path $1, whatever id that path names. */
const FORGE = `python3 -c "import sys,zlib;d=open(sys.argv[2],'rb').read();open(sys.argv[1],'wb').write(zlib.compress(b'blob %d\\0'%len(d)+d))"`;
/** The loose-object path of id $o in store $d. */
const LOOSE = '"$d/$(echo $o | cut -c1-2)/$(echo $o | cut -c3-)"';

const FILES = {
  'package.json': '{"name":"victim","scripts":{"test":"sh test.sh"}}\n',
  'lib.js': 'passing\n',
  'test.sh': 'grep -q passing lib.js\n',
};

describe.skipIf(skipSandbox)("the repository's objects", { timeout: 180_000 }, () => {
  it('a step can neither overwrite the loose object behind main:package.json nor plant a pack that shadows main:lib.js', async () => {
    const attack = prepareAttack({ files: FILES });
    const common = join(attack.repo, '.git');
    const setup = `printf 'FORGED\\n' > "$TMPDIR/forged"; d="${common}/objects"`;
    const tries = attempts({
      'loose overwrite': `o=$(git rev-parse main:package.json); mkdir -p "$d/$(echo $o | cut -c1-2)" && rm -f ${LOOSE} && ${FORGE} ${LOOSE} "$TMPDIR/forged" && git cat-file blob main:package.json | grep -q FORGED`,
      'shadowing pack': `o=$(git rev-parse main:lib.js); d="$TMPDIR/st"; mkdir -p "$d/$(echo $o | cut -c1-2)" && ${FORGE} ${LOOSE} "$TMPDIR/forged" && echo $o | GIT_OBJECT_DIRECTORY="$TMPDIR/st" GIT_ALTERNATE_OBJECT_DIRECTORIES= git pack-objects -q "$TMPDIR/p" >/dev/null && cp "$TMPDIR"/p-*.pack "$TMPDIR"/p-*.idx "${common}/objects/pack/"`,
    });
    writeTemplate(attack, commandStep('forge', `echo work > work.txt\n${setup}\n${tries}`) + COMMIT_STEP);
    const result = await startSandboxed(attack);
    expect(result.stdout).not.toMatch(/\| WROTE/);
    expect(result.stdout.match(/\| REFUSED/g)).toHaveLength(2);
    expect(result.code, result.stderr).toBe(0);
    expect(git(attack.repo, 'cat-file', 'blob', 'main:package.json')).toBe(FILES['package.json'].trim());
    expect(git(attack.repo, 'cat-file', 'blob', 'main:lib.js')).toBe('passing');
    git(attack.repo, 'fsck', '--strict', '--no-dangling');
    // The step's own commit crossed, verified.
    const { worktree } = onlyTask(attack.home);
    expect(git(worktree, 'log', '-1', '--format=%s')).toBe('step work');
  });

  it("a blob swapped in the step's own store does not cross: no pristine receipt, the branch back at its base", async () => {
    const attack = prepareAttack({ files: FILES });
    const swap = [
      "printf 'broken\\n' > lib.js && git add lib.js && git commit -qm broken",
      'o=$(git rev-parse HEAD:lib.js); d=${GIT_OBJECT_DIRECTORY:-$(git rev-parse --git-common-dir)/objects}',
      `printf 'passing\\n' > "$TMPDIR/good"; rm -f ${LOOSE} && ${FORGE} ${LOOSE} "$TMPDIR/good" && echo swapped`,
    ].join('\n');
    writeTemplate(attack, `${commandStep('swap', swap)}  - name: validate\n    type: validation\n    commands: ["sh test.sh"]\n`);
    const base = git(attack.repo, 'rev-parse', 'main');
    const result = await startSandboxed(attack, ['-c', 'validation.tree=pristine']);
    expect(result.stdout).toContain('swapped');
    expect(result.code).not.toBe(0);
    expect(result.stdout + result.stderr).toContain('did not verify');
    const { hookText } = onlyTask(attack.home);
    expect(JSON.parse(hookText).receipts ?? []).toHaveLength(0);
    const task = JSON.parse(readFileSync(join(listTaskRefs(attack.home)[0]!.dir, 'task.json'), 'utf8')) as { branch: string };
    expect(git(attack.repo, 'rev-parse', task.branch)).toBe(base);
    git(attack.repo, 'fsck', '--strict', '--no-dangling');
  });

  it("another task's uncommitted files are not in any store a step can read", async () => {
    const attack = prepareAttack({ files: FILES });
    // Made at run time: the templates (committed, so in the store) never hold the secret itself.
    const secret = `SEC$((40+2))RET-${Date.now()}`;
    writeTemplate(
      attack,
      `${commandStep('write', `echo "${secret}" > notes.txt`)}  - name: validate\n    type: validation\n    commands: ["true"]\n`,
    );
    const first = await startSandboxed(attack, ['-c', 'validation.tree=pristine']);
    expect(first.code, first.stderr).toBe(0);
    expect(
      execFileSync('sh', ['-c', `git cat-file --batch-all-objects --batch | grep -ac "${secret}" || true`], {
        cwd: attack.repo,
        encoding: 'utf8',
      }).trim(),
    ).toBe('0');
    const read = [
      'echo "objects seen: $(git cat-file --batch-all-objects --batch-check | wc -l)"',
      `if git cat-file --batch-all-objects --batch | grep -aq "${secret}"; then echo "FOUND other"; else echo "NOT FOUND other"; fi`,
    ].join('\n');
    writeTemplate(attack, commandStep('read', read));
    const second = await startSandboxed(attack);
    expect(second.stdout).toMatch(/objects seen: [1-9]/);
    expect(second.stdout).toContain('NOT FOUND other');
    expect(second.code, second.stderr).toBe(0);
  });
});
