// A small router: routes are "/tasks/:id/events" patterns; a path that matches no pattern is 404,
// a pattern matched with another method 405 (with Allow). Path params are validated as ids.
import { HttpError, pathId } from './http.js';

export interface Route<H> {
  method: string;
  /** e.g. "/conversations/:conversationId/sandbox/:sandboxId". */
  pattern: string;
  handler: H;
}

export interface Match<H> {
  route: Route<H>;
  params: Record<string, string>;
}

function matchPattern(pattern: string[], path: string[]): Record<string, string> | undefined {
  if (pattern.length !== path.length) return undefined;
  const params: Record<string, string> = {};
  for (let i = 0; i < pattern.length; i++) {
    const p = pattern[i]!;
    const s = path[i]!;
    if (p.startsWith(':')) params[p.slice(1)] = s;
    else if (p !== s) return undefined;
  }
  return params;
}

export class Router<H> {
  private readonly routes: { route: Route<H>; parts: string[] }[] = [];

  add(method: string, pattern: string, handler: H): this {
    this.routes.push({ route: { method, pattern, handler }, parts: pattern.split('/').filter(Boolean) });
    return this;
  }

  /** Every route, as "METHOD /pattern" (the OpenAPI test checks each is documented). */
  list(): { method: string; pattern: string }[] {
    return this.routes.map(({ route }) => ({ method: route.method, pattern: route.pattern }));
  }

  /** The route for a request, or an HttpError (404 unknown path, 405 wrong method, 400 bad id). */
  match(method: string, pathname: string): Match<H> {
    const parts = pathname.split('/').filter(Boolean);
    const allowed: string[] = [];
    for (const { route, parts: pattern } of this.routes) {
      const raw = matchPattern(pattern, parts);
      if (!raw) continue;
      if (route.method !== method && !(method === 'HEAD' && route.method === 'GET')) {
        allowed.push(route.method);
        continue;
      }
      const params: Record<string, string> = {};
      for (const [k, v] of Object.entries(raw)) params[k] = pathId(v, k);
      return { route, params };
    }
    if (allowed.length > 0) {
      const allow = [...new Set(allowed)].join(', ');
      throw new HttpError(405, 'method_not_allowed', `${method} is not allowed on ${pathname}; use ${allow}`, { allow });
    }
    throw new HttpError(404, 'not_found', `no route ${pathname}`);
  }
}
