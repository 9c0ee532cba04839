// Which connections the server keeps (issue 37). One address may hold a quarter of
// server.max_connections, and at most a sixteenth of it in connections that have not yet carried
// an authenticated request: past that, its oldest idle ones go first (older than GRACE_MS, so a
// burst of fresh connections that have not sent their first request yet is left alone). A client
// flooding idle sockets thus evicts only its own, and other addresses are served. Past an address's
// share or the whole pool, a connection is still let in for the probes alone (PROBE_RESERVE of
// them, the oldest idle one making room for a new one): /health, /ready and /metrics answer there,
// anything else gets 503 and the connection closes. An orchestrator's probe is answered however
// full the pool is.
import type { ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import { HttpError } from './http.js';

/** Connections beyond the caps that may still ask a probe. */
export const PROBE_RESERVE = 16;
/** A connection this young is never evicted: its first request may be on its way. */
const GRACE_MS = 1_000;
const PROBES = new Set(['/health', '/ready', '/metrics']);
/** The routes anyone may call, probes and the API's description. */
export const PUBLIC_PATHS = new Set([...PROBES, '/openapi.json']);

/** The answer to a request other than a probe on a connection let in for probes alone: 503, and it closes. */
export function tooManyConnections(res: ServerResponse, info: { code: string | undefined }): HttpError {
  info.code = 'too_many_connections';
  res.setHeader('connection', 'close');
  return new HttpError(
    503,
    'too_many_connections',
    'this address holds too many connections (or the server is full): only /health, /ready and /metrics are answered on this one; close idle connections and retry',
    { retryAfter: 1 },
  );
}

interface Held {
  address: string;
  since: number;
  authenticated: boolean;
  /** Requests under way on it: a busy connection is never evicted. */
  busy: number;
  probeOnly: boolean;
}

export interface AdmissionLimits {
  total: number;
  perAddress: number;
  unauthenticatedPerAddress: number;
}

/** The caps server.max_connections implies. */
export function admissionLimits(maxConnections: number): AdmissionLimits {
  return {
    total: maxConnections,
    perAddress: Math.max(1, Math.ceil(maxConnections / 4)),
    unauthenticatedPerAddress: Math.max(1, Math.ceil(maxConnections / 16)),
  };
}

export class Admission {
  private readonly held = new Map<Socket, Held>();
  /** Per address, its connections oldest first. */
  private readonly byAddress = new Map<string, Set<Socket>>();
  private probeOnly = 0;
  /** Connections closed to make room, and refused (for the log and the tests). */
  evicted = 0;
  refused = 0;

  constructor(
    private readonly limits: AdmissionLimits,
    private readonly now: () => number = () => performance.now(),
  ) {}

  /** A new connection: kept (perhaps for probes alone), or destroyed. */
  admit(socket: Socket): void {
    const address = socket.remoteAddress ?? '';
    const mine = this.byAddress.get(address) ?? new Set<Socket>();
    const counted = (h: Held) => !h.probeOnly;
    const unauthenticated = (h: Held) => !h.probeOnly && !h.authenticated;
    if (this.count(mine, unauthenticated) >= this.limits.unauthenticatedPerAddress) this.evictOldest(mine, unauthenticated);
    let probeOnly =
      this.count(mine, counted) >= this.limits.perAddress &&
      !this.evictOldest(mine, (h) => counted(h) && !h.authenticated) &&
      !this.evictOldest(mine, counted);
    if (!probeOnly && this.held.size - this.probeOnly >= this.limits.total)
      probeOnly = !this.evictOldest(this.held.keys(), unauthenticated);
    if (probeOnly && this.probeOnly >= PROBE_RESERVE && !this.evictOldest(this.held.keys(), (h) => h.probeOnly, 0)) {
      this.refused++;
      socket.destroy();
      return;
    }
    this.held.set(socket, { address, since: this.now(), authenticated: false, busy: 0, probeOnly });
    if (probeOnly) this.probeOnly++;
    mine.add(socket);
    this.byAddress.set(address, mine);
    socket.once('close', () => this.forget(socket));
  }

  /**
   * A request on a kept connection: false when the connection is there for probes alone and this
   * is not one (the caller answers 503 and closes it).
   */
  begin(socket: Socket, pathname: string): boolean {
    const h = this.held.get(socket);
    if (!h) return true;
    h.busy++;
    return !h.probeOnly || PROBES.has(pathname);
  }

  end(socket: Socket): void {
    const h = this.held.get(socket);
    if (h && h.busy > 0) h.busy--;
  }

  /** The connection carried a request with a valid token: it counts against the larger cap. */
  authenticated(socket: Socket): void {
    const h = this.held.get(socket);
    if (h) h.authenticated = true;
  }

  private count(sockets: Set<Socket>, which: (h: Held) => boolean): number {
    let n = 0;
    for (const s of sockets) if (which(this.held.get(s)!)) n++;
    return n;
  }

  /** Destroys the oldest idle connection of these that `which` picks, older than `minAge` ms. */
  private evictOldest(sockets: Iterable<Socket>, which: (h: Held) => boolean, minAge = GRACE_MS): boolean {
    const before = this.now() - minAge;
    for (const s of sockets) {
      const h = this.held.get(s)!;
      if (h.busy > 0 || h.since > before || !which(h)) continue;
      this.forget(s);
      s.destroy();
      this.evicted++;
      return true;
    }
    return false;
  }

  private forget(socket: Socket): void {
    const h = this.held.get(socket);
    if (!h) return;
    this.held.delete(socket);
    if (h.probeOnly) this.probeOnly--;
    const mine = this.byAddress.get(h.address);
    mine?.delete(socket);
    if (mine?.size === 0) this.byAddress.delete(h.address);
  }
}
