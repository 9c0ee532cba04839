/// <reference lib="dom" />
// The board's only way to the server: the documented HTTP API (docs/server.md), same origin, the
// session cookie sent by the browser, and the CSRF token (from the readable cookie) on every change.

export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
  ) {
    super(message);
  }
}

export function csrfToken(): string {
  const m = /(?:^|;\s*)atlas_csrf=([^;]+)/.exec(document.cookie);
  return m ? m[1]! : '';
}

export async function api<T>(method: string, path: string, body?: unknown): Promise<T> {
  const headers: Record<string, string> = { accept: 'application/json' };
  if (method !== 'GET') headers['x-csrf-token'] = csrfToken();
  if (body !== undefined) headers['content-type'] = 'application/json';
  const res = await fetch(path, {
    method,
    headers,
    credentials: 'same-origin',
    ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
  });
  const type = res.headers.get('content-type') ?? '';
  const data: unknown = type.includes('json') ? await res.json() : await res.text();
  if (!res.ok) {
    const err = (data as { error?: { code?: string; message?: string } }).error;
    throw new ApiError(res.status, err?.code ?? 'http_error', err?.message ?? `HTTP ${res.status}`);
  }
  return data as T;
}

export interface Session {
  account: string;
  read_only: boolean;
  csrf_token: string;
}

export interface TaskSummary {
  id: string;
  workspace: string;
  template: string;
  description?: string;
  state: string;
  activity: string;
  step: number;
  steps: number;
  step_name?: string | null;
  steps_done?: number;
  created_at: string;
  updated_at: string;
  branch?: string;
  crash_type?: string;
  note?: string;
}

export interface TaskDetail {
  task: TaskSummary;
  running: boolean;
  hook: Record<string, unknown>;
}

export interface StoredEvent {
  id: number;
  type: string;
  at: string;
  data: Record<string, unknown>;
}
