// Every answer an atlas server gives a test, checked against its OpenAPI document (ajv, JSON
// Schema 2020-12 as OpenAPI 3.1 uses): the route and method are documented, the status is (or the
// default error), the content type is, and a JSON body matches the schema. `checkResponses()` wraps
// fetch for the test file and fails each test that got an answer the document does not describe.
import { Ajv2020 } from 'ajv/dist/2020.js';
import addFormats from 'ajv-formats';
import { afterEach, beforeAll, expect } from 'vitest';
import { openApiDocument } from '../../src/server/api/openapi.js';

const DOC_ID = 'atlas-openapi.json';
type Json = Record<string, any>;

export function openApiValidator() {
  const doc = openApiDocument('test') as Json;
  const ajv = new Ajv2020({ strict: false, allErrors: true });
  (addFormats as unknown as (a: Ajv2020) => void)(ajv);
  ajv.addSchema({ ...doc, $id: DOC_ID });
  const templates = Object.keys(doc['paths']).map((t) => ({ t, re: new RegExp(`^${t.replace(/\{[^}]+\}/g, '[^/]+')}$`) }));
  const pointer = (...parts: string[]) => `${DOC_ID}#/${parts.map((p) => p.replace(/~/g, '~0').replace(/\//g, '~1')).join('/')}`;

  /** Problems with one answer (empty: it matches the document). */
  return function check(method: string, pathname: string, status: number, contentType: string, body: unknown): string[] {
    const where = `${method} ${pathname} → ${status}`;
    const tpl = templates.find((x) => x.re.test(pathname))?.t;
    let responses: Json | undefined;
    let base: string[] = [];
    if (tpl) {
      const operation = doc['paths'][tpl][method.toLowerCase()];
      if (!operation) {
        if (status !== 405) return [`${where}: ${method} ${tpl} is not documented`];
      } else {
        responses = operation.responses;
        base = ['paths', tpl, method.toLowerCase(), 'responses'];
      }
    }
    // Unknown routes and wrong methods answer the default error.
    const key = responses?.[String(status)] ? String(status) : 'default';
    if (!responses) {
      responses = { default: { content: { 'application/json': {} } } };
      base = [];
    }
    if (key === 'default' && status < 400) return [`${where}: status ${status} is not documented`];
    const type = contentType.split(';')[0]!.trim();
    const content = responses[key]?.content ?? {};
    if (!(type in content)) return [`${where}: content type ${type} is not documented (${Object.keys(content).join(', ')})`];
    if (type !== 'application/json') return [];
    const validate =
      base.length > 0
        ? ajv.getSchema(pointer(...base, key, 'content', type, 'schema'))
        : ajv.getSchema(pointer('components', 'schemas', 'Error'));
    if (!validate) return [`${where}: no schema`];
    if (validate(body)) return [];
    return [`${where}: ${ajv.errorsText(validate.errors)} in ${JSON.stringify(body).slice(0, 300)}`];
  };
}

/** Problems with SSE events read by readSse (server-fixtures.ts), reported with the answers'. */
export const sseProblems: string[] = [];

/** An SSE event as the document describes it: a whole-number id, a name, a JSON object with `at`. */
export function checkSseEvent(e: { id: string | undefined; event: string; data: unknown }): void {
  const data = e.data as Record<string, unknown> | null;
  if (e.id === undefined || !/^[1-9]\d*$/.test(e.id)) sseProblems.push(`SSE event ${e.event}: id ${String(e.id)} is not a whole number`);
  if (!/^[a-z][a-z_]*$/.test(e.event)) sseProblems.push(`SSE event name ${e.event} is not lower_snake_case`);
  if (
    typeof data !== 'object' ||
    data === null ||
    Array.isArray(data) ||
    typeof data['at'] !== 'string' ||
    !Number.isFinite(Date.parse(data['at'] as string))
  ) {
    sseProblems.push(`SSE event ${e.event} ${String(e.id)}: data is not an object with a date-time "at"`);
  }
}

/** Wraps fetch for this test file: every atlas answer (it carries x-request-id) is checked. */
export function checkResponses(): { problems: string[]; checked: () => number } {
  const problems: string[] = [];
  let count = 0;
  let check: ReturnType<typeof openApiValidator>;
  const original = globalThis.fetch;
  beforeAll(() => {
    check = openApiValidator();
    globalThis.fetch = async (input: any, init?: any) => {
      const res = await original(input, init);
      const url = new URL(typeof input === 'string' || input instanceof URL ? String(input) : input.url);
      if (!res.headers.get('x-request-id') || !/^(127\.|localhost|\[::1\])/.test(url.hostname)) return res;
      const method = (init?.method ?? (typeof input === 'object' && 'method' in input ? input.method : 'GET')).toUpperCase();
      // CORS preflights are the browser's, not operations of the API.
      if (method === 'OPTIONS') return res;
      const type = res.headers.get('content-type') ?? '';
      let body: unknown;
      if (type.startsWith('application/json') && method !== 'HEAD')
        body = await res
          .clone()
          .json()
          .catch(() => '<not JSON>');
      count++;
      problems.push(...check(method, url.pathname, res.status, type, body));
      if (res.status === 429 && !res.headers.get('retry-after')) problems.push(`${method} ${url.pathname} → 429 without Retry-After`);
      return res;
    };
    return () => {
      globalThis.fetch = original;
    };
  });
  afterEach(() => {
    const found = [...problems.splice(0), ...sseProblems.splice(0)];
    expect(found, 'answers the OpenAPI document does not describe').toEqual([]);
  });
  return { problems, checked: () => count };
}
