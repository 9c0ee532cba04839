// A bounded HTTP server on this host's 127.0.0.1, for the sandbox's network tests: every request
// gets `body`; close() ends its connections and stops it.
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface HostServer {
  port: number;
  close(): Promise<void>;
}

export async function startHostServer(body: string): Promise<HostServer> {
  const server = createServer((_req, res) => res.end(body));
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  return {
    port: (server.address() as AddressInfo).port,
    close: async () => {
      server.closeAllConnections();
      await new Promise<void>((r) => server.close(() => r()));
    },
  };
}
