// An HTTP proxy on 127.0.0.1 in front of a real S3 server (s3rver), for the failures s3rver
// cannot produce: a server without DeleteObjects, per-key delete errors, refused deletes, a server
// that refuses conditional writes, a share of requests failing at random (500, 503), a server that
// ignores Range, a ranged answer cut off midway, a blob's answer cut off every time. It records every delete request (method, URL,
// Content-MD5, body), counts requests and the bytes clients sent, and forwards everything else.
import { createHash } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { createServer, request } from 'node:http';
import type { AddressInfo } from 'node:net';

export type FaultMode =
  /** Forward everything. */
  | 'pass'
  /** POST ?delete answers 501 NotImplemented (a server without DeleteObjects). */
  | 'no-batch'
  /** POST ?delete answers 200 with an AccessDenied error for every key. */
  | 'batch-denied'
  /** Every delete (DELETE and POST ?delete) answers 403 AccessDenied. */
  | 'deny-deletes'
  /** A PUT of a `.sandbox-state` answers 403 AccessDenied (a push fails as it commits). */
  | 'deny-state-put'
  /** A PUT with `If-None-Match` answers 501 NotImplemented (a server without conditional writes that refuses the header). */
  | 'no-conditional-put'
  /** A share (`failRate`) of all requests, chosen at random, answers 500 InternalError or 503 SlowDown, unforwarded. */
  | 'flaky'
  /** A GET's Range header is dropped: the server answers with the whole object (a server that ignores Range). */
  | 'ignore-range'
  /** The next ranged GET's answer is cut off after its first byte (the connection closes), then 'pass'. */
  | 'cut-range'
  /** Every GET of a whole blob (no Range) is cut off after its first byte, however often it is asked again. */
  | 'cut-blobs'
  /** A request the AWS SDK did not send (hand-signed, s3-direct.ts) answers 403 AccessDenied: only the SDK gets through. */
  | 'sdk-only';

export interface DeleteRequest {
  method: string;
  url: string;
  contentMd5: string | undefined;
  /** Whether Content-MD5 matched the body. */
  md5Ok: boolean;
  keys: number;
  /** What the server (or the proxy) answered. */
  status?: number;
}

export interface FaultProxy {
  endpoint: string;
  mode: FaultMode;
  /** In 'flaky' mode, the share of requests that fail (0.2: one in five). */
  failRate: number;
  /** Every request seen, and those the proxy failed. */
  requests: number;
  failed: number;
  /** Bytes of request bodies received (what a client sent), forwarded or not. */
  bytesIn: number;
  /** Requests the AWS SDK sent (its invocation id header); the rest were hand-signed (s3-direct.ts). */
  fromSdk: number;
  /** The access key ids requests were signed with. */
  accessKeys: Set<string>;
  deletes: DeleteRequest[];
  stop(): Promise<void>;
}

const xmlError = (code: string, message: string) =>
  `<?xml version="1.0" encoding="UTF-8"?><Error><Code>${code}</Code><Message>${message}</Message></Error>`;

export async function startFaultProxy(upstream: string): Promise<FaultProxy> {
  const target = new URL(upstream);
  const proxy: FaultProxy = {
    endpoint: '',
    mode: 'pass',
    failRate: 0,
    requests: 0,
    failed: 0,
    bytesIn: 0,
    fromSdk: 0,
    accessKeys: new Set(),
    deletes: [],
    stop: async () => undefined,
  };
  // A fixed sequence: a flaky run fails the same requests every time it is run the same way.
  let seed = 20;
  const random = () => {
    seed = (seed * 1103515245 + 12345) % 2 ** 31;
    return seed / 2 ** 31;
  };
  const forward = (req: IncomingMessage, res: ServerResponse, body: Buffer, record?: DeleteRequest) => {
    const headers = { ...req.headers };
    if (proxy.mode === 'ignore-range') delete headers.range;
    const cut =
      (proxy.mode === 'cut-range' && req.method === 'GET' && headers.range !== undefined) ||
      (proxy.mode === 'cut-blobs' && req.method === 'GET' && headers.range === undefined && /\/\.blobs\//.test(req.url ?? ''));
    if (cut && proxy.mode === 'cut-range') proxy.mode = 'pass';
    const out = request({ host: target.hostname, port: target.port, method: req.method, path: req.url, headers }, (up) => {
      if (record) record.status = up.statusCode;
      res.writeHead(up.statusCode ?? 502, up.headers);
      if (!cut) return up.pipe(res);
      proxy.failed++;
      up.once('data', (chunk: Buffer) => {
        res.write(chunk.subarray(0, 1));
        res.destroy();
        up.destroy();
      });
    });
    out.on('error', () => res.destroy());
    out.end(body);
  };
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const body = Buffer.concat(chunks);
      proxy.requests++;
      if (req.headers['amz-sdk-invocation-id']) proxy.fromSdk++;
      const signedBy = /Credential=([^/]+)\//.exec(req.headers.authorization ?? '')?.[1];
      if (signedBy) proxy.accessKeys.add(signedBy);
      proxy.bytesIn += body.length;
      if (proxy.mode === 'flaky' && random() < proxy.failRate) {
        proxy.failed++;
        const slow = random() < 0.5;
        res.writeHead(slow ? 503 : 500, { 'content-type': 'application/xml' });
        return res.end(
          slow
            ? xmlError('SlowDown', 'Please reduce your request rate.')
            : xmlError('InternalError', 'We encountered an internal error. Please try again.'),
        );
      }
      const batch = req.method === 'POST' && /[?&]delete(=|&|$)/.test(req.url ?? '');
      if (proxy.mode === 'deny-state-put' && req.method === 'PUT' && /\/\.sandbox-state(\?|$)/.test(req.url ?? '')) {
        res.writeHead(403, { 'content-type': 'application/xml' });
        return res.end(xmlError('AccessDenied', 'Access Denied'));
      }
      if (proxy.mode === 'sdk-only' && !req.headers['amz-sdk-invocation-id']) {
        proxy.failed++;
        res.writeHead(403, { 'content-type': 'application/xml' });
        return res.end(xmlError('AccessDenied', 'Access Denied'));
      }
      if (proxy.mode === 'no-conditional-put' && req.method === 'PUT' && req.headers['if-none-match'] !== undefined) {
        proxy.failed++;
        res.writeHead(501, { 'content-type': 'application/xml' });
        return res.end(xmlError('NotImplemented', 'A header you provided implies functionality that is not implemented'));
      }
      if (!batch && req.method !== 'DELETE') return forward(req, res, body);
      const contentMd5 = req.headers['content-md5'] as string | undefined;
      const keys = [...body.toString('utf8').matchAll(/<Key>([^<]*)<\/Key>/g)].map((m) => m[1]!);
      const record: DeleteRequest = {
        method: req.method!,
        url: req.url!,
        contentMd5,
        md5Ok: contentMd5 === createHash('md5').update(body).digest('base64'),
        keys: keys.length,
      };
      proxy.deletes.push(record);
      const send = (status: number, xml: string) => {
        record.status = status;
        res.writeHead(status, { 'content-type': 'application/xml' });
        res.end(xml);
      };
      if (proxy.mode === 'deny-deletes') return send(403, xmlError('AccessDenied', 'Access Denied'));
      if (batch && proxy.mode === 'no-batch')
        return send(501, xmlError('NotImplemented', 'A header you provided implies functionality that is not implemented'));
      if (batch && proxy.mode === 'batch-denied') {
        return send(
          200,
          `<?xml version="1.0" encoding="UTF-8"?><DeleteResult>${keys.map((k) => `<Error><Key>${k}</Key><Code>AccessDenied</Code><Message>Access Denied</Message></Error>`).join('')}</DeleteResult>`,
        );
      }
      forward(req, res, body, record);
    });
  });
  await new Promise<void>((ok) => server.listen(0, '127.0.0.1', ok));
  proxy.endpoint = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  proxy.stop = () =>
    new Promise((ok) => {
      server.close(() => ok());
      server.closeAllConnections();
    });
  return proxy;
}
