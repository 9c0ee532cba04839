// control_paths of in-toto attestations through the built CLI, with receipts signed by the real
// recorder: each state from what the task's control reviews signed (or its control record, when
// none was), statements that lie about them refused by `atlas verify`, a review whose output is
// gone refused at export, and a task's envelopes judged together by the policies.
import { rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { controlPathProblems, reviewedControlPaths } from '../src/domain/attestation-control.js';
import type { ValidationReceipt } from '../src/domain/receipt.js';
import { reviewLines } from '../src/engine/control-receipt.js';
import { controlPathsOf } from '../src/receipts/attestation-control.js';
import type { SetReport } from '../src/receipts/verify.js';
import { policyTasks } from '../src/receipts/verify.js';
import type { Envelope } from './helpers/in-toto-verifiers.js';
import { readLines, resigned, statementOf } from './helpers/in-toto-verifiers.js';
import type { Fixture } from './helpers/receipt-fixtures.js';
import { atlas, createTask, homeWithKey, recordRun, repo, tempDir } from './helpers/receipt-fixtures.js';

const WORKFLOW = '.github/workflows/ci.yml (control-path): added';

function review(fx: Fixture, exitCode: 0 | 1, lines: string[]): Promise<ValidationReceipt> {
  return recordRun(fx, {
    step: 'atlas:control-review',
    command: 'atlas control-review',
    exitCode,
    stdout: `${lines.join('\n')}\n`,
    executable: '',
  });
}

async function exported(fx: Fixture): Promise<{ path: string; envelopes: Envelope[]; code: number; stderr: string }> {
  const path = join(tempDir('atlas-att-cp-'), 'att.intoto.jsonl');
  const out = await atlas(['receipts', 'export', '--format', 'in-toto', '--task', fx.ref.id, '--out', path], { home: fx.home });
  return { path, envelopes: out.code === 0 ? readLines(path) : [], code: out.code, stderr: out.stderr };
}

const controlPaths = (e: Envelope) => statementOf(e).predicate.atlas.control_paths;

describe('control_paths in attestations', () => {
  it('not_recorded without an inspection, none_found when inspections found nothing', async () => {
    const { home } = await homeWithKey();
    const fx = await createTask(home, repo());
    await recordRun(fx, { command: 'npm test' });
    expect(controlPaths((await exported(fx)).envelopes[0]!)).toEqual({
      state: 'not_recorded',
      detail: expect.stringContaining('nothing is claimed'),
    });
    const record = (commit: string | null, findings: unknown[] = []) =>
      writeFileSync(
        join(fx.ref.dir, 'control.json'),
        JSON.stringify({ inspected_commit: commit, findings, approved: [], allowed: [], pending: [] }),
      );
    const commit = statementOf((await exported(fx)).envelopes[0]!).predicate.atlas.commit as string;
    record(commit);
    expect(controlPaths((await exported(fx)).envelopes[0]!)).toMatchObject({ state: 'none_found' });
    // The last inspection saw another commit (a later step, or one run locally): nothing claimed.
    record('b'.repeat(40));
    expect(controlPaths((await exported(fx)).envelopes[0]!)).toMatchObject({ state: 'not_recorded' });
    // A record with findings but no signed review claims nothing.
    record(commit, [{ key: 'k', text: 't' }]);
    expect(controlPaths((await exported(fx)).envelopes[0]!)).toMatchObject({ state: 'not_recorded' });
  });

  it('allowed_by_template when every signed line says so; the last review decides; reviews are no tests', async () => {
    const { home } = await homeWithKey();
    const fx = await createTask(home, repo());
    await review(fx, 1, [`${WORKFLOW} (awaiting review)`]);
    await recordRun(fx, { command: 'npm test' });
    const allowed = await review(fx, 0, [`${WORKFLOW} (allowed by the template)`]);
    const { envelopes, path } = await exported(fx);
    expect(envelopes).toHaveLength(1); // the reviews are no statement of their own
    const s = statementOf(envelopes[0]!);
    expect(s.predicate).toMatchObject({ passedTests: ['npm test'], failedTests: [], result: 'PASSED' });
    expect(s.predicate.atlas.control_paths).toMatchObject({
      state: 'allowed_by_template',
      review_receipt: allowed.receipt_id,
      changes: [`${WORKFLOW} (allowed by the template)`],
    });
    const verified = await atlas(['verify', path, '--require-control-review', '--json'], { home });
    expect(verified.code, verified.stdout).toBe(0);
    expect(JSON.parse(verified.stdout).summary).toMatchObject({ receipts: 2, valid: 2 });
  });

  it('refuses statements whose control_paths lie about their review', async () => {
    const { home } = await homeWithKey();
    const fx = await createTask(home, repo());
    await recordRun(fx, { command: 'npm test' });
    await review(fx, 1, [`${WORKFLOW} (awaiting review)`]);
    const { envelopes } = await exported(fx);
    const lies: [string, (cp: any) => void, string][] = [
      [
        'approved',
        (cp) => {
          cp.state = 'approved';
        },
        'its review says awaiting_review',
      ],
      [
        'changes',
        (cp) => {
          cp.changes = ['README.md (control-path): added (awaiting review)'];
        },
        'not what the review receipt signed',
      ],
      [
        'id',
        (cp) => {
          cp.review_receipt = 'rcpt-00000000';
        },
        'atlas.control_paths.review_receipt is',
      ],
      [
        'none',
        (cp) => {
          cp.state = 'none_found';
        },
        'is none_found but names a review',
      ],
      [
        'unknown',
        (cp) => {
          cp.state = 'fine';
        },
        'is not one this atlas writes',
      ],
      [
        'dropped',
        (cp) => {
          delete cp.review;
        },
        'without its review receipt',
      ],
      [
        'not a review',
        (cp) => {
          cp.review.command = 'true';
        },
        'is not a control review',
      ],
      [
        'other task',
        (cp) => {
          cp.review.task_id = 'other-task';
        },
        'the statement of',
      ],
    ];
    for (const [name, change, message] of lies) {
      const path = join(tempDir('atlas-att-cp-'), `${name}.jsonl`);
      writeFileSync(path, `${JSON.stringify(resigned(home, envelopes[0]!, (s) => change(s.predicate.atlas.control_paths)))}\n`);
      const result = await atlas(['verify', path], { home });
      expect(result.code, name).toBe(1);
      expect(result.stdout, name).toContain(message);
    }
    const notObject = join(tempDir('atlas-att-cp-'), 'x.jsonl');
    writeFileSync(
      notObject,
      `${JSON.stringify(
        resigned(home, envelopes[0]!, (s) => {
          s.predicate.atlas.control_paths = 'approved';
        }),
      )}\n`,
    );
    expect((await atlas(['verify', notObject], { home })).stdout).toContain('atlas.control_paths is not an object');
    const badShape = join(tempDir('atlas-att-cp-'), 'y.jsonl');
    writeFileSync(
      badShape,
      `${JSON.stringify(
        resigned(home, envelopes[0]!, (s) => {
          s.predicate.atlas.control_paths.review = { receipt_id: 1 };
        }),
      )}\n`,
    );
    const malformed = await atlas(['verify', badShape], { home });
    expect(malformed.code).toBe(2);
    expect(malformed.stderr).toContain('predicate.atlas.control_paths.review:');
  });

  it("refuses to export when a review's signed output is gone or changed", async () => {
    const { home } = await homeWithKey();
    const fx = await createTask(home, repo());
    await recordRun(fx, { command: 'npm test' });
    const r = await review(fx, 1, [`${WORKFLOW} (awaiting review)`]);
    writeFileSync(join(fx.ref.dir, r.stdout_artifact!), `${WORKFLOW} (approved)\n`);
    const changed = await exported(fx);
    expect(changed.code).not.toBe(0);
    expect(changed.stderr).toMatch(/does not verify|not what the receipt signed/);
    rmSync(join(fx.ref.dir, r.stdout_artifact!));
    const gone = await exported(fx);
    expect(gone.code).not.toBe(0);
    expect(gone.stderr).toMatch(/does not verify|is missing/);
  });

  it('policyTasks: one entry per task, each receipt once, valid only when every copy is', () => {
    const r = (id: string) => ({ receipt_id: id }) as ValidationReceipt;
    const report = (taskId: string, results: [string, boolean][], problems: string[] = []) =>
      ({ taskId, results: results.map(([id, valid]) => ({ receipt: r(id), valid })), problems }) as unknown as SetReport;
    const tasks = policyTasks([
      report('a', [
        ['rcpt-1', true],
        ['rcpt-2', true],
      ]),
      report('a', [['rcpt-2', false]]),
      report('b', [['rcpt-3', true]], ['index shared']),
    ]);
    expect(tasks.map((t) => [t.taskId, t.receipts.map((c) => [c.receipt.receipt_id, c.valid])])).toEqual([
      [
        'a',
        [
          ['rcpt-1', true],
          ['rcpt-2', false],
        ],
      ],
      ['b', [['rcpt-3', false]]],
    ]);
  });
});

describe('control_paths, in process', () => {
  it("controlPathsOf: each state, and an AtlasError when the review's output is gone or changed", async () => {
    const { home } = await homeWithKey();
    const fx = await createTask(home, repo());
    expect(controlPathsOf(fx.ref.id, fx.ref.dir, [], 'a'.repeat(40)).state).toBe('not_recorded');
    const r = await review(fx, 1, [`${WORKFLOW} (awaiting review)`]);
    expect(controlPathsOf(fx.ref.id, fx.ref.dir, [r], 'a'.repeat(40))).toMatchObject({
      state: 'awaiting_review',
      review_receipt: r.receipt_id,
      changes: [`${WORKFLOW} (awaiting review)`],
    });
    const ok = await review(fx, 0, [`${WORKFLOW} (approved)`, `.envrc (control-path): added (allowed by the template)`]);
    expect(controlPathsOf(fx.ref.id, fx.ref.dir, [r, ok], 'a'.repeat(40)).state).toBe('approved');
    writeFileSync(join(fx.ref.dir, ok.stdout_artifact!), 'x\n');
    expect(() => controlPathsOf(fx.ref.id, fx.ref.dir, [r, ok], 'a'.repeat(40))).toThrow(/not what the receipt signed/);
    rmSync(join(fx.ref.dir, ok.stdout_artifact!));
    expect(() => controlPathsOf(fx.ref.id, fx.ref.dir, [r, ok], 'a'.repeat(40))).toThrow(/is missing/);
    const { stdout_artifact: _, ...bare } = ok;
    expect(() => controlPathsOf(fx.ref.id, fx.ref.dir, [bare], 'a'.repeat(40))).toThrow(/is missing/);
  });

  it('controlPathProblems names each lie; a true statement has none', async () => {
    const { home } = await homeWithKey();
    const fx = await createTask(home, repo());
    const r = await review(fx, 0, [`${WORKFLOW} (allowed by the template)`]);
    const truth = reviewedControlPaths(r, [`${WORKFLOW} (allowed by the template)`]);
    expect(truth.state).toBe('allowed_by_template');
    const check = (change: (cp: any) => void) => {
      const cp = JSON.parse(JSON.stringify(truth));
      change(cp);
      return controlPathProblems(cp, fx.ref.id).join('; ');
    };
    expect(check(() => undefined)).toBe('');
    expect(
      check((cp) => {
        cp.state = 'approved';
      }),
    ).toContain('its review says allowed_by_template');
    expect(
      check((cp) => {
        cp.changes = 'x';
      }),
    ).toContain('without its review receipt and changes');
    expect(
      check((cp) => {
        cp.changes = [1];
      }),
    ).toContain('without its review receipt and changes');
    expect(
      check((cp) => {
        cp.review.task_id = 'other';
      }),
    ).toContain('is of other');
    expect(controlPathProblems(null, fx.ref.id)).toEqual(['atlas.control_paths is not an object']);
    expect(controlPathProblems([], fx.ref.id)).toEqual(['atlas.control_paths is not an object']);
    expect(controlPathProblems({ state: 'not_recorded', detail: '' }, fx.ref.id)).toEqual([]);
    expect(controlPathProblems({ state: 'not_recorded', changes: [] }, fx.ref.id)[0]).toContain('names a review');
  });

  it('reviewLines: who let each change in, or that it waits', () => {
    const findings = [
      { key: 'a', text: 'A' },
      { key: 'b', text: 'B' },
      { key: 'c', text: 'C' },
    ];
    expect(reviewLines(findings, ['a'], new Set(['b']))).toEqual(['A (allowed by the template)', 'B (approved)', 'C (awaiting review)']);
  });
});
