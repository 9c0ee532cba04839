// `--commit SHA|REF`: a full commit id is taken as is; anything else (HEAD, a branch, a short id)
// is resolved with git in the current directory.
import { AtlasError, EXIT } from '../domain/errors.js';
import { isGitCommit } from '../domain/receipt.js';
import { runGit } from '../git/run-git.js';

export async function resolveCommit(value: string, cwd: string): Promise<string> {
  const lower = value.trim().toLowerCase();
  if (isGitCommit(lower)) return lower;
  const fail = (why: string) =>
    new AtlasError(`--commit ${value}: ${why}`, {
      exitCode: EXIT.input,
      hint: 'pass a full commit id (e.g. "$GITHUB_SHA") or a ref git can resolve here, like HEAD',
    });
  if (value.trim().length === 0 || value.startsWith('-')) throw fail('not a commit id or ref');
  let result: Awaited<ReturnType<typeof runGit>>;
  try {
    result = await runGit(cwd, ['rev-parse', '--verify', '--quiet', `${value.trim()}^{commit}`], { allowFailure: true });
  } catch (error) {
    throw fail((error as Error).message);
  }
  const sha = result.stdout.trim();
  if (result.code !== 0 || !isGitCommit(sha)) throw fail(`git cannot resolve it to a commit in ${cwd}`);
  return sha;
}
