// In-process servers for tests (startServer, so coverage sees the server): a command agent by
// default, the JSON log lines and warnings collected, every server stopped after each test.
import { afterEach } from 'vitest';
import { defaultConfig } from '../../src/config/load.js';
import type { Config } from '../../src/config/schema.js';
import type { RunningServer } from '../../src/server/server.js';
import { startServer } from '../../src/server/server.js';
import { ATLAS_BIN } from './core-fixtures.js';
import { STREAM_AGENT } from './server-fixtures.js';

export function agentConfig(change: (c: Config) => void = () => undefined): Config {
  const c = defaultConfig();
  c.ai.agent = 'command';
  c.ai.command = `${process.execPath} ${STREAM_AGENT}`;
  change(c);
  return c;
}

/** Starts servers in this process; each is stopped after the test. */
export function inProcessServers() {
  const running: RunningServer[] = [];
  afterEach(async () => {
    for (const s of running.splice(0)) await s.stop('test over');
  });
  /** `atlasCommand`: how the server runs atlas for tasks (the built CLI unless given). */
  return async (home: string, config: Config = agentConfig(), atlasCommand = { command: process.execPath, args: [ATLAS_BIN] }) => {
    const lines: string[] = [];
    const warnings: string[] = [];
    const server = await startServer({
      home,
      config,
      host: '127.0.0.1',
      port: 0,
      local: true,
      recover: false,
      version: 'test',
      atlasCommand,
      write: (l) => lines.push(l),
      warn: (w) => warnings.push(w),
    });
    running.push(server);
    return { server, url: server.url, lines, warnings, release: () => running.splice(running.indexOf(server), 1) };
  };
}
