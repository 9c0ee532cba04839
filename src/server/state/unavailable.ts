// The state or the message store did not answer (down, unreachable, or past its deadline): the
// request that needed it gets 503 state_unavailable with Retry-After, never 500 or a hang
// (issue 37). Every call to PostgreSQL has a client deadline (open.ts), every call to DynamoDB a
// connection and a request deadline (dynamo-messages.ts).

export class StateUnavailableError extends Error {
  constructor(message: string, options?: ErrorOptions) {
    super(message, options);
    this.name = 'StateUnavailableError';
  }
}

/** Network failures and PostgreSQL's "cannot serve now" classes (08 connection, 57P shutdown). */
const CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ETIMEDOUT',
  'EPIPE',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'ENOTFOUND',
  'EAI_AGAIN',
  '57P01',
  '57P02',
  '57P03',
  '53300',
]);
/** What pg and the pool say when a deadline passes or the connection drops. */
const MESSAGES =
  /Query read timeout|timeout exceeded when trying to connect|Connection terminated|Client has encountered a connection error|the server state is closed/i;

export function isStateUnavailable(error: unknown): boolean {
  if (error instanceof StateUnavailableError) return true;
  const e = error as { code?: unknown; message?: unknown; cause?: unknown } | undefined;
  if (!e || typeof e !== 'object') return false;
  const code = typeof e.code === 'string' ? e.code : '';
  if (CODES.has(code) || code.startsWith('08')) return true;
  if (typeof e.message === 'string' && MESSAGES.test(e.message)) return true;
  return e.cause !== undefined && e.cause !== error && isStateUnavailable(e.cause);
}
