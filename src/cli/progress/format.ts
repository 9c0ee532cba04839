// Shared wording of progress lines.
import { formatDuration } from '../../domain/duration.js';

export function stepHeader(info: { index: number; name: string; type: string; attempt: number; maxAttempts: number }, total: number): string {
  const attempt = info.maxAttempts > 1 || info.attempt > 1 ? `, attempt ${info.attempt}/${info.maxAttempts}` : '';
  return `[${info.index + 1}/${total}] ${info.name} (${info.type}${attempt})`;
}

export function stepResult(info: { index: number; name: string; ok: boolean; durationMs: number; summary?: string }, total: number): string {
  return `${info.ok ? '✓' : '✗'} [${info.index + 1}/${total}] ${info.name} ${info.ok ? 'done' : 'stopped'} in ${formatDuration(info.durationMs)}${info.summary ? `: ${info.summary}` : ''}`;
}
