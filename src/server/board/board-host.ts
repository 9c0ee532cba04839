// DNS-rebinding defence (docs/ui.md): a server listening on a loopback address answers only
// requests whose Host names a loopback address. A page of evil.example whose name was rebound to
// 127.0.0.1 sends `Host: evil.example:PORT`, and is refused before any route runs.
import type { IncomingMessage } from 'node:http';
import { HttpError } from '../http/http.js';

const LOOPBACK_NAMES = /^(?:localhost|127\.\d{1,3}\.\d{1,3}\.\d{1,3}|\[::1\])$/i;

/** The Host header's name without its port (an IPv6 literal keeps its brackets). */
export function hostName(header: string): string {
  const m = /^(\[[^\]]*\]|[^:]*)(?::\d{1,5})?$/.exec(header.trim());
  return m ? m[1]! : '';
}

/**
 * Throws 421 unless the request's Host is a loopback name or one of `allowed` (server.allowed_hosts:
 * the name a proxy in front forwards); only checked when `servedOnLoopback`.
 */
export function checkHost(req: IncomingMessage, servedOnLoopback: boolean, allowed: readonly string[]): void {
  if (!servedOnLoopback) return;
  const name = hostName(req.headers.host ?? '');
  if (!LOOPBACK_NAMES.test(name) && !allowed.some((a) => a.toLowerCase() === name.toLowerCase())) {
    throw new HttpError(
      421,
      'host_refused',
      `this server listens on a loopback address and answers only to Host 127.0.0.1, localhost or [::1] (and server.allowed_hosts), not "${name.slice(0, 100)}"`,
    );
  }
}
