// Slow, staged and hanging templates for the crash-injection tests (test/recovery-*.test.ts).
// prepare is safe to rerun (idempotent: true); build appends to a log, so it is not.
export const SLOW = `name: slow
branch_prefix: slow/
steps:
  - name: prepare
    type: command
    idempotent: true
    max_attempts: 3
    run: "sleep 0.4 && echo prepared > prepare.txt"
  - name: build
    type: command
    max_attempts: 3
    run: "echo built >> build.log && sleep 0.4 && echo built > build.txt"
  - name: validate
    type: validation
    max_attempts: 3
    commands: ["sleep 0.4 && test -f prepare.txt && test -f build.txt"]
  - name: commit
    type: git
    action: commit
`;

// build commits part 1, records a checkpoint of that commit, then writes part 2 and hangs the
// first time (the marker lives outside the tree): a crash there is retried from the checkpoint.
export const STAGED = `name: staged
steps:
  - name: prepare
    type: command
    idempotent: true
    run: "echo prepared > prepare.txt && git add -A && git commit -q -m prepare"
  - name: build
    type: command
    max_attempts: 3
    run:
      - "echo part1 > part1.txt && git add part1.txt && (git diff --cached --quiet || git commit -q -m part1) && node \\"$CRASH_ATLAS\\" checkpoint 'part 1 committed' --task \\"$ATLAS_TASK_ID\\" --quiet"
      - "echo part2 > part2.txt && mkdir -p notes && echo draft > notes/draft.md && if [ -e \\"$CRASH_SCRATCH/build-hung\\" ]; then true; else touch \\"$CRASH_SCRATCH/build-hung\\"; sleep 30; fi"
  - name: commit
    type: git
    action: commit
`;

// The first run of write hangs after writing its pid (so the test can watch the orphan).
export const HANG = `name: hang
steps:
  - name: write
    type: command
    idempotent: true
    max_attempts: 3
    run: "echo written > written.txt && if [ -e \\"$CRASH_SCRATCH/hung\\" ]; then true; else touch \\"$CRASH_SCRATCH/hung\\"; echo $$ > \\"$CRASH_SCRATCH/orphan.pid\\"; sleep 30; fi"
`;

// Like the built-in check: one validation step with the default max_attempts (1).
export const CHECK_LIKE = `name: checklike
steps:
  - name: validate
    type: validation
    commands: ["sleep 0.4 && echo checked"]
`;

export const QUICK = `name: quick
steps:
  - name: touch
    type: command
    run: "echo quick > quick.txt"
`;
