// Claude Code's tools that change a file, and the input field naming it.
export const EDIT_TOOL_PATHS: Readonly<Record<string, string>> = { Edit: 'file_path', Write: 'file_path', MultiEdit: 'file_path', NotebookEdit: 'notebook_path' };

export function editedPath(toolName: string | undefined, input: Record<string, unknown> | undefined): string | undefined {
  const key = toolName ? EDIT_TOOL_PATHS[toolName] : undefined;
  const path = key ? input?.[key] : undefined;
  return typeof path === 'string' && path.length > 0 ? path : undefined;
}
