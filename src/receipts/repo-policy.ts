// The repository's own policy for `atlas verify`: when it commits .atlas/config.yaml with
// validation.commands, those commands (as committed on the verified commit, not as they are in
// the working tree or in the receipts) must each have a passing receipt. Receipts made with
// `-c validation.commands=["true"]` then prove nothing the repository asked for.
import { coerce, LEAF_BY_KEY } from '../config/schema.js';
import { parseYamlText } from '../config/yaml-lib.js';
import { AtlasError, EXIT } from '../domain/errors.js';
import type { RequiredCommand } from '../domain/receipt-policy.js';
import { runGit } from '../git/run-git.js';

export const REPO_CONFIG_PATH = '.atlas/config.yaml';

function policyError(message: string, cause?: unknown): AtlasError {
  return new AtlasError(message, {
    exitCode: EXIT.input,
    hint: `fix ${REPO_CONFIG_PATH} in that commit, or pass --no-repo-policy to verify without the repository's validation commands`,
    ...(cause ? { cause } : {}),
  });
}

export interface RepoPolicy {
  commands: RequiredCommand[];
  /** validation.require_control_review: every task's control-path changes approved by a person. */
  requireControlReview: boolean;
}

/**
 * validation.commands (and validation.require_control_review) of .atlas/config.yaml as committed
 * on `commit` (`git show`), from the repository around `cwd`. Nothing when the file or the keys
 * are absent there.
 */
export async function repoPolicy(cwd: string, commit: string): Promise<RepoPolicy> {
  const none: RepoPolicy = { commands: [], requireControlReview: false };
  const shown = await runGit(cwd, ['show', `${commit}:${REPO_CONFIG_PATH}`], { allowFailure: true });
  if (shown.code !== 0) {
    // Absent at that commit (or not a repository): no policy. Anything else is a real problem.
    if (/does not exist|exists on disk, but not in|not a git repository|invalid object name|bad revision/i.test(shown.stderr)) return none;
    throw policyError(`cannot read ${REPO_CONFIG_PATH} at ${commit.slice(0, 12)}: ${shown.stderr.trim()}`);
  }
  let data: unknown;
  try {
    data = (await parseYamlText(shown.stdout)).data;
  } catch (error) {
    throw policyError(`${REPO_CONFIG_PATH} at ${commit.slice(0, 12)} is not valid YAML: ${(error as Error).message}`, error);
  }
  const validation =
    typeof data === 'object' && data !== null && !Array.isArray(data) ? (data as Record<string, unknown>)['validation'] : undefined;
  const section = typeof validation === 'object' && validation !== null ? (validation as Record<string, unknown>) : {};
  const control = section['require_control_review'];
  let requireControlReview = false;
  if (control !== undefined && control !== null) {
    const coerced = coerce(LEAF_BY_KEY.get('validation.require_control_review')!, control);
    if (!coerced.ok)
      throw policyError(`${REPO_CONFIG_PATH} at ${commit.slice(0, 12)}: validation.require_control_review: ${coerced.problem}`);
    requireControlReview = coerced.value === true;
  }
  const raw = section['commands'];
  if (raw === undefined || raw === null) return { ...none, requireControlReview };
  const result = coerce(LEAF_BY_KEY.get('validation.commands')!, raw);
  if (!result.ok) throw policyError(`${REPO_CONFIG_PATH} at ${commit.slice(0, 12)}: validation.commands: ${result.problem}`);
  const source = `${REPO_CONFIG_PATH} at ${commit.slice(0, 12)}`;
  return {
    commands: (result.value as string[]).filter((c) => c.trim().length > 0).map((command) => ({ command, source })),
    requireControlReview,
  };
}

/** The commands the repository's policy requires on `commit` (repoPolicy's commands). */
export async function repoRequiredCommands(cwd: string, commit: string): Promise<RequiredCommand[]> {
  return (await repoPolicy(cwd, commit)).commands;
}
