// Attack family 11 carried into attestations (issues 34 and 40): a sandboxed step commits a CI
// workflow, the task waits for a person. Envelopes exported then must say so (awaiting_review,
// the change listed, bound to the signed control review), and `atlas verify` on them must refuse
// the task under --require-control-review and validation.require_control_review, as on its hook;
// once a person approves, they say approved and verify, the independent verifiers, accept them.
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { atlas, git, tempDir } from '../helpers/core-fixtures.js';
import { ensureBuilt } from '../helpers/engine-fixtures.js';
import { openssl, readLines, schemas, securesystemslib, statementOf } from '../helpers/in-toto-verifiers.js';
import { skipSandbox } from '../helpers/sandbox-fixtures.js';
import type { Attack } from '../helpers/security-fixtures.js';
import { commandStep, onlyTask, prepareAttack, startSandboxed, stolen, writeTemplate } from '../helpers/security-fixtures.js';

beforeAll(() => ensureBuilt());

const CHECK = (name: string) => `  - name: ${name}\n    type: validation\n    commands: ["sh test.sh"]\n`;

async function exportEnvelopes(attack: Attack, name: string) {
  const path = join(tempDir('atlas-sec-att-'), name);
  const taskId = onlyTask(attack.home).dir.split('/').pop()!;
  const out = await atlas(['receipts', 'export', '--format', 'in-toto', '--task', taskId, '--out', path], {
    cwd: attack.repo,
    env: attack.env,
  });
  expect(out.code, out.stderr).toBe(0);
  return { path, statements: readLines(path).map(statementOf) };
}

function verify(attack: Attack, path: string, extra: string[]) {
  return atlas(['verify', path, '--json', ...extra], { cwd: attack.repo, env: attack.env });
}

const reviewPolicy = (stdout: string) =>
  (JSON.parse(stdout) as { policies: { policy: string; ok: boolean; detail: string }[] }).policies.find(
    (p) => p.policy === 'require-control-review',
  );

describe.skipIf(skipSandbox)('attestations of a task whose branch changes control paths', { timeout: 240_000 }, () => {
  it('say awaiting_review until a person approves, and verify on envelopes honours the review as on the hook', async () => {
    const attack = prepareAttack({ files: { 'lib.js': 'passing\n', 'test.sh': 'grep -q passing lib.js\n' } });
    // The repository's own policy asks verify for approved control changes.
    mkdirSync(join(attack.repo, '.atlas'), { recursive: true });
    writeFileSync(join(attack.repo, '.atlas', 'config.yaml'), 'validation:\n  require_control_review: true\n');
    const plant = `mkdir -p .github/workflows && printf 'on: push\\njobs:\\n  x:\\n    runs-on: ubuntu-latest\\n    steps:\\n      - run: ${attack.payload}\\n' > .github/workflows/ci.yml && git add .github && git commit -qm "ci" && echo committed`;
    writeTemplate(attack, CHECK('before') + commandStep('plant', plant) + CHECK('after'));
    const stopped = await startSandboxed(attack);
    expect(stopped.stdout).toContain('committed');
    expect(stopped.code).not.toBe(0);
    expect(JSON.parse(onlyTask(attack.home).hookText).state).toBe('awaiting_human');

    const waiting = await exportEnvelopes(attack, 'waiting.intoto.jsonl');
    expect(waiting.statements.map((s) => s.predicate.atlas.step)).toEqual(['before']);
    const cp = waiting.statements[0].predicate.atlas.control_paths;
    expect(cp).toMatchObject({ state: 'awaiting_review', review: { command: 'atlas control-review', exit_code: 1 } });
    expect(cp.review_receipt).toBe(cp.review.receipt_id);
    expect(cp.changes).toEqual([expect.stringMatching(/^\.github\/workflows\/ci\.yml \(control-path\).* \(awaiting review\)$/)]);

    const byFlag = await verify(attack, waiting.path, ['--require-control-review', '--no-repo-policy']);
    expect(byFlag.code, byFlag.stdout).toBe(1);
    expect(reviewPolicy(byFlag.stdout)).toMatchObject({ ok: false, detail: expect.stringContaining(cp.review_receipt) });
    const byRepo = await verify(attack, waiting.path, []);
    expect(byRepo.code, byRepo.stdout).toBe(1);
    expect(reviewPolicy(byRepo.stdout)?.ok).toBe(false);
    const without = await verify(attack, waiting.path, ['--no-repo-policy']);
    expect(without.code, without.stdout).toBe(0);
    // The hook says the same.
    const hook = await verify(attack, join(onlyTask(attack.home).dir, 'hook.json'), ['--require-control-review', '--no-repo-policy']);
    expect(reviewPolicy(hook.stdout)).toMatchObject({ ok: false });

    const taskId = onlyTask(attack.home).dir.split('/').pop()!;
    const approved = await atlas(['resume', '--task', taskId, '--approve', '--no-interactive'], { cwd: attack.repo, env: attack.env });
    expect(approved.code, approved.stdout + approved.stderr).toBe(0);
    const done = await exportEnvelopes(attack, 'approved.intoto.jsonl');
    expect(done.statements.map((s) => s.predicate.atlas.step)).toEqual(['before', 'after']);
    const tip = git(onlyTask(attack.home).worktree, 'rev-parse', 'HEAD');
    expect(done.statements[1].predicate.atlas.commit).toBe(tip);
    for (const s of done.statements) {
      expect(s.predicate).toMatchObject({ result: 'PASSED', passedTests: ['sh test.sh'], failedTests: [] });
      expect(s.predicate.atlas.receipts.map((r: { command: string }) => r.command)).toEqual(['sh test.sh']);
      const state = s.predicate.atlas.control_paths;
      expect(state).toMatchObject({ state: 'approved', review: { exit_code: 0 } });
      expect(state.review_receipt).not.toBe(cp.review_receipt);
      expect(state.changes).toEqual([expect.stringMatching(/^\.github\/workflows\/ci\.yml \(control-path\).* \(approved\)$/)]);
    }
    const accepted = await verify(attack, done.path, ['--require-control-review', '--require-pass']);
    expect(accepted.code, accepted.stdout).toBe(0);
    expect(reviewPolicy(accepted.stdout)?.ok).toBe(true);
    // Old and new envelopes of the task together: its last review decides, as in its hook.
    const both = join(tempDir('atlas-sec-att-'), 'both.intoto.jsonl');
    writeFileSync(both, readFileSync(waiting.path, 'utf8') + readFileSync(done.path, 'utf8'));
    expect((await verify(attack, both, ['--require-control-review'])).code).toBe(0);

    const pemOut = await atlas(['key', 'export', '--format', 'pem', '--for', 'attestations'], { env: attack.env });
    const pem = join(tempDir('atlas-sec-att-key-'), 'attestation.pem');
    writeFileSync(pem, pemOut.stdout);
    // Signatures good; the first statement is of the commit before the workflow, not of the tip.
    expect(securesystemslib(done.path, pem, tip).lines).toEqual([
      expect.objectContaining({ accepted: false, reason: expect.stringMatching(/^subject is commit/) }),
      { line: 2, accepted: true, reason: 'ok' },
    ]);
    for (const e of readLines(done.path)) expect(openssl(e, pem)).toBe(true);
    const { statement, testResult } = schemas();
    for (const s of done.statements) {
      expect(statement(s), JSON.stringify(statement.errors)).toBe(true);
      expect(testResult(s.predicate), JSON.stringify(testResult.errors)).toBe(true);
    }
    expect(stolen(attack)).toBe(false);
  });

  it('say none_found when the inspection of the attested commit found nothing', async () => {
    const attack = prepareAttack({ files: { 'lib.js': 'passing\n', 'test.sh': 'grep -q passing lib.js\n' } });
    writeTemplate(attack, commandStep('work', 'echo more >> lib.js && git commit -qam work && echo committed') + CHECK('check'));
    const result = await startSandboxed(attack);
    expect(result.code, result.stdout + result.stderr).toBe(0);
    const { statements } = await exportEnvelopes(attack, 'clean.intoto.jsonl');
    expect(statements.map((s) => s.predicate.atlas.control_paths.state)).toEqual(['none_found']);
    expect(statements[0].predicate.atlas.control_paths.review).toBeUndefined();
  });
});
