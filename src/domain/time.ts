// Timestamps are RFC 3339 UTC strings with second precision, as in seed 003's example.

export function toTimestamp(date: Date): string {
  return date.toISOString().replace(/\.\d{3}Z$/, 'Z');
}

const RFC3339 = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(?:\.\d+)?(?:Z|[+-]\d{2}:\d{2})$/;

/** Format check only (no Date.parse): hook.json holds thousands of timestamps, read on every command. */
export function isTimestamp(value: unknown): value is string {
  return typeof value === 'string' && RFC3339.test(value);
}
