// Shared wording of progress lines.
import { formatDuration } from '../../domain/duration.js';
import type { StepFinishedInfo } from '../../engine/contract.js';

export function stepHeader(
  info: { index: number; name: string; type: string; attempt: number; maxAttempts: number },
  total: number,
): string {
  const attempt = info.maxAttempts > 1 || info.attempt > 1 ? `, attempt ${info.attempt}/${info.maxAttempts}` : '';
  return `[${info.index + 1}/${total}] ${info.name} (${info.type}${attempt})`;
}

/** `✓ … done`, `✗ … stopped`, or for a step that waits for a person (not a failure) `⏸ … paused`. */
export function stepResult(info: StepFinishedInfo, total: number): string {
  const [mark, word] = info.ok ? ['✓', 'done in'] : info.waiting ? ['⏸', 'paused after'] : ['✗', 'stopped in'];
  return `${mark} [${info.index + 1}/${total}] ${info.name} ${word} ${formatDuration(info.durationMs)}${info.summary ? `: ${info.summary}` : ''}`;
}
