// The text of the git hooks atlas installs (docs/automatic-checkpoints.md). Pure: the same atlas
// location gives byte-identical scripts, which is what makes `atlas hook install` idempotent.
//
// Each script first runs the hook that was there before atlas (moved aside to
// `<name>.atlas-chained`) with the same arguments and stdin, and keeps its exit code; then it
// records a checkpoint through `atlas checkpoint --quiet`, detached in the background unless
// ATLAS_HOOK_SYNC=1. The atlas part never changes the exit code and prints nothing unless
// ATLAS_HOOK_VERBOSE=1.

export const MANAGED_HOOKS = ['post-commit', 'pre-push'] as const;
export type ManagedHook = (typeof MANAGED_HOOKS)[number];

/** Suffix of the user's own hook while atlas's hook sits in its place. */
export const CHAINED_SUFFIX = '.atlas-chained';

/** The line that marks a hook file as atlas's own. */
export function managedMarker(name: ManagedHook): string {
  return `# atlas-managed-hook: ${name}`;
}

export function isManagedHookText(text: string, name: ManagedHook): boolean {
  return text.split('\n', 4).includes(managedMarker(name));
}

export interface AtlasLocation {
  /** Absolute path of the node binary that ran `atlas hook install`. */
  node: string;
  /** Absolute path of this package's bin/atlas.cjs. */
  cli: string;
}

/** A POSIX shell single-quoted word. */
export function shellQuote(value: string): string {
  return `'${value.replace(/'/g, `'\\''`)}'`;
}

function header(name: ManagedHook, what: string, at: AtlasLocation): string {
  return `#!/bin/sh
${managedMarker(name)}
# Installed by \`atlas hook install\`: ${what}.
# \`atlas hook uninstall\` removes it and puts back the hook that was here before, which is kept
# meanwhile as ${name}${CHAINED_SUFFIX} and still runs first, with its exit code kept.
# Never fails the git command. ATLAS_HOOK_VERBOSE=1 prints what happens, ATLAS_HOOK_SYNC=1 waits
# for the checkpoint instead of recording it in the background, ATLAS_HOOK_SKIP=1 skips it.
atlas_node=${shellQuote(at.node)}
atlas_cli=${shellQuote(at.cli)}
chained="$0${CHAINED_SUFFIX}"

atlas_say() {
  if [ "\${ATLAS_HOOK_VERBOSE:-}" = 1 ]; then printf 'atlas %s: %s\\n' '${name}' "$1" >&2; fi
}

# Runs the command in a session of its own where setsid exists, so closing the terminal or
# pressing Ctrl+C right after the git command does not cut the checkpoint short.
atlas_detach() {
  GIT_OPTIONAL_LOCKS=0
  export GIT_OPTIONAL_LOCKS
  if command -v setsid >/dev/null 2>&1; then exec setsid "$@"; else exec "$@"; fi
}

# atlas_checkpoint TRIGGER COMMIT DESCRIPTION: runs \`atlas checkpoint\` for the task that owns this
# working tree (none: it exits 0 quietly). Detached from git unless ATLAS_HOOK_SYNC=1, and never
# holding git's optional locks, so the user's next git command is not slowed down or refused.
atlas_checkpoint() {
  atlas_trigger=$1
  atlas_commit=$2
  atlas_desc=$3
  if [ -x "$atlas_node" ] && [ -f "$atlas_cli" ]; then
    set -- "$atlas_node" "$atlas_cli"
  elif command -v atlas >/dev/null 2>&1; then
    set -- atlas
  elif [ -f "$atlas_cli" ] && command -v node >/dev/null 2>&1; then
    set -- node "$atlas_cli"
  else
    atlas_say "atlas not found (neither $atlas_cli nor atlas on PATH); no checkpoint recorded"
    return 0
  fi
  set -- "$@" checkpoint --trigger "$atlas_trigger"
  if [ -n "$atlas_commit" ]; then set -- "$@" --commit "$atlas_commit"; fi
  if [ "\${ATLAS_HOOK_VERBOSE:-}" = 1 ]; then
    set -- "$@" -- "$atlas_desc"
    if [ "\${ATLAS_HOOK_SYNC:-}" = 1 ]; then
      GIT_OPTIONAL_LOCKS=0 "$@" </dev/null 1>&2
    else
      atlas_say "recording a $atlas_trigger checkpoint in the background"
      ( atlas_detach "$@" ) </dev/null 1>&2 &
    fi
  else
    set -- "$@" --quiet -- "$atlas_desc"
    if [ "\${ATLAS_HOOK_SYNC:-}" = 1 ]; then
      GIT_OPTIONAL_LOCKS=0 "$@" </dev/null >/dev/null 2>&1
    else
      ( atlas_detach "$@" ) </dev/null >/dev/null 2>&1 &
    fi
  fi
  return 0
}
`;
}

function postCommit(at: AtlasLocation): string {
  return `${header('post-commit', 'records a git_commit checkpoint of the atlas task that owns this working tree', at)}
atlas_status=0
if [ -x "$chained" ]; then
  "$chained" "$@"
  atlas_status=$?
fi
if [ "\${ATLAS_HOOK_SKIP:-}" != 1 ]; then
  # The commit is pinned here, so a later commit can never be recorded in its place.
  atlas_info=$(git log -1 --format='%H %s' HEAD 2>/dev/null)
  atlas_sha=\${atlas_info%% *}
  atlas_subject=\${atlas_info#* }
  if [ -n "$atlas_sha" ]; then
    if [ -z "$atlas_subject" ] || [ "$atlas_subject" = "$atlas_info" ]; then atlas_subject="commit $atlas_sha"; fi
    atlas_checkpoint git_commit "$atlas_sha" "$atlas_subject"
  fi
fi
exit $atlas_status
`;
}

function prePush(at: AtlasLocation): string {
  return `${header('pre-push', 'records a git_push checkpoint of the atlas task that owns this working tree', at)}
# git sends one line per ref on stdin: the hook that was here before gets the same lines.
atlas_input=$(cat)
atlas_status=0
if [ -x "$chained" ]; then
  if [ -n "$atlas_input" ]; then printf '%s\\n' "$atlas_input"; fi | "$chained" "$@"
  atlas_status=$?
fi
# A push the user's hook refused does not happen, so it is not recorded.
if [ "$atlas_status" -ne 0 ]; then exit "$atlas_status"; fi
if [ "\${ATLAS_HOOK_SKIP:-}" != 1 ]; then
  atlas_head=$(git rev-parse -q --verify HEAD 2>/dev/null)
  atlas_refs=
  atlas_first=
  atlas_pushed=
  while read -r atlas_lref atlas_lsha atlas_rref atlas_rsha; do
    if [ -z "$atlas_rref" ]; then continue; fi
    atlas_refs="$atlas_refs\${atlas_refs:+, }\${atlas_rref#refs/heads/}"
    case "$atlas_lsha" in
      *[!0]*)
        if [ -z "$atlas_first" ]; then atlas_first=$atlas_lsha; fi
        if [ "$atlas_lsha" = "$atlas_head" ]; then atlas_pushed=$atlas_lsha; fi
        ;;
    esac
  done <<ATLAS_REFS
$atlas_input
ATLAS_REFS
  if [ -z "$atlas_pushed" ]; then atlas_pushed=$atlas_first; fi
  atlas_desc="push to \${1:-remote}"
  if [ -n "$atlas_refs" ]; then atlas_desc="$atlas_desc: $atlas_refs"; fi
  atlas_checkpoint git_push "$atlas_pushed" "$atlas_desc"
fi
exit 0
`;
}

export function renderHookScript(name: ManagedHook, at: AtlasLocation): string {
  return name === 'post-commit' ? postCommit(at) : prePush(at);
}
